"""``@idempotent_http``: the HTTP contract for plain Lambda handlers behind API Gateway (REST v1, HTTP API v2),
Lambda function URLs and Application Load Balancers."""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, Protocol, cast

from .._adapter import lambda_entry_point, takes_options
from ..transaction import Transaction
from .core import HttpAnswer, HttpIdempotency, StoredResponse
from .request import ALB_MULTI_VALUE, PROXY

Handler = Callable[[Any, Any, Transaction], Any]


class HttpLambdaHandler(Protocol):
    """What ``@idempotent_http`` returns: the Lambda handler, with its :class:`HttpIdempotency` attached."""

    idempotency: HttpIdempotency

    def __call__(self, event: Any, context: Any) -> dict[str, Any]: ...


@takes_options
def idempotent_http(func: Handler, **options: Any) -> HttpLambdaHandler:
    """Make an API Gateway Lambda handler idempotent (``@idempotent_http`` or ``@idempotent_http(**options)``).

    The handler receives a third argument, the :class:`~retrysafe.Transaction`
    in which it buffers its DynamoDB writes and outbox events; they commit
    with the completed record in one transaction. Options are those of
    :class:`~retrysafe.http.core.HttpIdempotency` (``operation``, ``mode``,
    ``tenant``, ``horizon_seconds``...). Configuration errors are raised here,
    at cold start.

    Example::

        @idempotent_http(operation="CreateOrder")
        def handler(event, context, txn):
            order_id = txn.derive_key("order")
            txn.put({"pk": f"order#{order_id}", "total": 42}, table="orders")
            return {"statusCode": 201, "body": json.dumps({"id": order_id})}
    """
    idempotency = HttpIdempotency(**options)

    def wrapper(event: Any, context: Any) -> dict[str, Any]:
        def call(txn: Transaction) -> tuple[StoredResponse, Any]:
            original = func(event, context, txn)
            return to_stored(original, idempotency), original

        remaining = getattr(context, "get_remaining_time_in_millis", None)
        answer = idempotency.handle(event, call, remaining, convert=lambda r: to_stored(r, idempotency))
        return to_proxy(answer)

    return cast(HttpLambdaHandler, lambda_entry_point(func, wrapper, idempotency=idempotency))


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
