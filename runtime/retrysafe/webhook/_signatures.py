"""Webhook providers: how a delivery is signed, identified and named.

Every check is HMAC-SHA256, compared with :func:`hmac.compare_digest`. Each
provider accepts several secrets (rotation): a signature made with any of them
is valid. Header parsing never raises anything but :class:`SignatureError`:
malformed, oversized or non-ASCII signature headers are answered 401.

What a provider signs decides what the receiver may trust:

- GitHub and the generic HMAC provider sign only the body. Their delivery id,
  hook id and event name travel in unsigned headers, so the receiver dedupes on
  a digest of the signed body (:meth:`GitHub.dedupe_key`) and carries the
  unsigned values as metadata only (listed in ``unsigned``).
- Stripe signs a timestamp and the body; the event id and type are in the body.
- Standard Webhooks signs the message id, the timestamp and the body.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ..errors import ConfigurationError, SignatureError
from ..http._request import HttpRequest

NO_HOOK = "-"
#: Longest signature header accepted (several rotated signatures fit easily).
MAX_SIGNATURE_HEADER = 4096
#: Receipt fields that a provider may take from unsigned headers.
RECEIPT_FIELDS = frozenset({"delivery_id", "hook", "event"})


class Provider(Protocol):
    """A webhook sender's conventions.

    ``unsigned`` names the receipt fields (``delivery_id``, ``hook``, ``event``)
    this provider reads from headers its signature does not cover; the receiver
    never lets them change effects (they are neither part of the dedupe key nor
    of the scope). A provider may also define ``dedupe_key(request)``, the
    signed identity of a delivery; without it the receiver dedupes on a digest
    of the body.
    """

    name: str
    unsigned: frozenset[str]

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Raise :class:`SignatureError` unless the request is signed with one of ``secrets``."""

    def delivery_id(self, request: HttpRequest) -> str | None:
        """The sender's delivery id (metadata when listed in ``unsigned``)."""

    def hook(self, request: HttpRequest) -> str:
        """Which hook (endpoint registration) sent it."""

    def event_name(self, request: HttpRequest) -> str:
        """The sender's event name (``push``, ``invoice.paid``...)."""


def hmac_hex(secret: bytes, message: bytes) -> str:
    """Hex HMAC-SHA256 of ``message``."""
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def body_digest(body: bytes) -> str:
    """``sha256:<hex>`` of the raw body: the identity of a delivery whose provider signs only the body."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _header(request: HttpRequest, name: str) -> str | None:
    """A signature header as ASCII text, or ``None`` when absent; anything else is a :class:`SignatureError`."""
    value: object = request.header(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_SIGNATURE_HEADER or not value.isascii():
        raise SignatureError(f"{name} is malformed (too long or not ASCII)")
    return value


def _matches(candidates: Sequence[bytes], expected: Sequence[bytes]) -> bool:
    found = False
    for candidate in candidates:
        for digest in expected:  # no early exit: the work does not depend on which one matches
            found |= hmac.compare_digest(candidate, digest)
    return found


def _hex_matches(candidates: Sequence[str], secrets: Sequence[bytes], message: bytes) -> bool:
    expected = [hmac_hex(secret, message).encode() for secret in secrets]
    return _matches([c.strip().lower().encode("ascii") for c in candidates], expected)


class GitHub:
    """GitHub: ``X-Hub-Signature-256: sha256=<hex>`` over the body.

    ``X-GitHub-Delivery``, ``X-GitHub-Hook-ID`` and ``X-GitHub-Event`` are not
    signed: they are receipt metadata. The delivery's identity is the body
    digest, so a captured body resent with fresh ids is a replay.
    """

    name = "github"
    unsigned = RECEIPT_FIELDS

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check ``X-Hub-Signature-256``."""
        header = _header(request, "x-hub-signature-256")
        if not header or not header.startswith("sha256="):
            raise SignatureError("X-Hub-Signature-256 is missing or not of the form sha256=<hex>")
        if not _hex_matches([header[len("sha256="):]], secrets, request.body):
            raise SignatureError("X-Hub-Signature-256 does not match the body")

    def dedupe_key(self, request: HttpRequest) -> str:
        """The body digest (the only signed part)."""
        return body_digest(request.body)

    def delivery_id(self, request: HttpRequest) -> str | None:
        """``X-GitHub-Delivery`` (unsigned: metadata)."""
        return request.header("x-github-delivery")

    def hook(self, request: HttpRequest) -> str:
        """``X-GitHub-Hook-ID`` (unsigned: metadata)."""
        return request.header("x-github-hook-id") or NO_HOOK

    def event_name(self, request: HttpRequest) -> str:
        """``X-GitHub-Event`` (unsigned: metadata; GitHub does not put the event name in the body)."""
        return request.header("x-github-event") or "event"


class Stripe:
    """Stripe-style ``Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`` over ``"<t>." + body``.

    ``tolerance_seconds`` bounds the age (and the clock skew) of the timestamp,
    which stops replays of a captured request. The delivery id and event name
    are the event's ``id`` and ``type`` in the (signed) body; ``endpoint``
    names this endpoint for the scope (configuration, hence trusted).
    """

    name = "stripe"
    unsigned: frozenset[str] = frozenset()

    def __init__(self, *, header: str = "Stripe-Signature", tolerance_seconds: float = 300,
                 endpoint: str = NO_HOOK, clock: Callable[[], float] = time.time) -> None:
        self.header, self.tolerance, self.endpoint, self.clock = header, tolerance_seconds, endpoint, clock

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check the timestamp tolerance and the v1 signatures."""
        timestamp, signatures = None, []
        for part in (_header(request, self.header) or "").split(","):
            name, _, value = part.strip().partition("=")
            if name == "t":
                timestamp = value
            elif name == "v1":
                signatures.append(value)
        if timestamp is None or not signatures:
            raise SignatureError(f"{self.header} is missing or lacks t= and v1=")
        _check_timestamp(timestamp, self.clock(), self.tolerance, self.header)
        if not _hex_matches(signatures, secrets, timestamp.encode() + b"." + request.body):
            raise SignatureError(f"no v1 signature in {self.header} matches the body")

    def dedupe_key(self, request: HttpRequest) -> str | None:
        """The event id (signed, in the body)."""
        return self.delivery_id(request)

    def delivery_id(self, request: HttpRequest) -> str | None:
        """The event id (``evt_...``) in the JSON body."""
        return body_field(request.body, "id")

    def hook(self, request: HttpRequest) -> str:
        """The configured endpoint name."""
        return self.endpoint

    def event_name(self, request: HttpRequest) -> str:
        """The event ``type`` in the JSON body."""
        return body_field(request.body, "type") or "event"


class StandardWebhooks:
    """The Standard Webhooks specification (standardwebhooks.com).

    ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` (space-separated
    ``v1,<base64>`` entries, one per secret during a rotation); the signature is
    HMAC-SHA256 over ``"<id>.<timestamp>.<body>"`` keyed with the decoded secret
    (the configured secrets are ``whsec_<base64>`` strings, see :func:`standard_secret`). The id and
    timestamp are signed, so dedupe is exact and a timestamp outside
    ``tolerance_seconds`` (default 5 minutes) is refused. The event name is the
    body's ``type`` (the specification's recommended payload shape).
    """

    name = "standard"
    unsigned: frozenset[str] = frozenset()

    def __init__(self, *, tolerance_seconds: float = 300, endpoint: str = NO_HOOK,
                 clock: Callable[[], float] = time.time) -> None:
        self.tolerance, self.endpoint, self.clock = tolerance_seconds, endpoint, clock

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check the timestamp tolerance and the ``v1`` signatures."""
        msg_id = _header(request, "webhook-id")
        timestamp = _header(request, "webhook-timestamp")
        header = _header(request, "webhook-signature")
        if not msg_id or not timestamp or not header:
            raise SignatureError("webhook-id, webhook-timestamp and webhook-signature are required")
        _check_timestamp(timestamp, self.clock(), self.tolerance, "webhook-timestamp")
        candidates = []
        for entry in header.split(" "):
            version, _, value = entry.partition(",")
            if version != "v1":
                continue
            try:
                candidates.append(base64.b64decode(value, validate=True))
            except (binascii.Error, ValueError):
                continue
        message = msg_id.encode() + b"." + timestamp.encode() + b"." + request.body
        expected = [hmac.new(standard_secret(secret), message, hashlib.sha256).digest() for secret in secrets]
        if not candidates or not _matches(candidates, expected):
            raise SignatureError("no v1 signature in webhook-signature matches")

    def dedupe_key(self, request: HttpRequest) -> str | None:
        """``webhook-id`` (signed)."""
        return self.delivery_id(request)

    def delivery_id(self, request: HttpRequest) -> str | None:
        """``webhook-id``."""
        return request.header("webhook-id")

    def hook(self, request: HttpRequest) -> str:
        """The configured endpoint name."""
        return self.endpoint

    def event_name(self, request: HttpRequest) -> str:
        """The body's ``type``."""
        return body_field(request.body, "type") or "event"


def standard_secret(value: str | bytes) -> bytes:
    """The key bytes of a Standard Webhooks secret (``whsec_<base64>``; the prefix is optional)."""
    try:
        text = value.decode("ascii") if isinstance(value, bytes) else value
        text = text.removeprefix("whsec_")
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        raise ConfigurationError("the Standard Webhooks secret is not base64 (whsec_<base64>)") from None
    if not key:
        raise ConfigurationError("the Standard Webhooks secret is empty")
    return key


class GenericHmac:
    """A hex HMAC-SHA256 of the body in one header (optionally prefixed, e.g. ``sha256=``).

    Only the body is signed: the delivery, event and hook headers are metadata,
    and the delivery's identity is the body digest.
    """

    name = "hmac"
    unsigned = RECEIPT_FIELDS

    def __init__(self, *, signature_header: str = "X-Signature", delivery_header: str = "X-Webhook-Id",
                 event_header: str = "X-Webhook-Event", hook_header: str | None = None,
                 prefix: str = "sha256=") -> None:
        self.signature_header, self.delivery_header = signature_header, delivery_header
        self.event_header, self.hook_header, self.prefix = event_header, hook_header, prefix

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check the signature header (the prefix is optional)."""
        value = _header(request, self.signature_header)
        if not value:
            raise SignatureError(f"{self.signature_header} is missing")
        if self.prefix and value.startswith(self.prefix):
            value = value[len(self.prefix):]
        if not _hex_matches([value], secrets, request.body):
            raise SignatureError(f"{self.signature_header} does not match the body")

    def dedupe_key(self, request: HttpRequest) -> str:
        """The body digest (the only signed part)."""
        return body_digest(request.body)

    def delivery_id(self, request: HttpRequest) -> str | None:
        """The delivery header (unsigned: metadata)."""
        return request.header(self.delivery_header)

    def hook(self, request: HttpRequest) -> str:
        """The hook header, when configured (unsigned: metadata)."""
        return (request.header(self.hook_header) if self.hook_header else None) or NO_HOOK

    def event_name(self, request: HttpRequest) -> str:
        """The event header (unsigned: metadata)."""
        return request.header(self.event_header) or "event"


PROVIDERS: dict[str, Callable[[], Provider]] = {"github": GitHub, "stripe": Stripe, "hmac": GenericHmac,
                                                "standard": StandardWebhooks}


def _check_timestamp(value: str, now: float, tolerance: float, header: str) -> None:
    """A Unix timestamp in seconds: ASCII digits only, at most 12 of them, within ``tolerance`` of ``now``."""
    if not (value.isascii() and value.isdigit() and len(value) <= 12):
        raise SignatureError(f"{header} is not a Unix timestamp in seconds")
    if abs(now - int(value)) > tolerance:
        raise SignatureError(f"{header} is outside the {tolerance:g}s tolerance")


def body_field(body: bytes, name: str) -> str | None:
    """A top-level string/number field of a JSON body, or ``None`` (not JSON, absent, or not encodable)."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    value = doc.get(name) if isinstance(doc, dict) else None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    try:
        text.encode("utf-8")  # a lone surrogate ("\ud800") is valid JSON but no usable id
    except UnicodeEncodeError:
        return None
    return text or None
