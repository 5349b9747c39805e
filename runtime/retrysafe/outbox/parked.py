"""Parked outbox events: list them, and republish them once the cause is fixed.

The publisher parks an event that its target refuses permanently (larger than
a message may be, malformed): the item stays in the table with ``obq =
parked``, ``parked_at`` and ``park_reason``, out of the stream's and the
sweeper's way, until its TTL (the retry horizon). Each parking counts the
``OutboxEventParked`` metric, which the constructs alarm on.

From a shell with the publisher's environment (``RETRYSAFE_TABLE`` and the
target variable)::

    python -m retrysafe.outbox.parked list
    python -m retrysafe.outbox.parked republish [EVENT_ID ...]

or from code: :func:`list_parked` and :func:`republish`. Republishing goes
through the same :class:`~retrysafe.outbox.publisher.Publisher`: accepted events
are marked published, events still refused stay parked (with the new reason).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Iterator, Sequence
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
        """What the ``list`` command prints (no payload)."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """The operator command (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m retrysafe.outbox.parked",
                                     description="List or republish outbox events the target refused permanently.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="print the parked events (one JSON object per line, no payloads)")
    again = commands.add_parser("republish", help="publish parked events again (all, or the given ids)")
    again.add_argument("event_ids", nargs="*", metavar="EVENT_ID")
    args = parser.parse_args(argv)
    if args.command == "list":
        for parked in list_parked(DynamoStore.from_env()):
            print(json.dumps(parked.summary()))
        return 0
    counts = republish(Publisher.from_env(), set(args.event_ids))
    print(json.dumps(counts))
    return 0 if counts["parked"] == counts["failed"] == 0 else 1


__all__ = ["ParkedEvent", "list_parked", "main", "republish"]

if __name__ == "__main__":
    sys.exit(main())
