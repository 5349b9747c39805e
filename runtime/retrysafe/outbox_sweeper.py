"""Alias of :mod:`retrysafe.outbox.sweeper`, kept for functions deployed with ``retrysafe.outbox_sweeper.handler``.

New code and new deployments use :mod:`retrysafe.outbox.sweeper` (``handler``).
"""

from .errors import SweepIncompleteError
from .outbox._index import INDEX_NAME
from .outbox.sweeper import (
    DEFAULT_SWEEP_AFTER_SECONDS,
    SWEEP_AFTER_ENV,
    TIME_RESERVE_MS,
    handler,
    sweep,
    sweep_after_seconds,
)

__all__ = ["DEFAULT_SWEEP_AFTER_SECONDS", "INDEX_NAME", "SWEEP_AFTER_ENV", "TIME_RESERVE_MS", "SweepIncompleteError",
           "handler", "sweep", "sweep_after_seconds"]
