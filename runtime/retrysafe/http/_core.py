"""The HTTP half of the contract, shared by the Lambda decorator and the Powertools middleware.

Both adapters reduce a handler's answer to a :class:`StoredResponse` and let
:class:`HttpIdempotency` decide: run, replay, or refuse with problem+json.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from http import HTTPStatus
from typing import Any

from .. import names
from .._adapter import SubscriberName, Wired, flushes_telemetry, positive_lease
from .._config import Mode, idempotency_disabled
from .._cutover import PowertoolsCutover
from .._engine import Completion, Engine, Intent
from .._fingerprint import is_unicode
from .._keys import Scope, parse_key
from .._replay import ReplayHook, ReplayInfo
from .._select import FingerprintSelector, KeySelector, Selector
from .._store import DynamoStore
from .._tenant import Tenant, checked_tenant, tenant_of
from .._transaction import Transaction
from .._value import Value, set_field
from ..errors import (
    BusinessConditionFailedError,
    ConfigurationError,
    InvalidInputError,
    KeyNotFoundError,
    RetrysafeError,
    TenantRequiredError,
)
from ._problem import Problem, problem_for
from ._request import ALB_MULTI_VALUE, PROXY, HttpRequest, parse_event
from ._tenant import default_tenant

DEFAULT_REPLAY_HEADERS = ("content-type", "location", "content-location", "etag", "last-modified")


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
    (returned untouched: all headers, cookies). ``shape``: the response format
    the request's source expects (:data:`~retrysafe.http._request.PROXY`,
    ``ALB``, ``ALB_MULTI_VALUE``). ``replay``: a replay's metadata, for the ``on_replay`` hook.
    """

    __slots__ = ("original", "replay", "replayed", "response", "shape")

    original: Any
    replay: ReplayInfo | None
    replayed: bool
    response: StoredResponse
    shape: str

    def __init__(self, response: StoredResponse, replayed: bool = False, original: Any = None,
                 shape: str = PROXY, replay: ReplayInfo | None = None) -> None:
        set_field(self, "response", response)
        set_field(self, "replayed", replayed)
        set_field(self, "original", original)
        set_field(self, "shape", shape)
        set_field(self, "replay", replay)

    def headers(self) -> dict[str, str]:
        """Response headers, with ``Idempotent-Replayed: true`` on replays."""
        if self.replayed:
            return {**self.response.headers, names.REPLAYED_HEADER: "true"}
        return dict(self.response.headers)


def problem_answer(problem: Problem, shape: str = PROXY) -> HttpAnswer:
    """A problem+json answer, in the response ``shape`` of the request's source."""
    return HttpAnswer(StoredResponse(problem.status, problem.all_headers(), problem.body()), shape=shape)


class HttpIdempotency(Wired):
    """Configuration and engine of one idempotent HTTP operation.

    Its options are those of :func:`~retrysafe.http.idempotent_http`, documented there with their
    defaults; the decorator and :class:`~retrysafe.IdempotencyMiddleware` build one of these.
    """

    def __init__(self, *, operation: str | None = None, mode: Mode | str | None = None,
                 header: str | None = None, key: Selector | None = None, key_required: bool = True,
                 subscriber: str | None = None, tenant: Tenant[HttpRequest] = default_tenant,
                 fingerprint_query: Collection[str] | None = None, fingerprint: Selector | None = None,
                 replay_headers: Collection[str] = DEFAULT_REPLAY_HEADERS,
                 horizon_seconds: int | None = None, lease_seconds: float | None = None,
                 wait_for_in_flight: float = 0.0,
                 on_state_conflict: Callable[[BusinessConditionFailedError, Any], Any] | None = None,
                 retry_hints: bool = True, powertools_cutover: PowertoolsCutover | None = None,
                 on_replay: ReplayHook | None = None, store: DynamoStore | None = None,
                 engine: Engine | None = None) -> None:
        self.mode = Mode.parse(mode) if mode is not None else Mode.ATOMIC  # the decorator chooses by the handler
        self.operation = operation
        if key is not None and header is not None:
            raise ConfigurationError("pass key= or header=, not both: key= takes the idempotency key from the "
                                     "request instead of a header")
        #: The key's header, read unless ``key`` (the selector over the event) is set.
        self.header = header if header is not None else names.IDEMPOTENCY_KEY_HEADER
        self.key = KeySelector(key, objects=True) if key is not None else None
        self.key_required = key_required
        self.subscriber = SubscriberName(subscriber)
        self.tenant = checked_tenant(tenant)
        self.fingerprint_query = fingerprint_query
        self.fingerprint = FingerprintSelector(fingerprint) if fingerprint is not None else None
        self.replay_headers = frozenset(h.lower() for h in replay_headers)
        self.lease_seconds = positive_lease(lease_seconds)
        self.wait_for_in_flight = wait_for_in_flight
        self.on_state_conflict = on_state_conflict
        self.retry_hints = retry_hints
        self.on_replay = on_replay
        self.wire(horizon_seconds, store, engine, powertools_cutover)

    def adopt(self, response: Any) -> Any:
        """Powertools replays the handler's proxy response: stored as this adapter stores a handler's."""
        return to_stored(response, self).to_result()

    def adopts(self, result: Any) -> bool:
        """An adopted answer is stored only where a handler's is: never a 5xx (docs/http.md)."""
        return stores(StoredResponse.from_result(result))

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
            request = parse_event(event)
        except RetrysafeError as error:
            return refusal(error)
        try:
            return self._handle(event, request, call, remaining_ms, operation)
        except BusinessConditionFailedError as error:
            if self.on_state_conflict is not None and convert is not None:
                original = self.on_state_conflict(error, event)
                return HttpAnswer(convert(original), original=original, shape=request.shape)
            return refusal(error, shape=request.shape)
        except RetrysafeError as error:
            return refusal(error, shape=request.shape)

    def _handle(self, event: Any, request: HttpRequest, call: Callable[[Transaction], tuple[StoredResponse, Any]],
                remaining_ms: Callable[[], int] | None, operation: str | None) -> HttpAnswer:
        found = tenant_of(self.tenant, request)
        if found is None:
            raise TenantRequiredError(_NO_TENANT.get(request.source, _NO_TENANT["rest"]))
        tenant = _unicode(found, "the tenant")
        op = _unicode(self.operation or operation or request.route, "the operation")
        disabled = idempotency_disabled()  # no key, no fingerprint, no record: every request runs
        key = None if disabled else self._key(request)

        ran: list[tuple[StoredResponse, Any]] = []

        def work(txn: Transaction) -> Completion:
            response, original = call(txn)
            ran.append((response, original))
            return Completion(response.to_result(), store=stores(response))

        # Powertools' @idempotent hashed the whole Lambda event (its event_key_jmespath selects in it)
        predecessor = self.cutover.predecessor(event) if self.cutover is not None and not disabled else None
        if key is None:  # key_required=False: a client of the old code may still retry without a key header
            outcome = self.engine.execute_unkeyed(Scope(tenant, op, "", adapter=names.HTTP_ADAPTER, subscriber=self.subscriber()), work,
                                                  self.retention, predecessor=predecessor)
        else:
            intent = Intent(Scope(tenant, op, key, adapter=names.HTTP_ADAPTER, subscriber=self.subscriber()),
                            request.fingerprint(self.fingerprint_query, self.fingerprint),
                            self.mode, self.retention, self.lease_seconds, wait_seconds=self.wait_for_in_flight,
                            hinted=self.retry_hints and is_retry(request))
            outcome = self.engine.execute(intent, work, remaining_ms, predecessor=predecessor)
        if ran and not outcome.replayed:  # this run's answer: its response as reduced, not rebuilt from the result
            response, original = ran[-1]
            return HttpAnswer(response, original=original, shape=request.shape)
        return HttpAnswer(StoredResponse.from_result(outcome.result), replayed=outcome.replayed,
                          shape=request.shape, replay=outcome.replay)


    def _key(self, request: HttpRequest) -> str | None:
        """The header's key, or ``key=``'s selection in the event; ``None`` when absent and not required."""
        if self.key is None:
            return parse_key(request.header(self.header), required=self.key_required)
        try:
            return self.key(request.event)
        except KeyNotFoundError:
            if self.key_required:
                raise
            return None


def stores(response: StoredResponse) -> bool:
    """Whether a response is stored: a 5xx is a failure of the server, so its retry runs again (docs/http.md)."""
    return response.status < 500


def is_retry(request: HttpRequest) -> bool:
    """True when the client says this request is a retry: ``Retry-Attempt`` (retrysafe's header) of 2 or
    more, or the AWS SDKs' ``amz-sdk-request`` with ``attempt`` above 1. Anything unparsable is no hint."""
    attempt = request.header(names.RETRY_ATTEMPT_HEADER)
    if attempt is not None and attempt.strip().isdecimal() and int(attempt) > 1:
        return True
    for part in (request.header(names.AWS_SDK_REQUEST_HEADER) or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "attempt" and value.isdecimal() and int(value) > 1:
            return True
    return False


#: Why no tenant was found, per source (the deployer reads it in the 401's detail).
_NO_TENANT = {
    "rest": "this operation needs an authenticated caller; no tenant was found in the authorizer context",
    "function-url": "this operation needs an authenticated caller; a function URL carries one only with "
                    "AuthType AWS_IAM (use it, or pass tenant=None for a public endpoint)",
    "alb": "this operation needs an authenticated caller; a load balancer event carries no authorizer context "
           "(pass a tenant callable, or tenant=None for a public endpoint)",
}


def _unicode(value: str, what: str) -> str:
    """``value`` when it is Unicode text (it is hashed into the record id); else :class:`InvalidInputError`."""
    if not is_unicode(value):
        raise InvalidInputError(f"{what} holds a lone surrogate; it is not Unicode text")
    return value


def refusal(error: Exception, problems: Callable[[Exception], Problem | None] = problem_for, *,
            shape: str = PROXY) -> HttpAnswer:
    """The problem+json answer for a refusal, by ``problems``; errors without one (misconfiguration) propagate."""
    problem = problems(error)
    if problem is None:
        raise error
    return problem_answer(problem, shape)


def to_stored(response: Any, idempotency: HttpIdempotency) -> StoredResponse:
    """Reduce a proxy-integration response (or an HTTP API v2 plain value) to what is stored."""
    if isinstance(response, dict) and "statusCode" in response:
        headers = dict(response.get("headers") or {})
        for name, values in (response.get("multiValueHeaders") or {}).items():
            if values and name not in headers:
                headers[name] = values[0]
        body = response.get("body")
        if body is not None and not isinstance(body, str):
            body = json.dumps(body)
        return StoredResponse(int(response["statusCode"]), idempotency.select_headers(headers), body or "",
                              bool(response.get("isBase64Encoded")))
    # HTTP API v2 semantics: any other value is a 200 JSON body.
    body = response if isinstance(response, str) else json.dumps(response)
    return StoredResponse(200, {"Content-Type": "application/json"}, body)


def to_proxy(answer: HttpAnswer) -> dict[str, Any]:
    """The Lambda proxy response for an answer (the handler's own object on a first execution).

    An ALB target group with multi-value headers on needs ``multiValueHeaders`` in the response
    (it ignores ``headers`` then): a replay or a refusal of such a request answers in that shape.
    """
    if isinstance(answer.original, dict) and "statusCode" in answer.original:
        return answer.original
    response = answer.response
    proxy: dict[str, Any] = {"statusCode": response.status, "headers": answer.headers(), "body": response.body,
                             "isBase64Encoded": response.is_base64}
    if answer.shape == PROXY:
        return proxy
    proxy["statusDescription"] = _status_line(response.status)
    if answer.shape == ALB_MULTI_VALUE:
        proxy["multiValueHeaders"] = {k: [v] for k, v in proxy.pop("headers").items()}
    return proxy


def _status_line(status: int) -> str:
    """``201 Created``: the load balancer's ``statusDescription``."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)
