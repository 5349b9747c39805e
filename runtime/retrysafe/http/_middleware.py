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
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Response
from aws_lambda_powertools.event_handler.middlewares import BaseMiddlewareHandler, NextMiddleware

from .._transaction import Transaction
from ._core import HttpAnswer, HttpIdempotency, StoredResponse

#: Key of the :class:`~retrysafe.Transaction` in ``app.context`` while the route runs.
TRANSACTION_KEY = "retrysafe_transaction"


class IdempotencyMiddleware(BaseMiddlewareHandler[Any]):
    """Route middleware running the handler at most once per (tenant, operation, key).

    Accepts the options of :class:`~retrysafe.http._core.HttpIdempotency`. The
    default operation is the matched route (``POST /orders/<order_id>``).
    """

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.idempotency = HttpIdempotency(**options)

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
        answer = idempotency.handle(app.current_event.raw_event, call, remaining, operation,
                                    convert=lambda r: _stored(r, idempotency))
        if isinstance(answer.original, Response):
            return answer.original
        return _response(answer)


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
