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
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

OUTBOX_PREFIX = "outbox#"
OUTBOX_KIND = "outbox"
UNPUBLISHED_ATTRIBUTE = "obq"
UNPUBLISHED_SHARDS = 8


def event_id(record_id: str, index: int) -> str:
    """Deterministic event id: the same operation appending its ``index``-th event gets the same id."""
    digest = hashlib.sha256(f"event/v1|{record_id}|{index}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=5))


@dataclass(frozen=True)
class OutboxEvent:
    """One event appended to the outbox."""

    event_id: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    payload: Any
    occurred_at: datetime
    sequence: int | None = None

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
            "at": {"S": self.occurred_at.astimezone(UTC).isoformat(timespec="milliseconds")},
            "exp": {"N": str(expires_at)},
            UNPUBLISHED_ATTRIBUTE: {"S": f"u{shard}"},
        }
        if self.sequence is not None:
            item["seq"] = {"N": str(self.sequence)}
        return item

