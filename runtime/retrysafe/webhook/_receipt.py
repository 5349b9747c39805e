"""A verified delivery as the outbox carries it: inline when it fits the target, else a claim check in S3."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote

from .. import names
from .._claimcheck import S3_ENCODING, encode_body
from .._events import OutboxMessage
from .._limits import fits

#: Longest header value kept as receipt metadata.
MAX_METADATA = 256
#: Largest payload (JSON, UTF-8) kept inline in the outbox item, whatever the target accepts: DynamoDB
#: items hold 400 KB, and the item's other attributes need a little of it.
MAX_INLINE_PAYLOAD = 350 * 1024


def metadata(value: object, default: str) -> str:
    """An unsigned header value usable as metadata: encodable text of bounded length, else ``default``."""
    if not isinstance(value, str) or not value:
        return default
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return default
    return value[:MAX_METADATA]


class Receipt:
    """A verified delivery.

    ``key`` is its signed identity (the dedupe key); ``delivery_id``, ``hook``
    and ``event`` are what the sender said, and those named in ``unsigned``
    came from headers the signature does not cover (metadata: never base an
    effect on them alone).
    """

    __slots__ = ("body", "delivery_id", "event", "hook", "key", "source", "unsigned")

    def __init__(self, source: str, hook: str, delivery_id: str, event: str, body: bytes, key: str | None = None,
                 unsigned: frozenset[str] = frozenset()) -> None:
        self.source, self.hook, self.delivery_id, self.event, self.body = source, hook, delivery_id, event, body
        self.key = key or delivery_id
        self.unsigned = unsigned

    def metadata(self) -> dict[str, Any]:
        """Everything but the body."""
        return {"source": self.source, "hook": self.hook, "delivery_id": self.delivery_id, "event": self.event,
                "key": self.key, "unsigned": sorted(self.unsigned), "body_size": len(self.body),
                "body_sha256": hashlib.sha256(self.body).hexdigest()}

    def payload(self) -> dict[str, Any]:
        """The inline outbox payload: metadata and the body (text, or base64 when not UTF-8)."""
        text, encoding = encode_body(self.body)
        return {**self.metadata(), "body": text, "body_encoding": encoding}

    def claim_check_payload(self) -> dict[str, Any]:
        """The outbox payload when the body is in S3: the metadata, ``body_encoding: "s3"`` and no body (the
        event's envelope carries the pointer: :mod:`retrysafe._claimcheck`)."""
        return {**self.metadata(), "body_encoding": S3_ENCODING}

    def object_key(self) -> str:
        """The S3 key: source, scope hook and delivery identity, plus the body digest (never overwritten)."""
        identity = hashlib.sha256(self.key.encode("utf-8")).hexdigest()
        hook = self.hook if "hook" not in self.unsigned else "-"
        return (f"{names.CLAIM_CHECK_PREFIX}{quote(self.source, safe='')}/{quote(hook, safe='')[:200]}/{identity}/"
                f"{hashlib.sha256(self.body).hexdigest()}")

    def fits_inline(self, payload: dict[str, Any]) -> tuple[bool, str]:
        """Whether the outbox event carrying ``payload`` fits the configured target, and why not."""
        stored = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        if stored > MAX_INLINE_PAYLOAD:
            return False, f"the receipt is {stored} bytes as stored (a DynamoDB item keeps at most {MAX_INLINE_PAYLOAD})"
        message = OutboxMessage(event_id="0" * 36, event_type=names.WEBHOOK_RECEIPT_EVENT, aggregate_type=f"webhook:{self.source}",
                                aggregate_id=self.key, payload=payload, occurred_at="2000-01-01T00:00:00.000+00:00")
        size, limit, kind = fits(message)
        return size <= limit, f"the receipt would be a {size}-byte message; {kind} accepts {limit}"
