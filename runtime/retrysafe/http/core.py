"""The HTTP half of the contract, shared by the Lambda decorator and the Powertools middleware.

Both adapters reduce a handler's answer to a :class:`StoredResponse` and let
:class:`HttpIdempotency` decide: run, replay, or refuse with problem+json.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from .. import names
from .._adapter import flushes_telemetry, wiring
from .._value import Value, set_field
from ..config import Mode
from ..engine import Completion, Engine, Intent
from ..errors import BusinessConditionFailedError, InvalidInputError, RetrysafeError, TenantRequiredError
from ..fingerprint import is_unicode
from ..keys import Scope, parse_key
from ..store import DynamoStore
from ..transaction import Transaction
from .problem import Problem, problem_for
from .request import HttpRequest, parse_event
from .tenant import TenantExtractor, default_tenant

REPLAYED_HEADER = names.REPLAYED_HEADER
DEFAULT_REPLAY_HEADERS = ("content-type", "location", "content-location", "etag", "last-modified")
NO_TENANT = "-"


class StoredResponse(Value):
    """The part of a response that is stored and replayed."""

    __slots__ = ("body", "headers", "is_base64", "status")

    body: str
    headers: dict[str, str]
    is_base64: bool
    status: int

    def __init__(self, status: int, headers: dict[str, str] | None = None, body: str = "",
                 is_base64: bool = False) -> None:
        set_field(self, "status", status)
        set_field(self, "headers", headers if headers is not None else {})
        set_field(self, "body", body)
        set_field(self, "is_base64", is_base64)

    def to_result(self) -> dict[str, Any]:
        """The compact JSON form kept in the record."""
        result: dict[str, Any] = {"s": self.status, "h": self.headers, "b": self.body}
        if self.is_base64:
            result["b64"] = True
        return result

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> StoredResponse:
        """Rebuild from :meth:`to_result`."""
        return cls(int(result["s"]), dict(result.get("h") or {}), str(result.get("b") or ""), bool(result.get("b64")))


class HttpAnswer(Value):
    """What an adapter sends back: a handler response (first or replayed) or a problem.

    ``original`` is the handler's own response object on a first execution
    (returned untouched: all headers, cookies).
    """

    __slots__ = ("original", "replayed", "response")

    original: Any
    replayed: bool
    response: StoredResponse

    def __init__(self, response: StoredResponse, replayed: bool = False, original: Any = None) -> None:
        set_field(self, "response", response)
        set_field(self, "replayed", replayed)
        set_field(self, "original", original)

    def headers(self) -> dict[str, str]:
        """Response headers, with ``Idempotent-Replayed: true`` on replays."""
        if self.replayed:
            return {**self.response.headers, REPLAYED_HEADER: "true"}
        return dict(self.response.headers)


def problem_answer(problem: Problem) -> HttpAnswer:
    """A problem+json answer."""
    return HttpAnswer(StoredResponse(problem.status, problem.all_headers(), problem.body()))


class HttpIdempotency:
    """Configuration and engine of one idempotent HTTP operation.

    ``operation``: a stable name; default the route (``POST /orders``).
    ``mode``: :attr:`Mode.ATOMIC` (local writes only) or :attr:`Mode.CLAIM_FIRST` (foreign effects).
    ``header``: the key header (``Idempotency-Key``). ``key_required``: refuse requests without one (400).
    ``tenant``: extractor of the authenticated tenant, or ``None`` when the API has no tenants.
    ``fingerprint_query``: query parameters that are part of the request's identity (``None`` = all).
    ``replay_headers``: response headers stored and replayed besides status and body.
    ``horizon_seconds``: record lifetime (default ``RETRYSAFE_RETRY_HORIZON_SECONDS``, else 7 days).
    ``wait_for_in_flight``: seconds to wait for an in-flight duplicate before answering 409.
    ``on_state_conflict``: ``(error, event) -> response`` called when a condition on one of the
    handler's own writes failed (nothing was committed), instead of answering 409 ``state-conflict``.
    Its response (same form as the handler's) is returned, not stored. Typical use: a late replay,
    after its record expired, finds the business item whose id derives from the key
    (``error.current``) and answers with it rather than creating a second one.
    ``store``/``engine``: where records live (default ``DynamoStore.from_env()``).
    """

    def __init__(self, *, operation: str | None = None, mode: Mode | str = Mode.ATOMIC,
                 header: str = names.IDEMPOTENCY_KEY_HEADER, key_required: bool = True,
                 tenant: TenantExtractor | None = default_tenant,
                 fingerprint_query: Collection[str] | None = None,
                 replay_headers: Collection[str] = DEFAULT_REPLAY_HEADERS,
                 horizon_seconds: int | None = None, wait_for_in_flight: float = 0.0,
                 on_state_conflict: Callable[[BusinessConditionFailedError, Any], Any] | None = None,
                 store: DynamoStore | None = None, engine: Engine | None = None) -> None:
        self.mode = Mode.parse(mode)
        self.operation = operation
        self.header = header
        self.key_required = key_required
        self.tenant = tenant
        self.fingerprint_query = fingerprint_query
        self.replay_headers = frozenset(h.lower() for h in replay_headers)
        self.wait_for_in_flight = wait_for_in_flight
        self.on_state_conflict = on_state_conflict
        self.retention, self.engine = wiring(horizon_seconds, store, engine)

    def select_headers(self, headers: Mapping[str, Any] | None) -> dict[str, str]:
        """The response headers worth storing."""
        return {k: str(v) for k, v in (headers or {}).items() if k.lower() in self.replay_headers}

    @flushes_telemetry
    def handle(self, event: Any, call: Callable[[Transaction], tuple[StoredResponse, Any]],
               remaining_ms: Callable[[], int] | None = None, operation: str | None = None,
               convert: Callable[[Any], StoredResponse] | None = None) -> HttpAnswer:
        """Run ``call`` at most once for this request's intent; refusals come back as problem answers.

        ``call`` returns the response to store and the handler's original response object;
        ``convert`` reduces an ``on_state_conflict`` response the same way.
        """
        try:
            return self._handle(parse_event(event), call, remaining_ms, operation)
        except BusinessConditionFailedError as error:
            if self.on_state_conflict is not None and convert is not None:
                original = self.on_state_conflict(error, event)
                return HttpAnswer(convert(original), original=original)
            return refusal(error)
        except RetrysafeError as error:
            return refusal(error)

    def _handle(self, request: HttpRequest, call: Callable[[Transaction], tuple[StoredResponse, Any]],
                remaining_ms: Callable[[], int] | None, operation: str | None) -> HttpAnswer:
        tenant = NO_TENANT
        if self.tenant is not None:
            found = self.tenant(request)
            if not found:
                raise TenantRequiredError("this operation needs an authenticated caller; no tenant was found "
                                          "in the authorizer context")
            tenant = _unicode(found, "the tenant")
        op = _unicode(self.operation or operation or request.route, "the operation")
        key = parse_key(request.header(self.header), required=self.key_required)

        originals: list[Any] = []

        def work(txn: Transaction) -> Completion:
            response, original = call(txn)
            originals.append(original)
            return Completion(response.to_result(), store=response.status < 500)

        if key is None:
            outcome = self.engine.execute_unkeyed(Scope(tenant, op, "", namespace=names.HTTP_NAMESPACE), work,
                                                  self.retention)
        else:
            intent = Intent(Scope(tenant, op, key, namespace=names.HTTP_NAMESPACE),
                            request.fingerprint(self.fingerprint_query), self.mode,
                            self.retention, wait_seconds=self.wait_for_in_flight)
            outcome = self.engine.execute(intent, work, remaining_ms)
        original = originals[-1] if originals and not outcome.replayed else None
        return HttpAnswer(StoredResponse.from_result(outcome.result), replayed=outcome.replayed, original=original)


def _unicode(value: str, what: str) -> str:
    """``value`` when it is Unicode text (it is hashed into the record id); else :class:`InvalidInputError`."""
    if not is_unicode(value):
        raise InvalidInputError(f"{what} holds a lone surrogate; it is not Unicode text")
    return value


def refusal(error: Exception, problems: Callable[[Exception], Problem | None] = problem_for) -> HttpAnswer:
    """The problem+json answer for a refusal, by ``problems``; errors without one (misconfiguration) propagate."""
    problem = problems(error)
    if problem is None:
        raise error
    return problem_answer(problem)
