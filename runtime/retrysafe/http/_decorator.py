"""``@idempotent_http``: the HTTP contract for plain Lambda handlers behind API Gateway (REST v1, HTTP API v2),
Lambda function URLs and Application Load Balancers."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol, cast

from .._adapter import chosen_mode, lambda_entry_point, takes_options, takes_transaction
from .._async import blocking
from .._config import Mode
from .._cutover import PowertoolsCutover
from .._engine import Engine
from .._replay import ReplayHook, replayed
from .._select import Selector
from .._store import DynamoStore
from .._tenant import Tenant
from .._transaction import Transaction
from ..errors import BusinessConditionFailedError
from ._core import DEFAULT_REPLAY_HEADERS, HttpIdempotency, StoredResponse, to_proxy, to_stored
from ._request import HttpRequest
from ._tenant import default_tenant

#: What ``@idempotent_http`` decorates: ``handler(event, context, txn)``, or ``handler(event, context)``
#: (a Powertools handler as it was: no transaction, so claim-first by default).
Handler = Callable[[Any, Any, Transaction], Any] | Callable[[dict[str, Any], Any], Any]


class HttpLambdaHandler(Protocol):
    """What ``@idempotent_http`` returns: the Lambda handler, with its :class:`HttpIdempotency` attached."""

    idempotency: HttpIdempotency

    def __call__(self, event: Any, context: Any) -> dict[str, Any]: ...


@takes_options
def idempotent_http(
    func: Handler, /, *,
    operation: str | None = None,
    mode: Mode | str | None = None,
    header: str | None = None,
    key: Selector | None = None,
    key_required: bool = True,
    subscriber: str | None = None,
    tenant: Tenant[HttpRequest] = default_tenant,
    fingerprint_query: Collection[str] | None = None,
    fingerprint: Selector | None = None,
    replay_headers: Collection[str] = DEFAULT_REPLAY_HEADERS,
    horizon_seconds: int | None = None,
    lease_seconds: float | None = None,
    wait_for_in_flight: float = 0.0,
    on_state_conflict: Callable[[BusinessConditionFailedError, Any], Any] | None = None,
    retry_hints: bool = True,
    powertools_cutover: PowertoolsCutover | None = None,
    on_replay: ReplayHook | None = None,
    store: DynamoStore | None = None,
    engine: Engine | None = None,
) -> HttpLambdaHandler:
    """Make an API Gateway Lambda handler idempotent (``@idempotent_http`` or ``@idempotent_http(option=...)``).

    The handler receives a third argument, the :class:`~retrysafe.Transaction`
    in which it buffers its DynamoDB writes and outbox events; they commit
    with the completed record in one transaction. A handler ``(event, context)``
    (a Powertools handler ported as it is) gets none and runs claim-first. Configuration errors are
    raised here, at cold start. The options (the same for
    :class:`~retrysafe.IdempotencyMiddleware` and :class:`HttpIdempotency`):

    - ``operation`` (default: the route, ``POST /orders``): a stable name of the operation.
    - ``mode`` (default ``Mode.ATOMIC``, local writes only, for a handler that takes ``txn``; else
      ``Mode.CLAIM_FIRST``): ``Mode.CLAIM_FIRST`` when the handler has foreign effects
      (``"atomic"`` / ``"claim_first"`` are accepted too).
    - ``header`` (default ``Idempotency-Key``): the key header.
    - ``key`` (default ``None``: the header): the key selected in the request instead, a JMESPath
      expression over the event as Lambda delivers it (Powertools' ``event_key_jmespath`` ports
      verbatim: ``"powertools_json(body).order_id"``, ``"powertools_json(body).[user_id, product_id]"``,
      ``"powertools_json(body)"``, a selected object keyed by its hash) or a callable given the event.
      It replaces the header (passing both is refused). The fingerprint stays method, route, path,
      query and body (``fingerprint=``), never transport fields (request id, time, headers), so a
      client's retry replays; a second identical order of the same tenant replays too (docs/http.md).
    - ``key_required`` (default ``True``): refuse requests without a key (400); when ``False`` they run
      without dedup, each as its own intent (its own ``derive_key()`` values and event ids).
    - ``subscriber`` (default: the deployed function, ``RETRYSAFE_SUBSCRIBER`` else
      ``AWS_LAMBDA_FUNCTION_NAME``, read at the first call): the consumer the records belong to, so
      two functions serving one route keep their own records.
    - ``tenant`` (default :func:`default_tenant`, the authorizer's tenant): the authenticated caller,
      a :data:`~retrysafe.Tenant` of the :class:`HttpRequest`: a callable finding it in the request
      (finding none answers 401 ``tenant-required``), a fixed name, or ``None`` for a public
      endpoint (one tenant for all callers). Never a field the client chooses.
    - ``fingerprint_query`` (default ``None``: all): query parameters that are part of the request's identity.
    - ``fingerprint`` (default ``None``: the whole canonical body): what of the JSON body must match
      between a request and its replays, a JMESPath expression or a callable given the parsed body.
      With ``fingerprint="{order: order, amount: amount}"`` a client that re-sends the order with a
      new ``sent_at`` gets the replay; another amount under the key is still refused (422). Method,
      route and query stay in the fingerprint.
    - ``replay_headers`` (default ``content-type``, ``location``, ``content-location``, ``etag``,
      ``last-modified``): response headers stored and replayed besides status and body.
    - ``horizon_seconds`` (default ``RETRYSAFE_RETRY_HORIZON_SECONDS``, else 7 days): record lifetime;
      under 24 hours is refused.
    - ``lease_seconds`` (default: the invocation's remaining time plus a margin): how long a claim
      holds off other requests with its key before a retry may take it over, for a claim-first
      handler (and a hinted retry's claim). Shorter than the handler can run lets a retry run it
      a second time; set it when the function's timeout is far longer than the handler needs, so
      a retry after a crash takes over sooner than the timeout.
    - ``wait_for_in_flight`` (default ``0.0``): seconds to wait for an in-flight duplicate and replay
      it instead of answering 409.
    - ``on_state_conflict`` (default ``None``: 409 ``state-conflict``): ``(error, event) -> response``
      called when a condition on one of the handler's own writes failed (nothing was committed).
      Its response (same form as the handler's) is returned, not stored. Typical use: a late
      replay, after its record expired, finds the business item whose id derives from the key
      (``error.current``) and answers with it rather than creating a second one.
    - ``retry_hints`` (default ``True``): in atomic mode, a request the client marks as a retry
      (``Retry-Attempt: 2`` or more, or the AWS SDKs' ``amz-sdk-request: attempt=2``...) claims first
      when the record cache misses: a replay costs one ``PutItem`` and no handler run, a first run
      two round trips; a concurrent duplicate then answers 409 (or waits, ``wait_for_in_flight``).
    - ``powertools_cutover`` (default ``None``): a :class:`~retrysafe.PowertoolsCutover`, while
      switching from Powertools idempotency: a first request whose event Powertools completed is
      answered from Powertools' record (see the migration guide).
    - ``on_replay`` (default ``None``): ``hook(response, info) -> response``, called on replays only
      (never on a first execution) with the response about to be returned (the proxy response
      dict here, the Powertools ``Response`` in the middleware) and the replay's
      :class:`~retrysafe.ReplayInfo` (record id, expiry: never the raw key); the caller gets what
      it returns, e.g. with a header saying when the key expires. Refusals (409, 422...) are not
      replays. No DynamoDB call of its own; a hook that raises fails the invocation and leaves the
      record as it is.
    - ``store`` / ``engine`` (default ``DynamoStore.from_env()``, which keeps a record cache per
      container): where records live; a store you construct caches only if given a ``RecordCache``.

    Example::

        @idempotent_http(operation="CreateOrder")
        def handler(event, context, txn):
            order_id = txn.derive_key("order")
            txn.put({"pk": f"order#{order_id}", "total": 42}, table="orders")
            return {"statusCode": 201, "body": json.dumps({"id": order_id})}
    """
    takes_txn = takes_transaction(func, 3)
    call_handler: Callable[..., Any] = blocking(func)
    idempotency = HttpIdempotency(
        operation=operation, mode=chosen_mode(mode, takes_txn), header=header, key=key, key_required=key_required,
        subscriber=subscriber, tenant=tenant,
        fingerprint_query=fingerprint_query, fingerprint=fingerprint, replay_headers=replay_headers,
        horizon_seconds=horizon_seconds, lease_seconds=lease_seconds,
        wait_for_in_flight=wait_for_in_flight, on_state_conflict=on_state_conflict,
        retry_hints=retry_hints, powertools_cutover=powertools_cutover, on_replay=on_replay, store=store,
        engine=engine)

    def wrapper(event: Any, context: Any) -> dict[str, Any]:
        def call(txn: Transaction) -> tuple[StoredResponse, Any]:
            original = call_handler(event, context, txn) if takes_txn else call_handler(event, context)
            return to_stored(original, idempotency), original

        remaining = getattr(context, "get_remaining_time_in_millis", None)
        answer = idempotency.handle(event, call, remaining, convert=lambda r: to_stored(r, idempotency))
        return cast(dict[str, Any], replayed(idempotency.on_replay, to_proxy(answer), answer.replay))

    return cast(HttpLambdaHandler, lambda_entry_point(func, wrapper, idempotency=idempotency))
