"""How large an outbox event may be: what producers check when they append one (the core's side of the limits).

Each target counts a message differently (see :mod:`retrysafe.outbox` for the table of limits):
EventBridge 14 bytes for ``Time`` plus the UTF-8 bytes of ``Source``, ``DetailType`` and
``Detail``, below 256 KB; SNS and SQS the body plus the message attributes, up to the topic's or
queue's ``MaximumMessageSize`` (``RETRYSAFE_OUTBOX_MAX_MESSAGE_BYTES``, 256 KiB unless raised,
at most 1 MiB). ``txn.append_event`` and the webhook receiver measure here, so that what they
accept is publishable later; the publishing side (``retrysafe.outbox``) measures the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import names
from ._config import env_int
from ._events import OutboxEvent, OutboxMessage
from .errors import ConfigurationError, EventTooLargeError

KIB = 1024
EVENTBRIDGE_MAX_BYTES = 256 * KIB - 1  # "less than 256 KB", per entry and per request
DEFAULT_MESSAGE_BYTES = 256 * KIB
#: Size EventBridge counts for an entry's ``Time``.
EVENTBRIDGE_TIME_BYTES = 14


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def attributes(message: OutboxMessage) -> dict[str, dict[str, str]]:
    """SNS/SQS message attributes: the event id (consumers' idempotency key) and type."""
    return {names.KEY_MESSAGE_ATTRIBUTE: {"DataType": "String", "StringValue": message.event_id},
            names.EVENT_TYPE_MESSAGE_ATTRIBUTE: {"DataType": "String", "StringValue": message.event_type}}


def message_size(message: OutboxMessage) -> int:
    """SNS/SQS size: the body plus each attribute's name, data type and value (UTF-8 bytes)."""
    size = _utf8(message.body())
    for name, value in attributes(message).items():
        size += _utf8(name) + _utf8(value["DataType"]) + _utf8(value["StringValue"])
    return size


def eventbridge_size(message: OutboxMessage, source: str) -> int:
    """EventBridge's entry size: ``Time`` (14) + ``Source`` + ``DetailType`` + ``Detail``."""
    return EVENTBRIDGE_TIME_BYTES + _utf8(source) + _utf8(message.event_type) + _utf8(message.body())


def max_message_bytes(environ: Mapping[str, str] | None = None) -> int:
    """``RETRYSAFE_OUTBOX_MAX_MESSAGE_BYTES`` (SNS/SQS per-message limit), default 256 KiB, at most 1 MiB."""
    variable = names.OUTBOX_MAX_MESSAGE_ENV
    value = env_int(os.environ if environ is None else environ, variable, DEFAULT_MESSAGE_BYTES, unit="bytes")
    if not 1024 <= value <= names.MAX_MESSAGE_BYTES:
        raise ConfigurationError(f"{variable} must be 1024..{names.MAX_MESSAGE_BYTES}, got {value}")
    return value


def fits(message: OutboxMessage, environ: Mapping[str, str] | None = None) -> tuple[int, int, str]:
    """(size, limit, target) of ``message`` for the configured target kind; the strictest when none is set.

    Used where events are produced (``txn.append_event``, the webhook receiver)
    so that what is accepted there is publishable later.
    """
    env = os.environ if environ is None else environ
    kind = env.get(names.OUTBOX_TARGET_ENV) or (
        names.EVENTBRIDGE_TARGET if env.get(names.EVENT_BUS_ENV) else names.SNS_TARGET if env.get(names.TOPIC_ENV)
        else names.SQS_TARGET if env.get(names.QUEUE_ENV) else "")
    if kind and kind not in names.TARGET_KINDS:
        raise ConfigurationError(f"{names.OUTBOX_TARGET_ENV}={kind!r}: choose one of {', '.join(names.TARGET_KINDS)}")
    source = env.get(names.EVENT_SOURCE_ENV) or names.DEFAULT_EVENT_SOURCE
    if kind == names.EVENTBRIDGE_TARGET:
        return eventbridge_size(message, source), EVENTBRIDGE_MAX_BYTES, kind
    if kind in (names.SNS_TARGET, names.SQS_TARGET):
        return message_size(message), max_message_bytes(env), kind
    size = max(eventbridge_size(message, source), message_size(message))
    return size, min(EVENTBRIDGE_MAX_BYTES, DEFAULT_MESSAGE_BYTES), "any target"


def check_fits(event: OutboxEvent, environ: Mapping[str, str] | None = None) -> None:
    """Refuse an event (:class:`EventTooLargeError`) that the configured target could never accept.

    The exact envelope is measured only when the payload comes near the limit.
    """
    overhead = 2048 + 3 * (len(event.event_type) + len(event.aggregate_type) + len(event.aggregate_id))
    if len(event.payload_text) * 4 + overhead < EVENTBRIDGE_MAX_BYTES:  # far below any limit, even as UTF-8
        return
    size, limit, kind = fits(event.message(), environ)
    if size > limit:
        raise EventTooLargeError(
            f"outbox event {event.event_type!r} would be a {size}-byte message; {kind} accepts {limit} bytes. "
            "Store large content elsewhere (e.g. S3, see retrysafe.outbox.ClaimCheck) and append a reference to it.")
