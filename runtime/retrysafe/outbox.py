"""Outbox events: what a transaction appends, and how an event becomes a DynamoDB item.

An event is written in the same ``TransactWriteItems`` as the business change
that caused it, into the idempotency table, where the table's stream feeds the
publisher. Its id is derived from the operation identity and its position in
the operation, so a retried operation produces the same ids and consumers can
dedupe on them.

=============  =============================================================
attribute      meaning
=============  =============================================================
``pk``         ``outbox#`` + event id
``kind``       ``outbox`` (the stream filter selects INSERTs with this value)
``eid``        event id (a UUID derived from the scope and the event's index)
``etype``      event type, e.g. ``OrderPlaced``
``aggt``       aggregate type, e.g. ``Order``
``aggid``      aggregate id
``seq``        per-aggregate sequence number (optional; pass the aggregate's version)
``payload``    JSON text
``at``         occurred-at, ISO-8601 UTC
``exp``        TTL (epoch seconds)
``obq``        unpublished marker (sparse index key for the sweeper), removed once published
=============  =============================================================
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from ._value import Value

if TYPE_CHECKING:
    from datetime import datetime

OUTBOX_PREFIX = "outbox#"
OUTBOX_KIND = "outbox"
UNPUBLISHED_ATTRIBUTE = "obq"
UNPUBLISHED_SHARDS = 8


def event_id(record_id: str, index: int) -> str:
    """Deterministic event id: the same operation appending its ``index``-th event gets the same id."""
    digest = bytearray(hashlib.sha256(f"event/v1|{record_id}|{index}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # the layout of a name-based UUID (version 5, RFC 4122 variant)
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class OutboxEvent(Value):
    """One event appended to the outbox."""

    __slots__ = ("event_id", "event_type", "aggregate_type", "aggregate_id", "payload", "occurred_at", "sequence")

    def __init__(self, event_id: str, event_type: str, aggregate_type: str, aggregate_id: str, payload: Any,
                 occurred_at: datetime, sequence: int | None = None) -> None:
        self.event_id = event_id
        self.event_type = event_type
        self.aggregate_type = aggregate_type
        self.aggregate_id = aggregate_id
        self.payload = payload
        self.occurred_at = occurred_at
        self.sequence = sequence

    def to_item(self, expires_at: int) -> dict[str, dict[str, Any]]:
        """The DynamoDB attribute map for this event."""
        shard = int(self.event_id.replace("-", "")[:8], 16) % UNPUBLISHED_SHARDS
        item: dict[str, dict[str, Any]] = {
            "pk": {"S": OUTBOX_PREFIX + self.event_id},
            "kind": {"S": OUTBOX_KIND},
            "eid": {"S": self.event_id},
            "etype": {"S": self.event_type},
            "aggt": {"S": self.aggregate_type},
            "aggid": {"S": self.aggregate_id},
            "payload": {"S": json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False, default=str)},
            "at": {"S": _utc_iso(self.occurred_at)},
            "exp": {"N": str(expires_at)},
            UNPUBLISHED_ATTRIBUTE: {"S": f"u{shard}"},
        }
        if self.sequence is not None:
            item["seq"] = {"N": str(self.sequence)}
        return item


def _utc_iso(moment: datetime) -> str:
    from datetime import UTC

    return moment.astimezone(UTC).isoformat(timespec="milliseconds")
