"""``IdempotentTopicSubscription``: an idempotent function subscribed to an SNS topic, with a DLQ."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Annotations, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs

from constructs import Construct

from ._props import pin_logical_id, refuse_ignored, struct_values
from ._sources import (
    add_redelivery,
    configure_async,
    dead_letter_queue,
    delivery_failures_alarm,
    depth_alarm,
    metric_depth,
    metric_destination_delivery_failures,
)
from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction
from .horizon import LAMBDA_ASYNC_MAX_EVENT_AGE, SNS_LAMBDA_DELIVERY_SECONDS, async_redelivery
from .nag import acknowledge
from .targets import OutboxTarget


class IdempotentTopicSubscription(Construct):
    """An :class:`IdempotentFunction` subscribed to an SNS topic (new or existing); nothing lost on failure.

    SNS invokes Lambda asynchronously. Its delivery policy for Lambda is fixed (100,015 attempts
    over about 23 days, :data:`~retrysafe_cdk.horizon.SNS_LAMBDA_DELIVERY_SECONDS`); then Lambda's
    asynchronous queue retries the function for up to ``async_max_event_age``. Whatever fails ends
    in one dead-letter queue: messages SNS could not deliver (the subscription's redrive policy;
    the body is the SNS message) and invocations that failed every attempt (a Lambda invocation
    record: the event is its ``requestPayload``). Their sum, plus the DLQ's retention (an operator
    redrives it), is this subscription's part of the table's :class:`RetryHorizon`: about 37 days
    with the defaults.

    :param function: the subscriber; its handler uses ``retrysafe.idempotent``. Required.
    :param existing_topic: a topic of your own (a standard topic: FIFO topics cannot deliver to
        Lambda). @default a new topic ``Topic`` from ``topic_props``.
    :param topic_props: ``sns.TopicProps`` of the new topic. @default TLS only, encrypted with a new
        KMS key ``TopicKey`` (rotation on). Refused with ``existing_topic``.
    :param topic_logical_id: pin the new topic's logical id (moving or renaming this construct then
        keeps the topic, its ARN and its other subscriptions). @default derived from the construct
        path. Refused with ``existing_topic``.
    :param existing_dead_letter_queue: a queue of your own (same account and region as the
        subscription). @default a new queue ``DeadLetterQueue`` from ``dead_letter_queue_props``.
    :param dead_letter_queue_props: ``sqs.QueueProps`` of the new queue. @default SQS-managed
        encryption, TLS only, 14 days' retention. Refused with ``existing_dead_letter_queue``.
    :param dead_letter_queue_logical_id: pin the new queue's logical id. @default derived from the
        construct path. Refused with ``existing_dead_letter_queue``.
    :param subscriber: the subscriber the function's records are scoped by, as for
        :class:`IdempotentEventRule`. @default the function's subscriber when another rule or
        subscription already gave it one, else this construct's path below its stack.
    :param filter_policy: ``{attribute: sns.SubscriptionFilter}``. @default every message.
    :param async_max_event_age: how long Lambda keeps retrying the invocation, 60 s..6 h.
        @default 6 hours.
    :param async_retry_attempts: Lambda's retries of a failed invocation, 0..2. @default 2.
    :param alarms: ``True``, ``False`` or :class:`AlarmOptions`. @default True: ``DlqDepthAlarm``
        (DLQ depth >= 1), ``DlqSendFailedAlarm`` (the topic's ``NumberOfNotificationsFailedToRedriveToDlq``
        >= 1: messages lost; not created, with a warning, for a topic of another account or region, where
        SNS publishes that metric) and ``DestinationDeliveryFailuresAlarm`` (the function's
        ``DestinationDeliveryFailures`` >= 1: Lambda could not put a failed invocation's record in the DLQ).

    Attributes: ``topic``, ``dead_letter_queue``, ``subscription``, ``redelivery_seconds``, ``subscriber``,
    ``dlq_alarm``, ``lost_alarm`` (None for a topic of another account or region),
    ``delivery_failures_alarm``.
    The function's asynchronous invocation settings are its (or its SnapStart alias's)
    ``EventInvokeConfig``, and a function has one: further rules or subscriptions of the same
    function must pass the same ``async_*`` settings and the first one's ``dead_letter_queue`` as
    ``existing_dead_letter_queue`` (anything else is refused).
    """

    def __init__(self, scope: Construct, construct_id: str, *, function: IdempotentFunction,
                 existing_topic: sns.ITopic | None = None, topic_props: sns.TopicProps | None = None,
                 existing_dead_letter_queue: sqs.IQueue | None = None,
                 dead_letter_queue_props: sqs.QueueProps | None = None,
                 filter_policy: Mapping[str, sns.SubscriptionFilter] | None = None,
                 async_max_event_age: Duration = LAMBDA_ASYNC_MAX_EVENT_AGE, async_retry_attempts: int = 2,
                 topic_logical_id: str | None = None, dead_letter_queue_logical_id: str | None = None,
                 subscriber: str | None = None, alarms: bool | AlarmOptions = True) -> None:
        super().__init__(scope, construct_id)
        refuse_ignored(self, "existing_topic", existing_topic,
                       {"topic_props": topic_props, "topic_logical_id": topic_logical_id},
                       "set them on that topic")
        refuse_ignored(self, "existing_dead_letter_queue", existing_dead_letter_queue,
                       {"dead_letter_queue_props": dead_letter_queue_props,
                        "dead_letter_queue_logical_id": dead_letter_queue_logical_id}, "set them on that queue")
        self.topic = existing_topic or self._new_topic(topic_props, topic_logical_id)
        if self.topic.fifo:
            raise ValueError(f"{self.node.path}: {self.topic.node.path} is a FIFO topic, and SNS FIFO topics "
                             "deliver only to SQS queues. Subscribe a FIFO queue to it and consume that with "
                             "IdempotentQueueConsumer, or use a standard topic.")
        self.dead_letter_queue, dlq_retention = dead_letter_queue(
            self, "DeadLetterQueue", existing_dead_letter_queue, dead_letter_queue_props, dead_letter_queue_logical_id,
            "messages SNS could not deliver and invocations that failed every attempt")
        self.redelivery_seconds = async_redelivery(Duration.seconds(SNS_LAMBDA_DELIVERY_SECONDS), async_max_event_age,
                                                   dlq_retention)
        add_redelivery(
            self, function, self.redelivery_seconds,
            f"SNS's delivery retries to Lambda ({SNS_LAMBDA_DELIVERY_SECONDS}s, fixed) + Lambda's async_max_event_age "
            f"({int(async_max_event_age.to_seconds())}s) + the dead-letter queue's retention "
            f"({int(dlq_retention.to_seconds())}s)",
            "shorten async_max_event_age or the dead-letter queue's retention_period")
        configure_async(self, function, self.dead_letter_queue, async_max_event_age, async_retry_attempts)
        self.subscriber = function.bind_subscriber(self, subscriber)
        self.subscription = subscriptions.LambdaSubscription(
            function.invoke_target, dead_letter_queue=self.dead_letter_queue,
            filter_policy=dict(filter_policy) if filter_policy else None)
        subscription = self.topic.add_subscription(self.subscription)
        if function.alias is not None:
            acknowledge(subscription, "CloudFormation-Validate::W3694",
                        "SNS delivers to a qualified function ARN: the SnapStart alias, which must be invoked.")
        options = AlarmOptions.of(alarms)
        self.dlq_alarm = depth_alarm(self, "DlqDepthAlarm", self.dead_letter_queue, options,
                                     "messages in the dead-letter queue (undelivered, or failed every attempt)")
        elsewhere = self._topic_elsewhere() if options.wants("DlqSendFailedAlarm") else None
        if elsewhere is not None:
            Annotations.of(self).add_warning_v2("retrysafe:DlqSendFailedAlarmElsewhere", (
                f"{self.node.path}: no DlqSendFailedAlarm: the topic {self.topic.node.path} is in {elsewhere}, and "
                "SNS publishes NumberOfNotificationsFailedToRedriveToDlq only in the topic's account and region, "
                "so an alarm here could never fire. Fix: alarm on that metric of the topic in its own account "
                "and region, or pass alarms=AlarmOptions(disabled={'DlqSendFailedAlarm'}) to silence this."))
        self.lost_alarm = add_alarm(
            self, "DlqSendFailedAlarm", self.metric_dlq_send_failures(), threshold=1, options=options,
            description=f"{self.node.path}: messages lost, the dead-letter queue refused them",
        ) if options.wants("DlqSendFailedAlarm") and elsewhere is None else None
        self._function = function
        self.delivery_failures_alarm = delivery_failures_alarm(
            self, function, options, "failed invocations lost, Lambda could not put them in the dead-letter queue")

    def _topic_elsewhere(self) -> str | None:
        """The topic's other account or region (``"account 1111..., region ..."``), None if the same or unknown.

        What synthesis cannot read (a token: an environment-agnostic stack, an imported ARN that is a
        token) counts as the same, so the alarm is kept. ``Token.compare_strings`` says the same, but
        its jsii result cannot be compared in Python (each call returns a new proxy object).
        """
        stack = Stack.of(self)
        differs = [f"{what} {theirs} (this stack: {ours})"
                   for what, theirs, ours in (("account", self.topic.env.account, stack.account),
                                              ("region", self.topic.env.region, stack.region))
                   if not Token.is_unresolved(theirs) and not Token.is_unresolved(ours) and theirs != ours]
        return ", ".join(differs) if differs else None

    def _new_topic(self, props: sns.TopicProps | None, logical_id: str | None) -> sns.Topic:
        settings = struct_values(props)
        if "master_key" not in settings:
            settings["master_key"] = kms.Key(self, "TopicKey", enable_key_rotation=True,
                                             description=f"{self.node.path}: the topic's messages at rest")
        topic = sns.Topic(self, "Topic", **{"enforce_ssl": True, **settings})
        pin_logical_id(topic, logical_id)
        return topic

    def grant_publish(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` publish to the topic, and use its KMS key (``kms:GenerateDataKey``, ``kms:Decrypt``).

        Exact actions, as the outbox's grants (``Topic.grant_publish`` grants ``kms:GenerateDataKey*``,
        which cdk-nag's AwsSolutions-IAM5 refuses on the publisher's role).
        """
        return OutboxTarget.topic(self.topic).grant_publish(grantee)

    def metric_dlq_send_failures(self, **options: Any) -> cloudwatch.Metric:
        """``NumberOfNotificationsFailedToRedriveToDlq`` of the topic (every subscription of it; sum per 5 minutes)."""
        return self.topic.metric("NumberOfNotificationsFailedToRedriveToDlq",
                                 **{"statistic": "Sum", "period": Duration.minutes(5), **options})

    def metric_dlq_depth(self, **options: Any) -> cloudwatch.Metric:
        """Messages waiting in the DLQ (maximum per 5 minutes; ``options``: ``MetricOptions`` fields)."""
        return metric_depth(self.dead_letter_queue, **options)

    def metric_destination_delivery_failures(self, **options: Any) -> cloudwatch.Metric:
        """The function's ``DestinationDeliveryFailures``: failed invocations Lambda could not put in the DLQ."""
        return metric_destination_delivery_failures(self._function, **options)
