"""Alias of :mod:`retrysafe.outbox.pipe`, kept for pipe enrichments deployed with ``retrysafe.outbox_pipe.handler``.

New code and new deployments use :mod:`retrysafe.outbox.pipe` (``handler``).
"""

from .errors import UnreadableOutboxRecordError
from .outbox.pipe import envelopes, handler

__all__ = ["UnreadableOutboxRecordError", "envelopes", "handler"]
