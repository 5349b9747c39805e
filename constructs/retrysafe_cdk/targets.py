"""Where outbox events go: exactly one of an EventBridge bus, an SNS topic or an SQS queue."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from retrysafe import names


@dataclass(frozen=True)
class OutboxTarget:
    """One publishing target. Build it with :meth:`event_bus`, :meth:`topic` or :meth:`queue`."""

    bus: events.IEventBus | None = None
    sns_topic: sns.ITopic | None = None
    sqs_queue: sqs.IQueue | None = None
    event_source: str = names.DEFAULT_EVENT_SOURCE
    #: The topic's or queue's ``MaximumMessageSize`` when raised above 256 KiB (at most 1 MiB).
    max_message_bytes: int | None = None

    def __post_init__(self) -> None:
        if sum(t is not None for t in (self.bus, self.sns_topic, self.sqs_queue)) != 1:
            raise ValueError("OutboxTarget needs exactly one target: use OutboxTarget.event_bus(bus), "
                             "OutboxTarget.topic(topic) or OutboxTarget.queue(queue).")
        if self.max_message_bytes is not None and (
                self.bus is not None or not 1024 <= self.max_message_bytes <= names.MAX_MESSAGE_BYTES):
            raise ValueError(f"OutboxTarget: max_message_bytes is for topics and queues, {1024}..{names.MAX_MESSAGE_BYTES} "
                             f"bytes (their MaximumMessageSize), got {self.max_message_bytes}.")

    @classmethod
    def event_bus(cls, bus: events.IEventBus, source: str = names.DEFAULT_EVENT_SOURCE) -> OutboxTarget:
        """Publish to an EventBridge bus with the given ``source``."""
        return cls(bus=bus, event_source=source)

    @classmethod
    def topic(cls, topic: sns.ITopic, max_message_bytes: int | None = None) -> OutboxTarget:
        """Publish to an SNS topic (``max_message_bytes``: its MaximumMessageSize, when raised)."""
        return cls(sns_topic=topic, max_message_bytes=max_message_bytes)

    @classmethod
    def queue(cls, queue: sqs.IQueue, max_message_bytes: int | None = None) -> OutboxTarget:
        """Publish to an SQS queue (``max_message_bytes``: its MaximumMessageSize, when raised)."""
        return cls(sqs_queue=queue, max_message_bytes=max_message_bytes)

    @property
    def kind(self) -> str:
        """``eventbridge``, ``sns`` or ``sqs``."""
        return (names.EVENTBRIDGE_TARGET if self.bus is not None else names.SNS_TARGET if self.sns_topic is not None
                else names.SQS_TARGET)

    def producer_environment(self) -> dict[str, str]:
        """What functions appending events need to size them for this target (``RETRYSAFE_OUTBOX_TARGET``...)."""
        env = {names.OUTBOX_TARGET_ENV: self.kind}
        if self.max_message_bytes is not None:
            env[names.OUTBOX_MAX_MESSAGE_ENV] = str(self.max_message_bytes)
        if self.bus is not None:
            env[names.EVENT_SOURCE_ENV] = self.event_source
        return env

    @property
    def arn(self) -> str:
        """The target's ARN."""
        if self.bus is not None:
            return self.bus.event_bus_arn
        if self.sns_topic is not None:
            return self.sns_topic.topic_arn
        assert self.sqs_queue is not None
        return self.sqs_queue.queue_arn

    def environment(self) -> dict[str, str]:
        """The publisher's and sweeper's target variables (exactly one target), with its size settings."""
        if self.bus is not None:
            # The ARN, not the name: PutEvents with a bare name sends to the same-named bus of the publisher's own
            # account and region, which is the wrong bus for one imported from another account or region.
            target = {names.EVENT_BUS_ENV: self.bus.event_bus_arn}
        elif self.sns_topic is not None:
            target = {names.TOPIC_ENV: self.sns_topic.topic_arn}
        else:
            assert self.sqs_queue is not None
            target = {names.QUEUE_ENV: self.sqs_queue.queue_url}
        return {**target, **self.producer_environment()}

    def grant_publish(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` publish to the target, and use its KMS key if it has one.

        Exact actions only (no ``kms:GenerateDataKey*`` wildcards as the L2 grants use).
        """
        if self.bus is not None:
            return self.bus.grant_put_events_to(grantee)
        if self.sns_topic is not None:
            action, key = "sns:Publish", self.sns_topic.master_key
        else:
            assert self.sqs_queue is not None
            action, key = "sqs:SendMessage", self.sqs_queue.encryption_master_key
        if key is not None:
            iam.Grant.add_to_principal(grantee=grantee, actions=["kms:GenerateDataKey", "kms:Decrypt"],
                                       resource_arns=[key.key_arn])
        return iam.Grant.add_to_principal(grantee=grantee, actions=[action], resource_arns=[self.arn])
