"""Where outbox events go, and how much each target accepts per message and per request.

The limits per target are tabled in :mod:`retrysafe.outbox`; producers measure events with the
same functions (:mod:`retrysafe._limits`).

``send`` answers per event: accepted, refused for now (throttled, internal
error: retried), or refused permanently (malformed, too large: parked, see
:mod:`retrysafe.outbox.parked`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import string
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from .. import names
from .._events import OutboxMessage
from .._limits import (
    DEFAULT_MESSAGE_BYTES,
    EVENTBRIDGE_MAX_BYTES,
    KIB,
    attributes,
    eventbridge_size,
    max_message_bytes,
    message_size,
)
from .._value import Value, set_field
from ..errors import ConfigurationError

#: Entries per PutEvents / PublishBatch / SendMessageBatch call.
MAX_ENTRIES = 10
SQS_MAX_REQUEST_BYTES = 1024 * KIB

#: Per-entry error codes that no retry can fix (anything else is retried).
PERMANENT_CODES = frozenset({
    "InvalidParameterValue", "InvalidParameter", "InvalidMessageContents", "InvalidAttributeValue",
    "InvalidAttributeName", "MessageTooLong", "ValidationException", "ValidationError", "MalformedDetail",
    "InvalidArgument", "UnsupportedOperation",
})


class Refusal(Value):
    """Why the target did not take an event; ``permanent`` ones are parked instead of retried."""

    __slots__ = ("permanent", "reason")

    permanent: bool
    reason: str

    def __init__(self, reason: str, permanent: bool = False) -> None:
        set_field(self, "reason", reason)
        set_field(self, "permanent", permanent)


class Target(Protocol):
    """A publishing target: its limits, how it measures a message, and ``send``.

    ``send`` receives a batch within the limits and returns the events it did
    not accept (event id -> :class:`Refusal`; a plain set of ids means transient refusals).
    """

    kind: str
    max_entries: int
    max_entry_bytes: int
    max_request_bytes: int

    def entry_size(self, message: OutboxMessage) -> int:
        """The size the service counts for ``message``."""

    def send(self, messages: Sequence[OutboxMessage]) -> Mapping[str, Refusal] | set[str]:
        """One batch call."""


#: What SNS and SQS FIFO accept in a ``MessageGroupId``: alphanumeric characters and punctuation, at most 128.
GROUP_ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
MAX_GROUP_ID = 128
#: First character of a hashed group id (never the first character of a readable one).
HASHED_GROUP = "~"


def group_id(aggregate_type: str, aggregate_id: str) -> str:
    """The FIFO ``MessageGroupId`` of an aggregate: valid for every aggregate, deterministic, collision-resistant.

    ``<aggregate type>#<aggregate id>`` when that is a valid group id, readable, and unambiguous (the type
    holds no ``#`` and it does not start with ``~``); otherwise ``~`` and the URL-safe base64 SHA-256 of the
    length-prefixed type and id (44 characters). So ``"jane doe"``, ``"zoë"`` or a 130-character id map to a
    group SQS and SNS accept, the same one every time, and two aggregates share a group only by a SHA-256
    collision. Either way every event of an aggregate lands in one group, in order.
    """
    readable = f"{aggregate_type}#{aggregate_id}"
    if (len(readable) <= MAX_GROUP_ID and "#" not in aggregate_type and not readable.startswith(HASHED_GROUP)
            and GROUP_ID_CHARACTERS.issuperset(readable)):
        return readable
    digest = hashlib.sha256()
    for part in (aggregate_type, aggregate_id):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(4, "big") + data)
    return HASHED_GROUP + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode("ascii")


def _batch_entries(messages: Sequence[OutboxMessage], body_field: str, *, fifo: bool) -> list[dict[str, Any]]:
    """``PublishBatch`` / ``SendMessageBatch`` entries: ids are positions, FIFO targets get group and dedup ids."""
    entries: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        entry: dict[str, Any] = {"Id": str(index), body_field: message.body(), "MessageAttributes": attributes(message)}
        if fifo:
            entry["MessageGroupId"] = group_id(message.aggregate_type, message.aggregate_id)
            entry["MessageDeduplicationId"] = message.event_id
        entries.append(entry)
    return entries


def _batch_refusals(messages: Sequence[OutboxMessage], response: Mapping[str, Any]) -> dict[str, Refusal]:
    """The ``Failed`` entries of a batch answer, by event id."""
    return {messages[int(f["Id"])].event_id: _refusal(f) for f in response.get("Failed", [])}


def _refusal(failure: Mapping[str, Any]) -> Refusal:
    code = str(failure.get("Code") or failure.get("ErrorCode") or "Unknown")
    text = f"{code}: {failure.get('Message') or failure.get('ErrorMessage') or ''}".strip()
    permanent = code in PERMANENT_CODES and failure.get("SenderFault", True) is not False
    return Refusal(text, permanent)


class EventBridgeTarget:
    """``PutEvents`` to an event bus; per-entry failures are returned, not raised."""

    kind = names.EVENTBRIDGE_TARGET
    max_entries = MAX_ENTRIES
    max_entry_bytes = EVENTBRIDGE_MAX_BYTES
    max_request_bytes = EVENTBRIDGE_MAX_BYTES

    def __init__(self, bus_name: str, source: str = names.DEFAULT_EVENT_SOURCE, client: Any = None) -> None:
        self.bus_name, self.source, self.client = bus_name, source, client or _client("events")

    def entry_size(self, message: OutboxMessage) -> int:
        """See :func:`eventbridge_size`."""
        return eventbridge_size(message, self.source)

    def send(self, messages: Sequence[OutboxMessage]) -> dict[str, Refusal]:
        """One ``PutEvents`` call; entries answer in request order."""
        entries = [{"EventBusName": self.bus_name, "Source": self.source, "DetailType": m.event_type,
                    "Detail": m.body(), "Time": datetime.fromisoformat(m.occurred_at)} for m in messages]
        response = self.client.put_events(Entries=entries)
        return {m.event_id: _refusal(r) for m, r in zip(messages, response["Entries"], strict=True)
                if r.get("ErrorCode")}


class SnsTarget:
    """``PublishBatch`` to a topic (standard or FIFO)."""

    kind = names.SNS_TARGET
    max_entries = MAX_ENTRIES

    def __init__(self, topic_arn: str, client: Any = None, max_message_bytes: int = DEFAULT_MESSAGE_BYTES) -> None:
        self.topic_arn, self.client = topic_arn, client or _client("sns")
        self.max_entry_bytes = self.max_request_bytes = max_message_bytes

    def entry_size(self, message: OutboxMessage) -> int:
        """See :func:`message_size`."""
        return message_size(message)

    def send(self, messages: Sequence[OutboxMessage]) -> dict[str, Refusal]:
        """One ``PublishBatch`` call."""
        entries = _batch_entries(messages, "Message", fifo=self.topic_arn.endswith(".fifo"))
        return _batch_refusals(messages, self.client.publish_batch(TopicArn=self.topic_arn,
                                                                    PublishBatchRequestEntries=entries))


class SqsTarget:
    """``SendMessageBatch`` to a queue (standard or FIFO)."""

    kind = names.SQS_TARGET
    max_entries = MAX_ENTRIES
    max_request_bytes = SQS_MAX_REQUEST_BYTES

    def __init__(self, queue_url: str, client: Any = None, max_message_bytes: int = DEFAULT_MESSAGE_BYTES) -> None:
        self.queue_url, self.client = queue_url, client or _client("sqs")
        self.max_entry_bytes = max_message_bytes

    def entry_size(self, message: OutboxMessage) -> int:
        """See :func:`message_size`."""
        return message_size(message)

    def send(self, messages: Sequence[OutboxMessage]) -> dict[str, Refusal]:
        """One ``SendMessageBatch`` call."""
        entries = _batch_entries(messages, "MessageBody", fifo=self.queue_url.endswith(".fifo"))
        return _batch_refusals(messages, self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries))


def target_from_env(environ: Mapping[str, str] | None = None) -> Target:
    """The target named by exactly one of the target variables."""
    env = os.environ if environ is None else environ
    chosen = [name for name in (names.EVENT_BUS_ENV, names.TOPIC_ENV, names.QUEUE_ENV) if env.get(name)]
    if len(chosen) != 1:
        raise ConfigurationError(f"set exactly one of {names.EVENT_BUS_ENV}, {names.TOPIC_ENV}, {names.QUEUE_ENV} "
                                 f"(found {', '.join(chosen) or 'none'})")
    if chosen[0] == names.EVENT_BUS_ENV:
        return EventBridgeTarget(env[names.EVENT_BUS_ENV], env.get(names.EVENT_SOURCE_ENV) or names.DEFAULT_EVENT_SOURCE)
    if chosen[0] == names.TOPIC_ENV:
        return SnsTarget(env[names.TOPIC_ENV], max_message_bytes=max_message_bytes(env))
    return SqsTarget(env[names.QUEUE_ENV], max_message_bytes=max_message_bytes(env))


def _client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(service, config=Config(retries={"mode": "standard", "max_attempts": 4}))
