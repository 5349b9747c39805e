"""The transactional outbox: events committed with the business change, then published.

A handler appends events with ``txn.append_event`` (see :class:`retrysafe.Transaction`);
they are committed with its record and published afterwards by the functions the
constructs deploy from these modules:

=======================================  ===========================================================
module                                   what it holds
=======================================  ===========================================================
:mod:`retrysafe.outbox.publisher`        the stream publisher (Lambda ``handler``)
:mod:`retrysafe.outbox.sweeper`          republishes what the stream missed (Lambda ``handler``)
:mod:`retrysafe.outbox.pipe`             the EventBridge Pipes enrichment (Lambda ``handler``)
:mod:`retrysafe.outbox.parked`           parked events: ``list_parked``, ``republish``
=======================================  ===========================================================

This package exports what code outside those functions uses: an event as appended
(:class:`OutboxEvent`) and as stored and published (:class:`OutboxMessage`, :func:`event_id`),
the :class:`Publisher` and its targets (:class:`EventBridgeTarget`, :class:`SnsTarget`,
:class:`SqsTarget`, the :class:`Target` protocol, :class:`Refusal`, :func:`target_from_env`),
the outbox INSERTs among DynamoDB stream records (:func:`outbox_inserts`), and
:class:`ClaimCheck` for payloads too large for an event (store them in S3, append a reference).

Limits per target, from the services' documentation (checked November 2026):

=============  ==========================================  ===========================================
target         per message                                 per request
=============  ==========================================  ===========================================
EventBridge    ``PutEvents`` entry < 256 KB: 14 bytes for  10 entries, total entry size < 256 KB
               ``Time`` + UTF-8 bytes of ``Source``,
               ``DetailType``, ``Detail`` and ``Resources``
SNS            ``PublishBatch``: body + message attributes  10 entries, sum of all messages <= the same
               <= the topic's ``MaximumMessageSize``        limit (256 KiB unless raised, 1 MiB max)
               (256 KiB default, up to 1 MiB)
SQS            ``SendMessageBatch``: body + message         10 entries, sum of all messages <= 1 MiB
               attributes <= the queue's
               ``MaximumMessageSize`` (up to 1 MiB since
               2025; 256 KiB here unless raised)
=============  ==========================================  ===========================================

``RETRYSAFE_OUTBOX_MAX_MESSAGE_BYTES`` raises the SNS/SQS per-message limit to what the topic or
queue is configured for (at most 1 MiB). Producers that append events learn the target kind from
``RETRYSAFE_OUTBOX_TARGET`` (``eventbridge``, ``sns`` or ``sqs``; the constructs set it); without
it an event must fit the strictest target.
"""

from .._claimcheck import ClaimCheck
from .._events import OutboxEvent, OutboxMessage, event_id
from ._stream import outbox_inserts
from ._targets import EventBridgeTarget, Refusal, SnsTarget, SqsTarget, Target, target_from_env
from .publisher import Publisher

__all__ = ["ClaimCheck", "EventBridgeTarget", "OutboxEvent", "OutboxMessage", "Publisher", "Refusal", "SnsTarget",
           "SqsTarget", "Target", "event_id", "outbox_inserts", "target_from_env"]
