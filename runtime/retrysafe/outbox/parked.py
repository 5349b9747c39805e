"""Parked outbox events: list them, and republish them once the cause is fixed.

The publisher parks an event that its target refuses permanently (larger than
a message may be, malformed): the item stays in the table with ``obq =
parked``, ``parked_at`` and ``park_reason``, out of the stream's and the
sweeper's way, until its TTL (the retry horizon). Each parking counts the
``OutboxEventParked`` metric, which the constructs alarm on.

From a shell with the publisher's environment (``RETRYSAFE_TABLE`` and the
target variable), the operator's command line::

    retrysafe outbox parked list
    retrysafe outbox parked republish [EVENT_ID ...]

or from code: :func:`list_parked` and :func:`republish`. Republishing goes
through the same :class:`~retrysafe.outbox.publisher.Publisher`: accepted events
are marked published, events still refused stay parked (with the new reason).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from .._events import PARKED, OutboxMessage
from .._store import DynamoStore
from ._index import pages
from .publisher import Publisher


@dataclass(frozen=True)
class ParkedEvent:
    """A parked event and why the target refused it."""

    message: OutboxMessage
    parked_at: str
    reason: str

    def summary(self) -> dict[str, Any]:
        """What ``retrysafe outbox parked list`` prints (no payload)."""
        return {"event_id": self.message.event_id, "event_type": self.message.event_type,
                "aggregate_type": self.message.aggregate_type, "aggregate_id": self.message.aggregate_id,
                "occurred_at": self.message.occurred_at, "parked_at": self.parked_at, "reason": self.reason}


def list_parked(store: DynamoStore) -> Iterator[ParkedEvent]:
    """Every parked event of the table, oldest first (the ``outbox-unpublished`` index, partition ``parked``)."""
    for items in pages(store, PARKED):
        for item in items:
            yield ParkedEvent(OutboxMessage.from_item(item), str(item.get("parked_at", "")),
                              str(item.get("park_reason", "")))


def republish(publisher: Publisher, event_ids: Collection[str] = ()) -> dict[str, int]:
    """Publish parked events again (all, or those in ``event_ids``); returns counts.

    ``republished``: accepted and marked published; ``parked``: refused
    permanently again (still parked, reason updated); ``failed``: refused for now
    (still parked; run again later).
    """
    chosen = [p.message for p in list_parked(publisher.store) if not event_ids or p.message.event_id in event_ids]
    failed = publisher.publish(chosen)
    still = {p.message.event_id for p in list_parked(publisher.store)}
    parked = sum(1 for m in chosen if m.event_id in still and m.event_id not in failed)
    return {"republished": len(chosen) - parked - len(failed), "parked": parked, "failed": len(failed)}


__all__ = ["ParkedEvent", "list_parked", "republish"]
