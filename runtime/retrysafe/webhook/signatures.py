"""Webhook providers: how a delivery is signed, identified and named.

Every check is HMAC-SHA256 over the raw body bytes, compared with
:func:`hmac.compare_digest`. Each provider accepts several secrets (rotation):
a signature made with any of them is valid.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from ..errors import RetrysafeError
from ..http.request import HttpRequest

NO_HOOK = "-"


class SignatureError(RetrysafeError):
    """The delivery's signature is missing, malformed, stale or wrong (answered 401; nothing is written)."""


class Provider(Protocol):
    """A webhook sender's conventions."""

    name: str

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Raise :class:`SignatureError` unless the request is signed with one of ``secrets``."""

    def delivery_id(self, request: HttpRequest) -> str | None:
        """The id that stays the same when the sender redelivers."""

    def hook(self, request: HttpRequest) -> str:
        """Which hook (endpoint registration) sent it; scopes the delivery id."""

    def event_name(self, request: HttpRequest) -> str:
        """The sender's event name (``push``, ``invoice.paid``...)."""


def hmac_hex(secret: bytes, message: bytes) -> str:
    """Hex HMAC-SHA256 of ``message``."""
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def _matches(candidates: Sequence[str], secrets: Sequence[bytes], message: bytes) -> bool:
    expected = [hmac_hex(secret, message) for secret in secrets]
    found = False
    for candidate in candidates:
        for digest in expected:  # no early exit: the work does not depend on which one matches
            found |= hmac.compare_digest(candidate.strip().lower().encode(), digest.encode())
    return found


class GitHub:
    """GitHub: ``X-Hub-Signature-256: sha256=<hex>``, ``X-GitHub-Delivery``, ``X-GitHub-Hook-ID``, ``X-GitHub-Event``."""

    name = "github"

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check ``X-Hub-Signature-256``."""
        header = request.header("x-hub-signature-256")
        if not header or not header.startswith("sha256="):
            raise SignatureError("X-Hub-Signature-256 is missing or not of the form sha256=<hex>")
        if not _matches([header[len("sha256="):]], secrets, request.body):
            raise SignatureError("X-Hub-Signature-256 does not match the body")

    def delivery_id(self, request: HttpRequest) -> str | None:
        """``X-GitHub-Delivery`` (reused by GitHub on redelivery)."""
        return request.header("x-github-delivery")

    def hook(self, request: HttpRequest) -> str:
        """``X-GitHub-Hook-ID``: one delivery id is shared by every hook of an event."""
        return request.header("x-github-hook-id") or NO_HOOK

    def event_name(self, request: HttpRequest) -> str:
        """``X-GitHub-Event``."""
        return request.header("x-github-event") or "event"


class Stripe:
    """Stripe-style ``Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]`` over ``"<t>." + body``.

    ``tolerance_seconds`` bounds the age (and the clock skew) of the timestamp,
    which stops replays of a captured request. The delivery id is the event's
    ``id`` in the body; ``endpoint`` names this endpoint for the scope.
    """

    name = "stripe"

    def __init__(self, *, header: str = "Stripe-Signature", tolerance_seconds: float = 300,
                 endpoint: str = NO_HOOK, clock: Callable[[], float] = time.time) -> None:
        self.header, self.tolerance, self.endpoint, self.clock = header, tolerance_seconds, endpoint, clock

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check the timestamp tolerance and the v1 signatures."""
        timestamp, signatures = None, []
        for part in (request.header(self.header) or "").split(","):
            name, _, value = part.strip().partition("=")
            if name == "t":
                timestamp = value
            elif name == "v1":
                signatures.append(value)
        if timestamp is None or not timestamp.isdigit() or not signatures:
            raise SignatureError(f"{self.header} is missing or lacks t= and v1=")
        if abs(self.clock() - int(timestamp)) > self.tolerance:
            raise SignatureError(f"{self.header} timestamp is outside the {self.tolerance:g}s tolerance")
        if not _matches(signatures, secrets, timestamp.encode() + b"." + request.body):
            raise SignatureError(f"no v1 signature in {self.header} matches the body")

    def delivery_id(self, request: HttpRequest) -> str | None:
        """The event id (``evt_...``) in the JSON body."""
        return _body_field(request, "id")

    def hook(self, request: HttpRequest) -> str:
        """The configured endpoint name."""
        return self.endpoint

    def event_name(self, request: HttpRequest) -> str:
        """The event ``type`` in the JSON body."""
        return _body_field(request, "type") or "event"


class GenericHmac:
    """A hex HMAC-SHA256 of the body in one header (optionally prefixed, e.g. ``sha256=``), delivery id in another."""

    name = "hmac"

    def __init__(self, *, signature_header: str = "X-Signature", delivery_header: str = "X-Webhook-Id",
                 event_header: str = "X-Webhook-Event", hook_header: str | None = None,
                 prefix: str = "sha256=") -> None:
        self.signature_header, self.delivery_header = signature_header, delivery_header
        self.event_header, self.hook_header, self.prefix = event_header, hook_header, prefix

    def verify(self, request: HttpRequest, secrets: Sequence[bytes]) -> None:
        """Check the signature header (the prefix is optional)."""
        value = request.header(self.signature_header)
        if not value:
            raise SignatureError(f"{self.signature_header} is missing")
        if self.prefix and value.startswith(self.prefix):
            value = value[len(self.prefix):]
        if not _matches([value], secrets, request.body):
            raise SignatureError(f"{self.signature_header} does not match the body")

    def delivery_id(self, request: HttpRequest) -> str | None:
        """The delivery header."""
        return request.header(self.delivery_header)

    def hook(self, request: HttpRequest) -> str:
        """The hook header, when configured."""
        return (request.header(self.hook_header) if self.hook_header else None) or NO_HOOK

    def event_name(self, request: HttpRequest) -> str:
        """The event header."""
        return request.header(self.event_header) or "event"


PROVIDERS: dict[str, Callable[[], Provider]] = {"github": GitHub, "stripe": Stripe, "hmac": GenericHmac}


def _body_field(request: HttpRequest, name: str) -> str | None:
    try:
        doc = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        return None
    value = doc.get(name) if isinstance(doc, dict) else None
    return str(value) if value not in (None, "") else None
