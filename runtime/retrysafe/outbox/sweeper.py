"""The outbox sweeper: republishes outbox items that were never marked published.

Stream records live 24 hours; a publisher that kept failing, a stream that was
disabled, or a record sent to the on-failure destination would otherwise lose
the event. Run ``handler`` on a schedule (every few minutes). It queries the
sparse GSI ``outbox-unpublished`` for each shard ``u0``..``u7`` with
``at`` (the event's commit time, never the ``occurred_at`` its handler supplied)
older than now minus ``RETRYSAFE_SWEEP_AFTER_SECONDS`` (default 900),
and publishes what it finds through the same :class:`~retrysafe.outbox.publisher.Publisher`
as the stream publisher, which marks each accepted item published and parks
what the target refuses permanently (parked items leave the shards, so they are
not retried forever; see :mod:`retrysafe.outbox.parked`). An event may reach
consumers twice (stream and sweeper); consumers dedupe on its id.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import names
from .._config import env_int
from .._events import UNPUBLISHED_SHARDS, OutboxMessage
from .._observability import telemetry
from ..errors import ConfigurationError, SweepIncompleteError
from ._index import pages
from ._targets import MAX_ENTRIES
from .publisher import Publisher, default_publisher

DEFAULT_SWEEP_AFTER_SECONDS = 900
#: Stop starting new pages when the invocation has less than this left (milliseconds).
TIME_RESERVE_MS = 10_000


def sweep(publisher: Publisher, older_than_seconds: float, *, now: datetime | None = None,
          remaining_ms: Callable[[], int] | None = None) -> dict[str, int]:
    """Republish every unpublished item committed more than ``older_than_seconds`` ago; returns counts.

    Raises :class:`SweepIncompleteError` (after trying everything) when some events failed.
    """
    cutoff = ((now or datetime.now(UTC)) - timedelta(seconds=older_than_seconds))
    cutoff_text = cutoff.astimezone(UTC).isoformat(timespec="milliseconds")
    republished = failed = 0

    def keep_going() -> bool:
        return remaining_ms is None or remaining_ms() > TIME_RESERVE_MS

    for shard in range(UNPUBLISHED_SHARDS):
        for items in pages(publisher.store, f"u{shard}", before=cutoff_text, limit=MAX_ENTRIES * 10,
                           keep_going=keep_going):
            page = [OutboxMessage.from_item(item) for item in items]
            missed = publisher.publish(page)
            failed += len(missed)
            republished += len(page) - len(missed)
    counts = {"republished": republished, "failed": failed}
    telemetry.logger.info("outbox sweep", extra=counts)
    if failed:
        raise SweepIncompleteError(f"{failed} outbox events could not be published; the next sweep retries them")
    return counts


def sweep_after_seconds(environ: Mapping[str, str] | None = None) -> int:
    """``RETRYSAFE_SWEEP_AFTER_SECONDS`` (default 900): how old an unpublished item must be to be swept."""
    value = env_int(os.environ if environ is None else environ, names.SWEEP_AFTER_ENV, DEFAULT_SWEEP_AFTER_SECONDS)
    if value < 0:
        raise ConfigurationError(f"{names.SWEEP_AFTER_ENV} must not be negative, got {value}")
    return value


def handler(event: Any = None, context: Any = None, publisher: Publisher | None = None) -> dict[str, int]:
    """Lambda entry point for the schedule: sweep with the publisher configured from the environment."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    try:
        return sweep(publisher or default_publisher(), sweep_after_seconds(), remaining_ms=remaining)
    finally:
        telemetry.flush()

__all__ = ["DEFAULT_SWEEP_AFTER_SECONDS", "TIME_RESERVE_MS", "handler", "sweep", "sweep_after_seconds"]
