"""Alias of :mod:`retrysafe.outbox.publisher`, kept for functions deployed with ``retrysafe.outbox_publisher.handler``.

It exposes the names this module had before the outbox became a package; new code
and new deployments use :mod:`retrysafe.outbox.publisher` (``handler``),
:mod:`retrysafe.outbox._targets` and :mod:`retrysafe.outbox._stream`.
"""

from ._events import OutboxMessage
from .outbox.publisher import BATCH_SIZE, PARKED_METRIC, Publisher, default_publisher, handler
from .outbox._stream import outbox_inserts
from .outbox._targets import (
    BUS_ENV,
    DEFAULT_SOURCE,
    KEY_ATTRIBUTE,
    QUEUE_ENV,
    SOURCE_ENV,
    TOPIC_ENV,
    EventBridgeTarget,
    Refusal,
    SnsTarget,
    SqsTarget,
    Target,
)

__all__ = ["BATCH_SIZE", "BUS_ENV", "DEFAULT_SOURCE", "KEY_ATTRIBUTE", "PARKED_METRIC", "QUEUE_ENV", "SOURCE_ENV",
           "TOPIC_ENV", "EventBridgeTarget", "OutboxMessage", "Publisher", "Refusal", "SnsTarget", "SqsTarget",
           "Target", "default_publisher", "handler", "outbox_inserts"]
