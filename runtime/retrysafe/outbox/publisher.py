"""Outbox publishing: the DynamoDB Streams publisher, and the :class:`Publisher` the sweeper shares.

``handler`` receives the idempotency table's stream and publishes its outbox
INSERTs (:mod:`retrysafe.outbox._stream`). Each event goes to exactly one
target, chosen by the environment:

``RETRYSAFE_EVENT_BUS``       EventBridge ``PutEvents`` (source ``RETRYSAFE_EVENT_SOURCE``, default
                              ``retrysafe.outbox``; detail-type = event type; detail = the envelope)
``RETRYSAFE_TOPIC_ARN``       SNS ``PublishBatch`` (message = the envelope)
``RETRYSAFE_QUEUE_URL``       SQS ``SendMessageBatch`` (body = the envelope)

Batches are cut by the target's limits (entries, bytes per message and per
request: :mod:`retrysafe.outbox._targets`), not in fixed chunks. An event the
target refuses permanently (larger than a message may be, malformed) is
*parked*: its item is marked ``obq = parked`` (the sweeper no longer sees it),
the ``OutboxEventParked`` metric is counted, and the stream moves on. List and
republish parked events with ``retrysafe outbox parked`` (:mod:`retrysafe.outbox.parked`). Transient
refusals (throttling, internal errors) are retried by the stream and the sweeper.

The envelope is ``{"event_id", "event_type", "aggregate_type", "aggregate_id",
"sequence", "occurred_at", "payload"}``; SNS and SQS messages also carry the
event id as the ``idempotency-key`` message attribute, and FIFO targets get
``MessageGroupId`` = ``<aggregate type>#<aggregate id>`` (hashed when that is not a valid group id:
:func:`~retrysafe.outbox._targets.group_id`) and ``MessageDeduplicationId`` = event id.
Consumers dedupe on the event id (:mod:`retrysafe.sqs` finds it by default).

A published item is marked with a conditional update (``REMOVE obq SET
published_at``, ``attribute_exists(pk)``). When a batch partly fails, the
first failed stream record is reported (``batchItemFailures``) so Lambda
retries from there; what had succeeded after it is published again, and
duplicates are harmless. Items never marked published are found by
:mod:`retrysafe.outbox.sweeper`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from .._events import PARKED, OutboxMessage
from .._observability import telemetry
from .._store import DynamoStore
from ..metrics import OUTBOX_EVENT_PARKED
from ..names import OUTBOX_PREFIX, PARTITION_KEY, UNPUBLISHED_ATTRIBUTE
from ._stream import outbox_inserts
from ._targets import MAX_ENTRIES, PERMANENT_CODES, Refusal, Target, target_from_env

_DEFAULT_LIMIT = 256 * 1024


class Publisher:
    """Sends outbox messages to a target in batches within its limits, marks what was accepted, parks what never can be."""

    def __init__(self, target: Target, store: DynamoStore) -> None:
        self.target = target
        self.store = store

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Publisher:
        """The target named by exactly one of the target variables, on the table of ``RETRYSAFE_TABLE``."""
        return cls(target_from_env(environ), DynamoStore.from_env())

    def publish(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """Publish, mark accepted events published and park refused ones; returns the ids to retry."""
        failed: set[str] = set()
        for batch in self._batches(messages, failed):
            failed |= self._send(batch)
        if failed:
            telemetry.logger.warning("outbox events not accepted by the target", extra={"count": len(failed)})
        return failed

    def _batches(self, messages: Sequence[OutboxMessage], failed: set[str]) -> Iterable[list[OutboxMessage]]:
        limit_entries = getattr(self.target, "max_entries", MAX_ENTRIES)
        limit_entry = getattr(self.target, "max_entry_bytes", _DEFAULT_LIMIT)
        limit_request = getattr(self.target, "max_request_bytes", _DEFAULT_LIMIT)
        measure = getattr(self.target, "entry_size", None)
        batch: list[OutboxMessage] = []
        total = 0
        for message in messages:
            size = measure(message) if measure is not None else len(message.body().encode("utf-8"))
            if size > limit_entry:
                kind = getattr(self.target, "kind", "the target")
                if not self.park(message, f"the message is {size} bytes; {kind} accepts {limit_entry}"):
                    failed.add(message.event_id)
                continue
            if batch and (len(batch) >= limit_entries or total + size > limit_request):
                yield batch
                batch, total = [], 0
            batch.append(message)
            total += size
        if batch:
            yield batch

    def _send(self, batch: list[OutboxMessage]) -> set[str]:
        from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

        try:
            answer = self.target.send(batch)
        except ParamValidationError:  # a bug, not an outage
            raise
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in PERMANENT_CODES or code == "BatchRequestTooLong":
                if len(batch) > 1:  # find the entry the service refuses: send them one by one
                    return set().union(*(self._send([m]) for m in batch))
                return set() if self.park(batch[0], f"{code}: {error}") else {batch[0].event_id}
            telemetry.logger.warning("outbox publish call failed", extra={"error": code})
            return {m.event_id for m in batch}
        except BotoCoreError as error:  # the whole call failed: every entry is retried
            telemetry.logger.warning("outbox publish call failed", extra={"error": type(error).__name__})
            return {m.event_id for m in batch}
        refusals: Mapping[str, Refusal] = answer if isinstance(answer, Mapping) else {
            eid: Refusal("refused") for eid in answer}
        failed: set[str] = set()
        for message in batch:
            refusal = refusals.get(message.event_id)
            if refusal is None:
                self.mark_published(message.event_id)
            elif not refusal.permanent or not self.park(message, refusal.reason):
                failed.add(message.event_id)
        return failed

    def mark_published(self, event_id: str) -> None:
        """Remove the unpublished marker. A failure here only means the sweeper publishes it once more."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.store.client.update_item(
                TableName=self.store.table_name, Key={PARTITION_KEY: {"S": OUTBOX_PREFIX + event_id}},
                UpdateExpression="REMOVE #obq, #pr SET #pa = :now", ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#obq": UNPUBLISHED_ATTRIBUTE, "#pa": "published_at", "#pr": "park_reason"},
                ExpressionAttributeValues={":now": {"S": _now()}},
            )
        except (BotoCoreError, ClientError) as error:  # expired, throttled...: the event itself was delivered
            telemetry.logger.info("outbox item not marked published", extra={"error": type(error).__name__})

    def park(self, message: OutboxMessage, reason: str) -> bool:
        """Mark an event the target refuses permanently as parked; ``False`` if that write failed (retry it).

        A parked item keeps its payload until its TTL (the retry horizon); list and
        republish it with ``retrysafe outbox parked`` after fixing the cause.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.store.client.update_item(
                TableName=self.store.table_name, Key={PARTITION_KEY: {"S": OUTBOX_PREFIX + message.event_id}},
                UpdateExpression="SET #obq = :parked, #at = :now, #why = :why",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#obq": UNPUBLISHED_ATTRIBUTE, "#at": "parked_at", "#why": "park_reason"},
                ExpressionAttributeValues={":parked": {"S": PARKED}, ":now": {"S": _now()},
                                           ":why": {"S": reason[:1000]}},
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                telemetry.logger.warning("outbox event not parked", extra={"error": type(error).__name__})
                return False
            # The item expired: nothing is left to deliver or park.
        except BotoCoreError as error:
            telemetry.logger.warning("outbox event not parked", extra={"error": type(error).__name__})
            return False
        telemetry.count(OUTBOX_EVENT_PARKED, "outbox", message.event_id, event_type=message.event_type, reason=reason)
        return True


_publisher: Publisher | None = None


def default_publisher() -> Publisher:
    """The container's publisher, configured from the environment on first use."""
    global _publisher
    if _publisher is None:
        _publisher = Publisher.from_env()
    return _publisher


def handler(event: Mapping[str, Any], context: Any = None, publisher: Publisher | None = None) -> dict[str, Any]:
    """Lambda entry point for the table's stream: publish outbox INSERTs, report the first failure."""
    try:
        inserts = outbox_inserts(event.get("Records") or [])
        readable = [m for _, m in inserts if m is not None]
        failed = (publisher or default_publisher()).publish(readable) if readable else set()
        first = next((seq for seq, m in inserts if m is None or m.event_id in failed), None)
        if inserts:
            telemetry.logger.info("outbox stream batch", extra={"sent_or_parked": len(readable) - len(failed),
                                                                "failed": len(failed),
                                                                "unreadable": len(inserts) - len(readable)})
        return {"batchItemFailures": [{"itemIdentifier": first}] if first is not None else []}
    finally:
        telemetry.flush()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


__all__ = ["Publisher", "default_publisher", "handler"]
