"""The transactional outbox: events committed with the business change, then published.

=======================================  ===========================================================
module                                   what it holds
=======================================  ===========================================================
:mod:`retrysafe._events`           an event as appended (:class:`OutboxEvent`) and as stored
                                         (:class:`OutboxMessage`); the item layout and event ids
:mod:`retrysafe.outbox._targets`          EventBridge, SNS and SQS targets, their limits, size checks
:mod:`retrysafe.outbox._stream`           the outbox INSERTs among DynamoDB stream records
:mod:`retrysafe.outbox.publisher`        the stream publisher (Lambda ``handler``) and :class:`Publisher`
:mod:`retrysafe.outbox._index`            the sparse index of unpublished and parked events
:mod:`retrysafe.outbox.sweeper`          republishes what the stream missed (Lambda ``handler``)
:mod:`retrysafe.outbox.parked`           lists and republishes parked events (``python -m``)
:mod:`retrysafe.outbox.pipe`             the EventBridge Pipes enrichment (Lambda ``handler``)
=======================================  ===========================================================

Importing this package loads only :mod:`retrysafe._events` (a handler's
transaction needs it; the publishing side is imported where it runs). The
modules ``retrysafe.outbox_publisher``, ``retrysafe.outbox_sweeper``,
``retrysafe.outbox_pipe`` and ``retrysafe.outbox_parked`` are aliases of the
modules above, kept for functions deployed with those handler paths.
"""

from .._events import (
    OUTBOX_KIND,
    OUTBOX_PREFIX,
    PARKED,
    UNPUBLISHED_ATTRIBUTE,
    UNPUBLISHED_SHARDS,
    OutboxEvent,
    OutboxMessage,
    event_id,
)

__all__ = ["OUTBOX_KIND", "OUTBOX_PREFIX", "PARKED", "UNPUBLISHED_ATTRIBUTE", "UNPUBLISHED_SHARDS", "OutboxEvent",
           "OutboxMessage", "event_id"]
