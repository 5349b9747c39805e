"""The HTTP contract as middleware for Powertools' ``APIGatewayRestResolver`` / ``APIGatewayHttpResolver``.

Example::

    app = APIGatewayRestResolver()
    create_order = IdempotencyMiddleware(operation="CreateOrder")

    @app.post("/orders", middlewares=[create_order])
    def create():
        txn = app.context[TRANSACTION_KEY]
        txn.put({...}, table="orders")
        return Response(201, content_types.APPLICATION_JSON, json.dumps({...}))
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Collection
from typing import Any, cast

from aws_lambda_powertools.event_handler.api_gateway import Response
from aws_lambda_powertools.event_handler.middlewares import BaseMiddlewareHandler, NextMiddleware

from .._config import Mode
from .._cutover import PowertoolsCutover
from .._engine import Engine
from .._invocation import Invocation
from .._replay import ReplayHook, replayed
from .._select import Selector
from .._store import DynamoStore
from .._tenant import Tenant
from .._transaction import Transaction
from ..errors import BusinessConditionFailedError
from ._core import DEFAULT_REPLAY_HEADERS, HttpAnswer, HttpIdempotency, StoredResponse
from ._request import HttpRequest
from ._tenant import default_tenant

#: Key of the :class:`~retrysafe.Transaction` in ``app.context`` while the route runs.
TRANSACTION_KEY = "retrysafe_transaction"


class IdempotencyMiddleware(BaseMiddlewareHandler[Any]):
    """Route middleware running the handler at most once per (tenant, operation, key).

    Its options are those of :func:`~retrysafe.http.idempotent_http`, documented there with their
    defaults. The default operation is the matched route (``POST /orders/<order_id>``); the default
    mode ``Mode.ATOMIC`` (a route always has ``app.context[TRANSACTION_KEY]``).
    """

    def __init__(
        self, *,
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
    ) -> None:
        super().__init__()
        self.idempotency = HttpIdempotency(
            operation=operation, mode=mode, header=header, key=key, key_required=key_required, subscriber=subscriber, tenant=tenant,
            fingerprint_query=fingerprint_query, fingerprint=fingerprint, replay_headers=replay_headers, horizon_seconds=horizon_seconds,
            lease_seconds=lease_seconds, wait_for_in_flight=wait_for_in_flight, on_state_conflict=on_state_conflict,
            retry_hints=retry_hints, powertools_cutover=powertools_cutover, on_replay=on_replay, store=store,
            engine=engine)

    def handler(self, app: Any, next_middleware: NextMiddleware) -> Response[Any]:
        """Run, replay or refuse; see :class:`HttpIdempotency`."""
        idempotency = self.idempotency

        def call(txn: Transaction) -> tuple[StoredResponse, Any]:
            app.append_context(**{TRANSACTION_KEY: txn})
            response = next_middleware(app)
            return _stored(response, idempotency), response

        route = app.context.get("_route")
        operation = f"{route.method} {route.path}" if route is not None else None
        context = app.lambda_context
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        with Invocation(context):  # the route's idempotent functions size their claims by it
            answer = idempotency.handle(app.current_event.raw_event, call, remaining, operation,
                                        convert=lambda r: _stored(r, idempotency))
        if isinstance(answer.original, Response):
            return answer.original
        return cast(Response[Any], replayed(idempotency.on_replay, _response(answer), answer.replay))


def _stored(response: Response[Any], idempotency: HttpIdempotency) -> StoredResponse:
    headers: dict[str, Any] = {}
    for name, value in (response.headers or {}).items():
        headers[name] = value[0] if isinstance(value, list) and value else value
    body = response.body
    is_base64 = False
    if isinstance(body, bytes):
        body, is_base64 = base64.b64encode(body).decode("ascii"), True
    elif body is not None and not isinstance(body, str):
        body = json.dumps(body)
    return StoredResponse(response.status_code, idempotency.select_headers(headers), body or "", is_base64)


def _response(answer: HttpAnswer) -> Response[Any]:
    stored = answer.response
    headers = answer.headers()
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
    body: str | bytes = base64.b64decode(stored.body) if stored.is_base64 else stored.body
    return Response(status_code=stored.status, content_type=content_type, body=body, headers=headers)
