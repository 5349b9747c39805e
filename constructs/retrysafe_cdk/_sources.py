"""What the event source constructs share: dead-letter queues, Lambda's asynchronous invocation settings
and their part of the retry horizon. Their ``existing_<x>``/``<x>_props`` refusal is the one of ``_props``."""

from __future__ import annotations

import math
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs

from constructs import Construct

from ._props import pin_logical_id, struct_values
from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction
from .horizon import LAMBDA_ASYNC_MAX_EVENT_AGE
from .nag import acknowledge
from .queue import DLQ_RETENTION, SQS_DEFAULT_RETENTION

#: Lambda's asynchronous invocation limits (``AWS::Lambda::EventInvokeConfig``).
_ASYNC_MAX_RETRIES = 2
_ASYNC_MIN_EVENT_AGE = 60


def queue_retention(queue: sqs.IQueue) -> Duration:
    """A queue's retention: its own setting, SQS's default (4 days) when it sets none, 14 days (the most) if imported."""
    cfn = queue.node.default_child
    if not isinstance(cfn, sqs.CfnQueue):
        return DLQ_RETENTION
    if cfn.message_retention_period is None:
        return SQS_DEFAULT_RETENTION
    return Duration.seconds(math.ceil(float(str(cfn.message_retention_period))))


def dead_letter_queue(owner: Construct, construct_id: str, existing: sqs.IQueue | None,
                      props: sqs.QueueProps | None, logical_id: str | None, purpose: str) -> tuple[sqs.IQueue, Duration]:
    """``existing``, or a new SQS-managed-encrypted, TLS-only queue kept 14 days (``props`` override, its logical id
    pinned to ``logical_id`` when given); with its retention."""
    if existing is not None:
        if existing.fifo:
            raise ValueError(f"{owner.node.path}: {existing.node.path} is a FIFO queue; a dead-letter queue or "
                             "failure destination here must be a standard queue (Lambda's destinations, EventBridge "
                             "and SNS standard subscriptions send only to standard queues).")
        if isinstance(existing.node.default_child, sqs.CfnQueue):  # a queue of this app: cdk-nag checks it
            acknowledge(existing, "AwsSolutions-SQS3", f"This queue is itself a dead-letter queue ({purpose}).")
        return existing, queue_retention(existing)
    if struct_values(props).get("fifo"):
        raise ValueError(f"{owner.node.path}: a dead-letter queue or failure destination here must be a standard "
                         "queue (Lambda's destinations, EventBridge and SNS standard subscriptions send only to "
                         "standard queues): omit fifo from its props.")
    settings: dict[str, Any] = {"retention_period": DLQ_RETENTION, "encryption": sqs.QueueEncryption.SQS_MANAGED,
                                "enforce_ssl": True, **struct_values(props)}
    queue = sqs.Queue(owner, construct_id, **settings)
    pin_logical_id(queue, logical_id)
    acknowledge(queue, "AwsSolutions-SQS3", f"This queue is itself the dead-letter queue ({purpose}).")
    return queue, settings["retention_period"]


def configure_async(owner: Construct, function: IdempotentFunction, on_failure: sqs.IQueue,
                    max_event_age: Duration, retry_attempts: int) -> None:
    """Lambda's asynchronous invocation settings for ``function``, failures to ``on_failure``.

    Without this an event that fails every attempt is discarded silently after Lambda's retries.
    A function (or alias) has one such configuration: a second asynchronous source must share it
    (same settings, same dead-letter queue) or is refused.
    """
    age = int(max_event_age.to_seconds())
    if not _ASYNC_MIN_EVENT_AGE <= age <= int(LAMBDA_ASYNC_MAX_EVENT_AGE.to_seconds()):
        raise ValueError(f"{owner.node.path}: async_max_event_age must be 60 s..6 h (Lambda keeps an asynchronous "
                         f"invocation at most 6 hours), got {age}s.")
    if not 0 <= retry_attempts <= _ASYNC_MAX_RETRIES:
        raise ValueError(f"{owner.node.path}: async_retry_attempts must be 0..{_ASYNC_MAX_RETRIES} (Lambda's limit for "
                         f"asynchronous invocations), got {retry_attempts}.")
    target: lambda_.IFunction = function.invoke_target
    existing = target.node.try_find_child("EventInvokeConfig")
    if existing is None:
        target.configure_async_invoke(max_event_age=max_event_age, retry_attempts=retry_attempts,
                                      on_failure=destinations.SqsDestination(on_failure))
        return
    # A second rule or subscription on one function: Lambda has one setting per function (or alias).
    cfn: lambda_.CfnEventInvokeConfig = existing.node.default_child  # type: ignore[assignment]
    stack = Stack.of(owner)
    wanted = {"onFailure": {"destination": stack.resolve(on_failure.queue_arn)}}
    if (stack.resolve(cfn.destination_config) != wanted or cfn.maximum_event_age_in_seconds != age
            or cfn.maximum_retry_attempts != retry_attempts):
        raise ValueError(
            f"{owner.node.path}: {function.node.path} already has Lambda's asynchronous invocation settings (from "
            f"another event rule or subscription, or its function_props) (async_max_event_age={cfn.maximum_event_age_in_seconds}s, "
            f"async_retry_attempts={cfn.maximum_retry_attempts}, its dead-letter queue), and a function has one. "
            "Pass the same async_max_event_age and async_retry_attempts, and that construct's dead-letter queue as "
            "existing_dead_letter_queue=..., or give this source its own IdempotentFunction.")


def add_redelivery(owner: Construct, function: IdempotentFunction, seconds: int, breakdown: str, fix: str) -> None:
    """Add ``owner``'s redelivery window to the table's horizon, refusing a ``record_ttl`` it would outlive."""
    table = function.table
    horizon = table.horizon.with_queue(owner.node.path, seconds)
    ttl, total = table.record_ttl_seconds, horizon.total_seconds
    if ttl is not None and ttl < total:
        raise ValueError(
            f"{owner.node.path}: {breakdown} = {seconds}s during which the same event can arrive again, so the "
            f"retry horizon is {total}s ({horizon.describe()}), longer than the record_ttl of {table.node.path} "
            f"({ttl}s): a late redelivery would run twice. Fix: raise record_ttl to at least "
            f"Duration.seconds({total}) or leave it unset (it then follows the horizon), or {fix}.")
    table.add_queue_redelivery(owner.node.path, seconds)


def metric_depth(queue: sqs.IQueue, **options: Any) -> cloudwatch.Metric:
    """Messages waiting in ``queue`` (maximum per 5 minutes)."""
    return queue.metric_approximate_number_of_messages_visible(**{"statistic": "Maximum", **options})


def depth_alarm(owner: Construct, alarm_id: str, queue: sqs.IQueue, options: AlarmOptions,
                what: str) -> cloudwatch.Alarm | None:
    """``alarm_id`` at depth >= 1, unless ``options`` turn it off."""
    if not options.wants(alarm_id):
        return None
    return add_alarm(owner, alarm_id, metric_depth(queue), threshold=1, options=options,
                     description=f"{owner.node.path}: {what}")


def metric_destination_delivery_failures(function: IdempotentFunction, **options: Any) -> cloudwatch.Metric:
    """``DestinationDeliveryFailures`` of ``function`` (``AWS/Lambda``, every version and alias; sum per 5 minutes).

    Lambda could not hand an asynchronous invocation record, or an event source mapping's failed batch, to
    the on-failure destination (permissions, the queue's size limit, a deleted queue): that event is dropped.
    """
    return function.function.metric("DestinationDeliveryFailures",
                                    **{"statistic": "Sum", "period": Duration.minutes(5), **options})


def delivery_failures_alarm(owner: Construct, function: IdempotentFunction, options: AlarmOptions,
                            what: str) -> cloudwatch.Alarm | None:
    """``DestinationDeliveryFailuresAlarm`` (``DestinationDeliveryFailures`` >= 1), unless ``options`` turn it off."""
    if not options.wants("DestinationDeliveryFailuresAlarm"):
        return None
    return add_alarm(owner, "DestinationDeliveryFailuresAlarm", metric_destination_delivery_failures(function),
                     threshold=1, options=options, description=f"{owner.node.path}: {what}")
