"""Outbox events: what a transaction appends, and how an event becomes a DynamoDB item.

An event is written in the same ``TransactWriteItems`` as the business change
that caused it, into the idempotency table, where the table's stream feeds the
publisher. Its id is derived from the operation identity, the intent's instance
and its position in the operation: the committed ids never change (consumers
dedupe on them); a claim-first retry or takeover of the same claim gets the
same ids again, while an atomic attempt that runs the handler gets new ones
(only the one that commits counts); a new intent with the same key after the
record expired gets new ids (a consumer that still remembers
the old ids must not drop its events).

=============  =============================================================
attribute      meaning
=============  =============================================================
``pk``         ``outbox#`` + event id
``kind``       ``outbox`` (the stream filter selects INSERTs with this value)
``eid``        event id (a UUID derived from the scope, the intent instance and the event's index)
``etype``      event type, e.g. ``OrderPlaced``
``aggt``       aggregate type, e.g. ``Order``
``aggid``      aggregate id
``seq``        per-aggregate sequence number (optional; pass the aggregate's version)
``cc``         a claim check's pointer, JSON text (optional; the envelope's ``claim_check``, see
               :mod:`retrysafe._claimcheck`)
``payload``    JSON text
``occ``        occurred-at, ISO-8601 UTC: what the handler said (data, carried in the envelope)
``at``         committed-at, ISO-8601 UTC: when the transaction holding the event was sent (the runtime's
               clock); the sweeper's index sorts by it, so a client's clock never decides when an event is swept
``exp``        TTL (epoch seconds)
``obq``        unpublished marker (sparse index key for the sweeper: ``u0``..``u7``), removed once
               published; ``parked`` once the target refused the event permanently
``parked_at``  when it was parked, with ``park_reason`` (see :mod:`retrysafe.outbox.parked`)
=============  =============================================================

An event has two forms, on purpose. :class:`OutboxEvent` is what a handler
appends: its payload as the handler gave it (any value JSON can encode, with
``str`` as the fallback) and its time as a ``datetime``; it becomes an item.
:class:`OutboxMessage` is what the table holds: the payload decoded from the
stored JSON text and the time as that text; it becomes the envelope consumers
receive. :meth:`OutboxEvent.message` is the one conversion between them, so a
size check at append time measures exactly what the publisher, the sweeper or
the pipe will send, whichever of them reads it back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from . import names
from ._value import Value, set_field

UNPUBLISHED_SHARDS = 8
#: The item attribute holding a claim check's pointer (JSON text).
CLAIM_CHECK = "cc"
#: The item attribute holding the event's ``occurred_at`` (data; the index sorts by commit time).
OCCURRED_AT = "occ"
#: ``obq`` value of a parked event (refused permanently by the target): outside the sweeper's shards.
PARKED = "parked"

#: Compact JSON (payloads as stored, envelopes as sent); one encoder, reused per event.
_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


def event_id(record_id: str, index: int, instance: str = "") -> str:
    """Deterministic event id: the same intent instance appending its ``index``-th event gets the same id."""
    digest = bytearray(hashlib.sha256(f"event/v2|{record_id}|{instance}|{index}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # the layout of a name-based UUID (version 5, RFC 4122 variant)
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class OutboxEvent(Value):
    """One event appended to the outbox, as the handler gave it (see the module docstring for the two forms)."""

    __slots__ = (
        "_text",
        "aggregate_id",
        "aggregate_type",
        "claim_check",
        "event_id",
        "event_type",
        "occurred_at",
        "payload",
        "sequence",
    )

    aggregate_id: str
    aggregate_type: str
    claim_check: Mapping[str, Any] | None
    event_id: str
    event_type: str
    occurred_at: datetime
    payload: Any
    sequence: int | None
    _text: str | None

    def __init__(self, event_id: str, event_type: str, aggregate_type: str, aggregate_id: str, payload: Any,
                 occurred_at: datetime, sequence: int | None = None,
                 claim_check: Mapping[str, Any] | None = None) -> None:
        set_field(self, "_text", None)
        set_field(self, "claim_check", claim_check)
        set_field(self, "event_id", event_id)
        set_field(self, "event_type", event_type)
        set_field(self, "aggregate_type", aggregate_type)
        set_field(self, "aggregate_id", aggregate_id)
        set_field(self, "payload", payload)
        set_field(self, "occurred_at", occurred_at)
        set_field(self, "sequence", sequence)

    def to_item(self, expires_at: int, *, committed_at: float) -> dict[str, dict[str, Any]]:
        """The DynamoDB attribute map for this event, committed at ``committed_at`` (epoch seconds)."""
        shard = int(self.event_id.replace("-", "")[:8], 16) % UNPUBLISHED_SHARDS
        item: dict[str, dict[str, Any]] = {
            names.PARTITION_KEY: {"S": names.OUTBOX_PREFIX + self.event_id},
            names.KIND_ATTRIBUTE: {"S": names.OUTBOX_KIND},
            "eid": {"S": self.event_id},
            "etype": {"S": self.event_type},
            "aggt": {"S": self.aggregate_type},
            "aggid": {"S": self.aggregate_id},
            "payload": {"S": self.payload_text},
            OCCURRED_AT: {"S": _utc_iso(self.occurred_at)},
            names.COMMITTED_AT_ATTRIBUTE: {"S": _utc_iso(datetime.fromtimestamp(committed_at, UTC))},
            names.TTL_ATTRIBUTE: {"N": str(expires_at)},
            names.UNPUBLISHED_ATTRIBUTE: {"S": f"u{shard}"},
        }
        if self.sequence is not None:
            item["seq"] = {"N": str(self.sequence)}
        if self.claim_check is not None:
            item[CLAIM_CHECK] = {"S": _compact(dict(self.claim_check))}
        return item

    @property
    def payload_text(self) -> str:
        """The payload as stored: compact JSON text (computed once)."""
        text = self._text
        if text is None:
            text = _compact(self.payload)
            set_field(self, "_text", text)
        return text

    def message(self) -> OutboxMessage:
        """The message the publisher will send for this event."""
        return OutboxMessage(event_id=self.event_id, event_type=self.event_type, aggregate_type=self.aggregate_type,
                             aggregate_id=self.aggregate_id, payload=json.loads(self.payload_text),
                             occurred_at=_utc_iso(self.occurred_at), sequence=self.sequence,
                             claim_check=None if self.claim_check is None else dict(self.claim_check))


class OutboxMessage(Value):
    """An outbox event as the table holds it, read back from the stream or the index (payload decoded)."""

    __slots__ = ("aggregate_id", "aggregate_type", "claim_check", "event_id", "event_type", "occurred_at", "payload",
                 "sequence")

    aggregate_id: str
    aggregate_type: str
    claim_check: dict[str, Any] | None
    event_id: str
    event_type: str
    occurred_at: str
    payload: Any
    sequence: int | None

    def __init__(self, event_id: str, event_type: str, aggregate_type: str, aggregate_id: str, payload: Any,
                 occurred_at: str, sequence: int | None = None, claim_check: dict[str, Any] | None = None) -> None:
        set_field(self, "claim_check", claim_check)
        set_field(self, "event_id", event_id)
        set_field(self, "event_type", event_type)
        set_field(self, "aggregate_type", aggregate_type)
        set_field(self, "aggregate_id", aggregate_id)
        set_field(self, "payload", payload)
        set_field(self, "occurred_at", occurred_at)
        set_field(self, "sequence", sequence)

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> OutboxMessage:
        """Build from a deserialized outbox item (see the table above)."""
        seq, check = item.get("seq"), item.get(CLAIM_CHECK)
        return cls(event_id=str(item["eid"]), event_type=str(item["etype"]), aggregate_type=str(item["aggt"]),
                   aggregate_id=str(item["aggid"]), payload=json.loads(item["payload"]),
                   occurred_at=str(item[OCCURRED_AT]), sequence=None if seq is None else int(seq),
                   claim_check=None if check is None else json.loads(check))

    def envelope(self) -> dict[str, Any]:
        """What consumers receive: the event with its id, type, aggregate, sequence and time (and the pointer of
        a claim check, as the top-level ``claim_check``: see :mod:`retrysafe._claimcheck`)."""
        envelope = {"event_id": self.event_id, "event_type": self.event_type, "aggregate_type": self.aggregate_type,
                    "aggregate_id": self.aggregate_id, "sequence": self.sequence, "occurred_at": self.occurred_at,
                    "payload": self.payload}
        if self.claim_check is not None:
            envelope[names.CLAIM_CHECK_ENVELOPE_FIELD] = self.claim_check
        return envelope

    def body(self) -> str:
        """The envelope as compact JSON text."""
        return _compact(self.envelope())


def _utc_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")
