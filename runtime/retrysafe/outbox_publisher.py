"""Outbox publishing: the DynamoDB Streams publisher, and the code it shares with the sweeper.

``handler`` receives the idempotency table's stream. Only INSERTs of outbox
items are published; MODIFY and REMOVE records (TTL deletions among them,
``userIdentity`` ``Service``/``dynamodb.amazonaws.com``) are ignored. Each
event goes to exactly one target, chosen by the environment:

``RETRYSAFE_EVENT_BUS_NAME``  EventBridge ``PutEvents`` (source ``RETRYSAFE_EVENT_SOURCE``, default
                              ``retrysafe.outbox``; detail-type = event type; detail = the envelope)
``RETRYSAFE_TOPIC_ARN``       SNS ``PublishBatch`` (message = the envelope)
``RETRYSAFE_QUEUE_URL``       SQS ``SendMessageBatch`` (body = the envelope)

The envelope is ``{"event_id", "event_type", "aggregate_type", "aggregate_id",
"sequence", "occurred_at", "payload"}``; SNS and SQS messages also carry the
event id as the ``idempotency-key`` message attribute, and FIFO targets get
``MessageGroupId`` = aggregate type + id and ``MessageDeduplicationId`` = event id.
Consumers dedupe on the event id (:mod:`retrysafe.sqs` finds it by default).

A published item is marked with a conditional update (``REMOVE obq SET
published_at``, ``attribute_exists(pk)``). When a batch partly fails, the
first failed stream record is reported (``batchItemFailures``) so Lambda
retries from there; what had succeeded after it is published again, and
duplicates are harmless. Items never marked published are found by
:mod:`retrysafe.outbox_sweeper`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from .errors import ConfigurationError
from .observability import telemetry
from .outbox import OUTBOX_KIND, UNPUBLISHED_ATTRIBUTE
from .store import DynamoStore

BUS_ENV = "RETRYSAFE_EVENT_BUS_NAME"
SOURCE_ENV = "RETRYSAFE_EVENT_SOURCE"
TOPIC_ENV = "RETRYSAFE_TOPIC_ARN"
QUEUE_ENV = "RETRYSAFE_QUEUE_URL"
DEFAULT_SOURCE = "retrysafe.outbox"
KEY_ATTRIBUTE = "idempotency-key"
#: Entries per PutEvents / PublishBatch / SendMessageBatch call.
BATCH_SIZE = 10


@dataclass(frozen=True)
class OutboxMessage:
    """An outbox item read back from the stream or the table (deserialized values)."""

    event_id: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    payload: Any
    occurred_at: str
    sequence: int | None = None

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> OutboxMessage:
        """Build from a deserialized outbox item (see :mod:`retrysafe.outbox`)."""
        seq = item.get("seq")
        return cls(event_id=str(item["eid"]), event_type=str(item["etype"]), aggregate_type=str(item["aggt"]),
                   aggregate_id=str(item["aggid"]), payload=json.loads(item["payload"]),
                   occurred_at=str(item["at"]), sequence=None if seq is None else int(seq))

    def envelope(self) -> dict[str, Any]:
        """What consumers receive: the event with its id, type, aggregate, sequence and time."""
        return {"event_id": self.event_id, "event_type": self.event_type, "aggregate_type": self.aggregate_type,
                "aggregate_id": self.aggregate_id, "sequence": self.sequence, "occurred_at": self.occurred_at,
                "payload": self.payload}

    def body(self) -> str:
        """The envelope as compact JSON text."""
        return json.dumps(self.envelope(), separators=(",", ":"), ensure_ascii=False, default=str)


class Target(Protocol):
    """Where events go. ``send`` returns the ids of the events that were NOT accepted."""

    def send(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """Send up to :data:`BATCH_SIZE` messages."""


class EventBridgeTarget:
    """``PutEvents`` to an event bus; per-entry failures are returned, not raised."""

    def __init__(self, bus_name: str, source: str = DEFAULT_SOURCE, client: Any = None) -> None:
        self.bus_name, self.source, self.client = bus_name, source, client or _client("events")

    def send(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """One ``PutEvents`` call; entries answer in request order."""
        entries = [{"EventBusName": self.bus_name, "Source": self.source, "DetailType": m.event_type,
                    "Detail": m.body(), "Time": datetime.fromisoformat(m.occurred_at)} for m in messages]
        response = self.client.put_events(Entries=entries)
        return {m.event_id for m, r in zip(messages, response["Entries"], strict=True) if r.get("ErrorCode")}


class SnsTarget:
    """``PublishBatch`` to a topic (standard or FIFO)."""

    def __init__(self, topic_arn: str, client: Any = None) -> None:
        self.topic_arn, self.client = topic_arn, client or _client("sns")

    def send(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """One ``PublishBatch`` call."""
        fifo = self.topic_arn.endswith(".fifo")
        entries = [{"Id": str(i), "Message": m.body(), "MessageAttributes": _attributes(m),
                    **_fifo_fields(m, fifo)} for i, m in enumerate(messages)]
        response = self.client.publish_batch(TopicArn=self.topic_arn, PublishBatchRequestEntries=entries)
        return {messages[int(f["Id"])].event_id for f in response.get("Failed", [])}


class SqsTarget:
    """``SendMessageBatch`` to a queue (standard or FIFO)."""

    def __init__(self, queue_url: str, client: Any = None) -> None:
        self.queue_url, self.client = queue_url, client or _client("sqs")

    def send(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """One ``SendMessageBatch`` call."""
        fifo = self.queue_url.endswith(".fifo")
        entries = [{"Id": str(i), "MessageBody": m.body(), "MessageAttributes": _attributes(m),
                    **_fifo_fields(m, fifo)} for i, m in enumerate(messages)]
        response = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        return {messages[int(f["Id"])].event_id for f in response.get("Failed", [])}


class Publisher:
    """Sends outbox messages to a target and marks the accepted ones published."""

    def __init__(self, target: Target, store: DynamoStore) -> None:
        self.target = target
        self.store = store

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Publisher:
        """The target named by exactly one of the target variables, on the table of ``RETRYSAFE_TABLE``."""
        env = os.environ if environ is None else environ
        chosen = [name for name in (BUS_ENV, TOPIC_ENV, QUEUE_ENV) if env.get(name)]
        if len(chosen) != 1:
            raise ConfigurationError(f"set exactly one of {BUS_ENV}, {TOPIC_ENV}, {QUEUE_ENV} "
                                     f"(found {', '.join(chosen) or 'none'})")
        target: Target
        if chosen[0] == BUS_ENV:
            target = EventBridgeTarget(env[BUS_ENV], env.get(SOURCE_ENV) or DEFAULT_SOURCE)
        elif chosen[0] == TOPIC_ENV:
            target = SnsTarget(env[TOPIC_ENV])
        else:
            target = SqsTarget(env[QUEUE_ENV])
        return cls(target, DynamoStore.from_env())

    def publish(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """Publish in batches of ten and mark what was accepted; returns the ids that failed."""
        from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

        failed: set[str] = set()
        for start in range(0, len(messages), BATCH_SIZE):
            chunk = messages[start:start + BATCH_SIZE]
            try:
                rejected = self.target.send(chunk)
            except ParamValidationError:  # a bug, not an outage
                raise
            except (BotoCoreError, ClientError) as error:  # the whole call failed: every entry is retried
                telemetry.logger.warning("outbox publish call failed", extra={"error": type(error).__name__})
                rejected = {m.event_id for m in chunk}
            failed |= rejected
            for message in chunk:
                if message.event_id not in rejected:
                    self.mark_published(message.event_id)
        if failed:
            telemetry.logger.warning("outbox events not accepted by the target", extra={"count": len(failed)})
        return failed

    def mark_published(self, event_id: str) -> None:
        """Remove the unpublished marker. A failure here only means the sweeper publishes it once more."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.store.client.update_item(
                TableName=self.store.table_name, Key={"pk": {"S": f"outbox#{event_id}"}},
                UpdateExpression="REMOVE #obq SET #pa = :now", ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#obq": UNPUBLISHED_ATTRIBUTE, "#pa": "published_at"},
                ExpressionAttributeValues={":now": {"S": datetime.now(UTC).isoformat(timespec="milliseconds")}},
            )
        except (BotoCoreError, ClientError) as error:  # expired, throttled...: the event itself was delivered
            telemetry.logger.info("outbox item not marked published", extra={"error": type(error).__name__})


def outbox_inserts(records: Iterable[Any]) -> list[tuple[str, OutboxMessage | None]]:
    """(sequence number, message) of the stream records that are INSERTs of outbox items, in order.

    An outbox INSERT that cannot be read comes back with ``None``: the handler
    reports it failed (it ends in the on-failure destination) instead of
    dropping it. A record without even a sequence number cannot be reported
    and is logged.
    """
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

    found: list[tuple[str, OutboxMessage | None]] = []
    for record in records:
        if not isinstance(record, dict) or record.get("eventName") != "INSERT":
            continue
        identity = record.get("userIdentity")
        if isinstance(identity, Mapping) and identity.get("principalId") == "dynamodb.amazonaws.com":
            continue
        stream: Any = None
        try:
            stream = DynamoDBRecord(record).dynamodb
            if stream is None or stream.new_image.get("kind") != OUTBOX_KIND:
                continue
            found.append((str(stream.sequence_number), OutboxMessage.from_item(stream.new_image)))
        except (AttributeError, KeyError, TypeError, ValueError) as error:  # an unreadable outbox INSERT
            image = record.get("dynamodb")
            sequence = image.get("SequenceNumber") if isinstance(image, dict) else None
            telemetry.logger.error("unreadable outbox stream record", extra={"error": type(error).__name__,
                                                                             "sequence": sequence})
            if isinstance(sequence, str) and sequence:
                found.append((sequence, None))
    return found


_publisher: Publisher | None = None


def default_publisher() -> Publisher:
    """The container's publisher, configured from the environment on first use."""
    global _publisher
    if _publisher is None:
        _publisher = Publisher.from_env()
    return _publisher


def handler(event: Mapping[str, Any], context: Any = None, publisher: Publisher | None = None) -> dict[str, Any]:
    """Lambda entry point for the table's stream: publish outbox INSERTs, report the first failure."""
    inserts = outbox_inserts(event.get("Records") or [])
    readable = [m for _, m in inserts if m is not None]
    failed = (publisher or default_publisher()).publish(readable) if readable else set()
    first = next((seq for seq, m in inserts if m is None or m.event_id in failed), None)
    if inserts:
        telemetry.logger.info("outbox stream batch", extra={"published": len(readable) - len(failed),
                                                            "failed": len(failed),
                                                            "unreadable": len(inserts) - len(readable)})
    return {"batchItemFailures": [{"itemIdentifier": first}] if first is not None else []}


def _attributes(message: OutboxMessage) -> dict[str, dict[str, str]]:
    return {KEY_ATTRIBUTE: {"DataType": "String", "StringValue": message.event_id},
            "event-type": {"DataType": "String", "StringValue": message.event_type}}


def _fifo_fields(message: OutboxMessage, fifo: bool) -> dict[str, str]:
    if not fifo:
        return {}
    return {"MessageGroupId": f"{message.aggregate_type}#{message.aggregate_id}",
            "MessageDeduplicationId": message.event_id}


def _client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(service, config=Config(retries={"mode": "standard", "max_attempts": 4}))
