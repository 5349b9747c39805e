"""The outbox relay: the table's stream to EventBridge, SNS or SQS (a Lambda publisher, or EventBridge Pipes)."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
from retrysafe import names

from constructs import Construct

from ._props import refuse_ignored, struct_values
from ._sources import delivery_failures_alarm, metric_destination_delivery_failures
from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction, python_function, with_defaults
from .layer import runtime_layer
from .nag import acknowledge
from .table import IdempotencyTable
from .targets import OutboxTarget

_MAX_RECORD_AGE = Duration.hours(24)
_SWEEP_EVERY = Duration.minutes(5)
_SWEEP_AFTER = Duration.seconds(900)
#: Entries per call an event bus, SNS or SQS target takes from a pipe.
_PIPE_MAX_BATCH = 10
#: Outbox INSERTs only: updates (marking published) and TTL removals are ignored.
_STREAM_FILTER = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {names.KIND_ATTRIBUTE: {"S": [names.OUTBOX_KIND]}}}}


def _runtime_only() -> lambda_.Code:
    """Function code for handlers that live entirely in the runtime layer (/opt/python)."""
    return lambda_.Code.from_inline("# The handler is in the retrysafe runtime layer (/opt/python).\n")


def _validate(scope: Construct, max_record_age: Duration, retry_attempts: int) -> None:
    age = int(max_record_age.to_seconds())
    if not 60 <= age <= int(_MAX_RECORD_AGE.to_seconds()):
        raise ValueError(f"{scope.node.path}: max_record_age must be 60 s..24 h (stream records live 24 h; "
                         f"older ones go to the on-failure queue and the sweeper), got {age}s.")
    if not 0 <= retry_attempts <= 10_000:
        raise ValueError(f"{scope.node.path}: retry_attempts must be 0..10000 (bounded), got {retry_attempts}.")


def _failure_queue(scope: Construct, existing: sqs.IQueue | None, props: sqs.QueueProps | None) -> sqs.IQueue:
    refuse_ignored(scope, "existing_failure_queue", existing, {"failure_queue_props": props}, "set them on that queue")
    if existing is not None:
        return existing
    queue = sqs.Queue(scope, "FailureQueue", **{"retention_period": Duration.days(14),
                                                 "encryption": sqs.QueueEncryption.SQS_MANAGED, "enforce_ssl": True,
                                                 **struct_values(props)})
    acknowledge(queue, "AwsSolutions-SQS3",
                "This queue is itself the on-failure destination (dead letters of the stream relay).")
    return queue


def _depth_alarm(scope: Construct, queue: sqs.IQueue, options: AlarmOptions) -> cloudwatch.Alarm:
    return add_alarm(scope, "FailureQueueAlarm", queue.metric_approximate_number_of_messages_visible(
        statistic="Maximum"), threshold=1, options=options,
        description=f"{scope.node.path}: outbox events failed to publish (in the failure queue)")


class Outbox(Construct):
    """Publishes outbox events: stream -> publisher Lambda -> target, plus a scheduled sweeper.

    The publisher may only update outbox items and read the stream; the sweeper may only query the
    ``outbox-unpublished`` index and update items.

    :param table: the :class:`IdempotencyTable` (required; its NEW_IMAGE stream is enabled; one relay per table).
    :param target: an :class:`OutboxTarget` (required): bus, topic or queue.
    :param batch_size: stream records per invocation. @default 100.
    :param retry_attempts: retries of a failing batch (bisected), then the on-failure queue. @default 5.
    :param max_record_age: @default 24 h (at most 24 h: the stream's retention).
    :param existing_failure_queue: the on-failure destination. @default a new queue (``failure_queue_props``).
    :param failure_queue_props: the created failure queue's ``sqs.QueueProps``. @default retention 14 days,
        SSE-SQS, TLS only. Refused with ``existing_failure_queue``.
    :param sweep_every: @default 5 minutes.
    :param sweep_after: unpublished events older than this are re-published by the sweeper. @default 900 s.
    :param alarms: @default True (``PublisherErrorsAlarm``, ``IteratorAgeAlarm`` > 5 min, ``FailureQueueAlarm``
        depth >= 1, ``ParkedEventsAlarm``: ``OutboxEventParked`` >= 1, an event the target refuses permanently;
        see ``retrysafe outbox parked``; ``DestinationDeliveryFailuresAlarm``: the publisher's
        ``DestinationDeliveryFailures`` >= 1, a failed batch Lambda could not put in the failure queue); False
        for none, or :class:`AlarmOptions` for actions and turning single alarms off.
    :param function_props: ``lambda_.FunctionOptions`` for the publisher and the sweeper (``memory_size``,
        ``vpc``, ``tracing``...). @default as :class:`IdempotentFunction`, with timeouts of 60 s (publisher)
        and 2 minutes (sweeper).
    :param existing_publisher_log_group: a log group for the publisher. @default a new one
        (``publisher_log_group_props``).
    :param publisher_log_group_props: the publisher's created log group's ``logs.LogGroupProps``. @default
        retention one month, ``DESTROY``. Refused with ``existing_publisher_log_group``.
    :param existing_sweeper_log_group: a log group for the sweeper. @default a new one
        (``sweeper_log_group_props``).
    :param sweeper_log_group_props: the sweeper's created log group's ``logs.LogGroupProps``. @default
        retention one month, ``DESTROY``. Refused with ``existing_sweeper_log_group``.
    :param powertools_layer: as :class:`IdempotentFunction`. @default none.
    :param snap_start: as :class:`IdempotentFunction`; the stream mapping and the schedule then invoke the
        aliases. @default False.

    Attributes: ``table``, ``publisher``, ``sweeper``, ``failure_queue``, ``event_source``, ``schedule``, ``alarms``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, target: OutboxTarget,
                 batch_size: int = 100, retry_attempts: int = 5, max_record_age: Duration = _MAX_RECORD_AGE,
                 existing_failure_queue: sqs.IQueue | None = None, failure_queue_props: sqs.QueueProps | None = None,
                 sweep_every: Duration = _SWEEP_EVERY, sweep_after: Duration = _SWEEP_AFTER,
                 alarms: bool | AlarmOptions = True, function_props: lambda_.FunctionOptions | None = None,
                 powertools_layer: lambda_.ILayerVersion | None = None, snap_start: bool = False,
                 existing_publisher_log_group: logs.ILogGroup | None = None,
                 publisher_log_group_props: logs.LogGroupProps | None = None,
                 existing_sweeper_log_group: logs.ILogGroup | None = None,
                 sweeper_log_group_props: logs.LogGroupProps | None = None) -> None:
        super().__init__(scope, construct_id)
        _validate(self, max_record_age, retry_attempts)
        # Refused here, under these props' own names (IdempotentFunction would name its own).
        refuse_ignored(self, "existing_publisher_log_group", existing_publisher_log_group,
                       {"publisher_log_group_props": publisher_log_group_props},
                       "set retention and removal policy on that log group")
        refuse_ignored(self, "existing_sweeper_log_group", existing_sweeper_log_group,
                       {"sweeper_log_group_props": sweeper_log_group_props},
                       "set retention and removal policy on that log group")
        self.table = table
        env = target.environment()
        self.failure_queue = _failure_queue(self, existing_failure_queue, failure_queue_props)
        self.publisher = IdempotentFunction(
            self, "Publisher", table=table, code=_runtime_only(), handler=names.OUTBOX_PUBLISHER_HANDLER,
            powertools_layer=powertools_layer, snap_start=snap_start, record_actions=("dynamodb:UpdateItem",),
            existing_log_group=existing_publisher_log_group, log_group_props=publisher_log_group_props,
            function_props=with_defaults({"environment": env, "timeout": Duration.seconds(60),
                                          "description": "retrysafe outbox publisher"}, function_props))
        table.grant_stream_read(self.publisher.role)
        target.grant_publish(self.publisher.role)
        self.event_source = lambda_.EventSourceMapping(
            self, "StreamMapping", target=self.publisher.invoke_target, event_source_arn=table.enable_stream(),
            starting_position=lambda_.StartingPosition.TRIM_HORIZON, batch_size=batch_size,
            bisect_batch_on_error=True, retry_attempts=retry_attempts, max_record_age=max_record_age,
            report_batch_item_failures=True, on_failure=sources.SqsDlq(self.failure_queue),
            filters=[{"pattern": json.dumps(_STREAM_FILTER)}],
        )
        self.sweeper = IdempotentFunction(
            self, "Sweeper", table=table, code=_runtime_only(), handler=names.OUTBOX_SWEEPER_HANDLER,
            powertools_layer=powertools_layer, snap_start=snap_start, record_actions=(),
            existing_log_group=existing_sweeper_log_group, log_group_props=sweeper_log_group_props,
            function_props=with_defaults({"environment": {**env, names.SWEEP_AFTER_ENV: str(int(sweep_after.to_seconds()))},
                                          "timeout": Duration.minutes(2), "description": "retrysafe outbox sweeper"},
                                         function_props))
        table.grant_sweep(self.sweeper.role)
        target.grant_publish(self.sweeper.role)
        self.schedule = events.Rule(self, "SweepSchedule", schedule=events.Schedule.rate(sweep_every),
                                    targets=[events_targets.LambdaFunction(self.sweeper.invoke_target)])
        table.add_relay(self, target)
        self.alarms = self._alarms(AlarmOptions.of(alarms))

    def metric_publisher_errors(self, **options: Any) -> cloudwatch.Metric:
        """Publisher invocation errors (sum per 5 minutes; ``options``: ``MetricOptions`` fields)."""
        return self.publisher.function.metric_errors(**{"statistic": "Sum", **options})

    def metric_iterator_age(self, **options: Any) -> cloudwatch.Metric:
        """How far the publisher lags behind the stream (maximum, milliseconds)."""
        return self.publisher.function.metric("IteratorAge", **{"statistic": "Maximum", **options})

    def metric_parked_events(self, **options: Any) -> cloudwatch.Metric:
        """``OutboxEventParked``: events the target refused permanently (too large, malformed), set aside."""
        return self.table.metric_parked_events(**options)

    def metric_destination_delivery_failures(self, **options: Any) -> cloudwatch.Metric:
        """The publisher's ``DestinationDeliveryFailures``: failed batches Lambda could not put in the failure queue."""
        return metric_destination_delivery_failures(self.publisher, **options)

    def _alarms(self, options: AlarmOptions) -> list[cloudwatch.Alarm]:
        made = []
        if options.wants("PublisherErrorsAlarm"):
            made.append(add_alarm(self, "PublisherErrorsAlarm", self.metric_publisher_errors(), threshold=1,
                                  options=options, description=f"{self.node.path}: outbox publisher errors"))
        if options.wants("IteratorAgeAlarm"):
            made.append(add_alarm(self, "IteratorAgeAlarm", self.metric_iterator_age(), threshold=300_000,
                                  evaluation_periods=3, options=options,
                                  description=f"{self.node.path}: publisher > 5 min behind the stream"))
        if options.wants("FailureQueueAlarm"):
            made.append(_depth_alarm(self, self.failure_queue, options))
        if options.wants("ParkedEventsAlarm"):
            made.append(add_alarm(self, "ParkedEventsAlarm", self.metric_parked_events(), threshold=1, options=options,
                                  description=f"{self.node.path}: outbox events parked (refused permanently by "
                                  "the target); fix, then republish with retrysafe outbox parked"))
        lost = delivery_failures_alarm(self, self.publisher, options, "Lambda could not put a failed batch's "
                                       "metadata in the failure queue (the sweeper still republishes its events)")
        return made + ([lost] if lost is not None else [])


class OutboxPipe(Construct):
    """The relay as an EventBridge Pipe from the table's stream to the target.

    Filters outbox INSERTs, bisects failing batches, retries a bounded number of times and
    dead-letters the rest. An enrichment function from the runtime layer
    (``retrysafe.outbox.pipe.handler``) turns each batch of stream records into the Lambda
    publisher's envelopes, so consumers, rules and fingerprints see the same event whichever relay
    publishes it (a Pipes input template cannot turn the payload's JSON text into an object).
    Pipes does not mark events published, so there is no sweeper: replay the failure queue instead.
    Consumers dedupe on the event id (``event_id``).

    :param table: the :class:`IdempotencyTable` (required; one relay per table).
    :param target: an :class:`OutboxTarget` (required; not a FIFO SNS topic, which Pipes cannot target).
    :param batch_size: @default 10 (at most 10).
    :param retry_attempts: @default 5.
    :param max_record_age: @default 24 h (at most 24 h).
    :param existing_failure_queue: the dead-letter destination. @default a new queue (``failure_queue_props``).
    :param failure_queue_props: the created failure queue's ``sqs.QueueProps``. @default as :class:`Outbox`'s
        (retention 14 days, SSE-SQS, TLS only). Refused with ``existing_failure_queue``.
    :param message_group_id: FIFO SQS targets: a JSON path into the envelope. @default ``$.aggregate_id``
        (the deduplication id is ``$.event_id``).
    :param alarms: @default True (failure queue depth, id ``FailureQueueAlarm``); False or :class:`AlarmOptions`.
    :param enrichment_function_props: ``lambda_.FunctionOptions`` of the enrichment function (memory, VPC,
        tracing, reserved concurrency...). @default timeout 30 s, otherwise as :class:`IdempotentFunction`.
    :param enrichment_log_group_props: its log group's ``logs.LogGroupProps``. @default one month, ``DESTROY``.

    Attributes: ``pipe``, ``role``, ``enrichment`` (the function), ``failure_queue``, ``alarms``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, target: OutboxTarget,
                 batch_size: int = 10, retry_attempts: int = 5, max_record_age: Duration = _MAX_RECORD_AGE,
                 existing_failure_queue: sqs.IQueue | None = None, failure_queue_props: sqs.QueueProps | None = None,
                 message_group_id: str | None = None, alarms: bool | AlarmOptions = True,
                 enrichment_function_props: lambda_.FunctionOptions | None = None,
                 enrichment_log_group_props: logs.LogGroupProps | None = None) -> None:
        super().__init__(scope, construct_id)
        _validate(self, max_record_age, retry_attempts)
        if not 1 <= batch_size <= _PIPE_MAX_BATCH:
            raise ValueError(f"{self.node.path}: batch_size must be 1..{_PIPE_MAX_BATCH} (the most an event bus, "
                             f"topic or queue target takes per call), got {batch_size}.")
        sqs_parameters = self._check_target(target, message_group_id)
        stream_arn = table.enable_stream()
        self.failure_queue = _failure_queue(self, existing_failure_queue, failure_queue_props)
        self.enrichment, _, _ = python_function(
            Construct(self, "Enrichment"), code=_runtime_only(), handler=names.OUTBOX_PIPE_HANDLER,
            layers=[runtime_layer(self)], log_group_props=enrichment_log_group_props,
            function_props=with_defaults({"timeout": Duration.seconds(30), "description":
                                          "retrysafe outbox pipe enrichment: stream records to envelopes"},
                                         enrichment_function_props))
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"),
                             description=f"{self.node.path}: read the outbox stream, publish, dead-letter")
        table.grant_stream_read(self.role)
        target.grant_publish(self.role)
        self.failure_queue.grant_send_messages(self.role)
        iam.Grant.add_to_principal(grantee=self.role, actions=["lambda:InvokeFunction"],  # this function only
                                   resource_arns=[self.enrichment.function_arn])
        bus = None
        if target.bus is not None:
            bus = pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                source=target.event_source, detail_type="$.event_type")
        self.pipe = pipes.CfnPipe(
            self, "Pipe", role_arn=self.role.role_arn, source=stream_arn, target=target.arn,
            enrichment=self.enrichment.function_arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[pipes.CfnPipe.FilterProperty(pattern=json.dumps(_STREAM_FILTER))]),
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position="TRIM_HORIZON", batch_size=batch_size, maximum_retry_attempts=retry_attempts,
                    maximum_record_age_in_seconds=int(max_record_age.to_seconds()),
                    on_partial_batch_item_failure="AUTOMATIC_BISECT",
                    dead_letter_config=pipes.CfnPipe.DeadLetterConfigProperty(arn=self.failure_queue.queue_arn)),
            ),
            target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
                event_bridge_event_bus_parameters=bus, sqs_queue_parameters=sqs_parameters),
        )
        self.pipe.node.add_dependency(self.role)
        table.add_relay(self, target)
        options = AlarmOptions.of(alarms)
        self.alarms = [_depth_alarm(self, self.failure_queue, options)] if options.wants("FailureQueueAlarm") else []

    def _check_target(self, target: OutboxTarget,
                      message_group_id: str | None) -> pipes.CfnPipe.PipeTargetSqsQueueParametersProperty | None:
        if target.sns_topic is not None and target.sns_topic.fifo:
            raise ValueError(f"{self.node.path}: EventBridge Pipes cannot publish to a FIFO SNS topic "
                             f"({target.sns_topic.node.path}). Use Outbox (the Lambda publisher sets "
                             "MessageGroupId and MessageDeduplicationId) or a standard topic.")
        if target.sqs_queue is None or not target.sqs_queue.fifo:
            if message_group_id is not None:
                raise ValueError(f"{self.node.path}: message_group_id only applies to a FIFO SQS target.")
            return None
        return pipes.CfnPipe.PipeTargetSqsQueueParametersProperty(
            message_group_id=message_group_id or "$.aggregate_id", message_deduplication_id="$.event_id")
