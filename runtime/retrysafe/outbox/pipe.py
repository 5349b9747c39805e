"""The EventBridge Pipes enrichment of ``OutboxPipe``: stream records in, the publisher's envelopes out.

A pipe's input template can only copy DynamoDB attributes as strings, and the
outbox item keeps its payload as JSON text; the Lambda publisher sends it as an
object. So the pipe calls this function (a Pipes *enrichment*) with each batch of
filtered stream records, and it returns one envelope per outbox INSERT, built by
the same :meth:`OutboxMessage.envelope` as the publisher's. Whichever relay
publishes an event, consumers, rules and fingerprints see the same JSON.

An outbox INSERT that cannot be read raises: the pipe retries the batch, bisects
it and dead-letters that record, as it does for a target failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import UnreadableOutboxRecordError
from ._stream import outbox_inserts


def envelopes(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The envelopes of the outbox INSERTs among ``records`` (DynamoDB stream records), in order."""
    inserts = outbox_inserts(list(records))
    unreadable = [sequence for sequence, message in inserts if message is None]
    if unreadable:
        raise UnreadableOutboxRecordError(f"unreadable outbox stream records: {', '.join(unreadable)}")
    return [message.envelope() for _, message in inserts if message is not None]


def handler(event: Any, context: Any = None) -> list[dict[str, Any]]:
    """Lambda entry point: Pipes sends the batch as a JSON array (a single record when not batching)."""
    records = event if isinstance(event, list) else [event]
    return envelopes([r for r in records if isinstance(r, Mapping)])

__all__ = ["envelopes", "handler"]
