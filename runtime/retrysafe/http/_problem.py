"""RFC 9457 ``application/problem+json`` answers for every refusal in the HTTP contract."""

from __future__ import annotations

import json

from .._value import Value, set_field
from ..errors import (
    BusinessConditionFailedError,
    EventTooLargeError,
    FencingError,
    InvalidInputError,
    InvalidKeyError,
    KeyReuseMismatchError,
    MalformedRequestError,
    RequestInFlightError,
    StoreRejectedError,
    StoreUnavailableError,
    TenantRequiredError,
    TransactionRaced,
    TransactionTooLargeError,
)

PROBLEM_CONTENT_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:retrysafe:problem:"


class Problem(Value):
    """One problem document and the HTTP status and headers that carry it."""

    __slots__ = ("detail", "headers", "slug", "status", "title")

    detail: str
    headers: dict[str, str]
    slug: str
    status: int
    title: str

    def __init__(self, status: int, slug: str, title: str, detail: str,
                 headers: dict[str, str] | None = None) -> None:
        set_field(self, "status", status)
        set_field(self, "slug", slug)
        set_field(self, "title", title)
        set_field(self, "detail", detail)
        set_field(self, "headers", headers or {})

    def body(self) -> str:
        """The JSON document."""
        return json.dumps({"type": TYPE_PREFIX + self.slug, "title": self.title, "status": self.status,
                           "detail": self.detail})

    def all_headers(self) -> dict[str, str]:
        """Content-Type plus the problem's own headers (e.g. ``Retry-After``)."""
        return {"Content-Type": PROBLEM_CONTENT_TYPE, **self.headers}


def problem_for(error: Exception) -> Problem | None:
    """The problem for a retrysafe refusal, or ``None`` for errors that must propagate."""
    if isinstance(error, InvalidKeyError):
        slug = "idempotency-key-missing" if error.missing else "idempotency-key-invalid"
        title = "Idempotency-Key is missing" if error.missing else "Idempotency-Key is malformed"
        return Problem(400, slug, title, str(error))
    if isinstance(error, TenantRequiredError):
        return Problem(401, "tenant-required", "Authenticated tenant required", str(error))
    if isinstance(error, KeyReuseMismatchError):
        return Problem(422, "idempotency-key-reused", "Idempotency-Key reused with a different request",
                       "This key was already used for a request with a different method, route, query or body. "
                       "Use a new key for a new intent.")
    if isinstance(error, RequestInFlightError):
        return Problem(409, "request-in-progress", "A request with this Idempotency-Key is in progress",
                       "Retry after the time given in Retry-After to receive its result.",
                       {"Retry-After": str(error.retry_after_seconds)})
    if isinstance(error, FencingError):
        return Problem(409, "request-superseded", "This attempt was superseded by a retry of the same request",
                       str(error), {"Retry-After": "1"})
    if isinstance(error, BusinessConditionFailedError):
        return Problem(409, "state-conflict", "The request conflicts with the current state", str(error))
    if isinstance(error, StoreUnavailableError):
        return Problem(503, "store-unavailable", "Idempotency store temporarily unavailable",
                       "Retry with the same Idempotency-Key: a request that was applied is replayed, "
                       "one that was not runs.", {"Retry-After": str(error.retry_after_seconds)})
    if isinstance(error, EventTooLargeError):
        return Problem(500, "event-too-large", "An outbox event is too large for its target", str(error))
    if isinstance(error, TransactionRaced):
        return Problem(409, "transaction-conflict", "A concurrent request changed the same items",
                       "Nothing was committed; retry with the same Idempotency-Key.", {"Retry-After": "1"})
    if isinstance(error, TransactionTooLargeError):
        return Problem(500, "result-too-large", "The result could not be stored", str(error))
    if isinstance(error, StoreRejectedError):
        _log_server_error(error)
        return Problem(500, "store-rejected", "The idempotency store rejected the request",
                       "Nothing was committed. This is a fault of the service, not of the request; "
                       "retrying does not help.")
    if isinstance(error, (MalformedRequestError, InvalidInputError)):
        return Problem(400, "malformed-request", "Malformed request", str(error))
    return None


def _log_server_error(error: Exception) -> None:
    """The deployer needs the details the client's problem leaves out (table names, DynamoDB's message)."""
    from .._observability import telemetry

    telemetry.logger.error(f"{type(error).__name__}: {error}")
