"""``key=`` on ``@idempotent_http`` and ``IdempotencyMiddleware``: Powertools' body-keyed APIs port.

A client's retry is a new Lambda event (new request id, time and trace header): keyed on the body
and fingerprinted without those transport fields, it replays. ``@idempotent`` refuses such events
without ``fingerprint=`` and points at ``idempotent_http``.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from retrysafe import TRANSACTION_KEY, IdempotencyMiddleware, Mode, idempotent, names
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.http._decorator import idempotent_http
from retrysafe.testing._events import DrillContext, alb_event, function_url_event, http_event, rest_event

from tests.helpers import ORDERS, problem

SOURCES: dict[str, Callable[..., dict[str, Any]]] = {
    "v1": rest_event, "v2": http_event, "alb": alb_event, "function-url": function_url_event}
ORDER = {"order_id": "o-1", "user_id": "u-1", "product_id": "p-1", "amount": 5}


def place(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    order = json.loads(event["body"])
    txn.update({"pk": f"order#{order['order_id']}"}, "ADD n :one", values={":one": 1}, table=ORDERS)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"order": order["order_id"], "run": str(uuid.uuid4())})}


def placed(ddb: Any, order: str = "o-1") -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": f"order#{order}"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def request(source: str, body: Any = ORDER, **options: Any) -> dict[str, Any]:
    """A request without an Idempotency-Key header, as a Powertools client sends it."""
    options.setdefault("key", None)
    if source in ("alb", "function-url"):
        options.pop("tenant", None)
    return SOURCES[source](body, **options)


def retried(event: dict[str, Any]) -> dict[str, Any]:
    """The client's retry of ``event``: what API Gateway and the load balancer set anew for each request."""
    again = copy.deepcopy(event)
    context = again["requestContext"]
    if "elb" not in context:
        context.update(requestId=str(uuid.uuid4()), time="02/Dec/2026:15:00:09 +0000", timeEpoch=1796223609000)
    trace = f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]}"
    for headers in (again.get("headers"), again.get("multiValueHeaders")):
        if isinstance(headers, dict):
            headers["x-amzn-trace-id"] = [trace] if headers is again.get("multiValueHeaders") else trace
    return again


def tenants(source: str) -> dict[str, Any]:
    return {"tenant": None} if source in ("alb", "function-url") else {}


SELECTORS = {
    "member": "powertools_json(body).order_id",
    "subset": "powertools_json(body).[user_id, product_id]",
    "whole body": "powertools_json(body)",
    "callable": lambda event: json.loads(event["body"])["order_id"],
}


@pytest.mark.parametrize("selector", list(SELECTORS))
@pytest.mark.parametrize("source", list(SOURCES))
def test_a_retry_of_a_body_keyed_request_replays(store: Any, ddb: Any, calls: Any, source: str,
                                                 selector: str) -> None:
    handler = idempotent_http(operation="PlaceOrder", key=SELECTORS[selector], store=store, **tenants(source))(place)
    first_event = request(source)
    first = handler(first_event, DrillContext())
    assert first["statusCode"] == 201
    calls.reset()
    again = handler(retried(first_event), DrillContext())
    assert again["statusCode"] == 201 and again["headers"][names.REPLAYED_HEADER] == "true"
    assert again["body"] == first["body"] and placed(ddb) == 1
    assert calls.calls == {"TransactWriteItems": 1}  # as a header-keyed replay: one round trip, no handler


@pytest.mark.parametrize("source", list(SOURCES))
def test_the_same_key_with_another_body_path_or_query_is_refused(store: Any, ddb: Any, source: str) -> None:
    handler = idempotent_http(operation="PlaceOrder", key="powertools_json(body).order_id", store=store,
                              **tenants(source))(place)
    assert handler(request(source), DrillContext())["statusCode"] == 201
    other = handler(request(source, {**ORDER, "amount": 9}), DrillContext())
    assert other["statusCode"] == 422 and problem(other)["title"].startswith("Idempotency-Key reused")
    elsewhere = {"v1": {"path": "/orders/2"}, "v2": {"route": "/orders/2"}, "alb": {"path": "/orders/2"},
                 "function-url": {"path": "/orders/2"}}[source]
    assert handler(request(source, **elsewhere), DrillContext())["statusCode"] == 422
    if source in ("v1", "v2"):
        assert handler(request(source, query={"dry": "1"}), DrillContext())["statusCode"] == 422
    assert placed(ddb) == 1


def test_what_a_body_key_cannot_tell_apart_a_second_identical_order_replays(store: Any, ddb: Any) -> None:
    """docs/http.md: the same tenant ordering the same thing twice on purpose gets the first order back."""
    handler = idempotent_http(operation="PlaceOrder", key="powertools_json(body)", store=store)(place)
    first = handler(http_event(ORDER, key=None), DrillContext())
    second = handler(http_event(ORDER, key=None), DrillContext())
    assert second["headers"][names.REPLAYED_HEADER] == "true" and second["body"] == first["body"]
    other_tenant = handler(http_event(ORDER, key=None, tenant="tenant-b"), DrillContext())
    assert names.REPLAYED_HEADER not in other_tenant["headers"] and placed(ddb) == 2
    # a whole-body key: another body is another key, so another intent (not a 422)
    assert handler(http_event({**ORDER, "amount": 9}, key=None), DrillContext())["statusCode"] == 201
    assert placed(ddb) == 3


def test_key_replaces_the_header(store: Any, ddb: Any) -> None:
    handler = idempotent_http(operation="PlaceOrder", key="powertools_json(body).order_id", store=store)(place)
    first = handler(http_event(ORDER, key="header-1"), DrillContext())
    again = handler(http_event(ORDER, key="header-2"), DrillContext())
    assert again["headers"][names.REPLAYED_HEADER] == "true" and again["body"] == first["body"]
    assert placed(ddb) == 1


def test_key_and_header_together_are_refused_at_decoration(store: Any) -> None:
    with pytest.raises(ConfigurationError, match="key= or header="):
        idempotent_http(operation="PlaceOrder", key="powertools_json(body).order_id", header="X-Key",
                        store=store)(place)
    with pytest.raises(ConfigurationError, match="not a JMESPath expression"):
        idempotent_http(operation="PlaceOrder", key="powertools_json(body).[", store=store)(place)


@pytest.mark.parametrize("source", list(SOURCES))
def test_a_request_without_the_selected_key_is_a_400_when_required(store: Any, ddb: Any, calls: Any,
                                                                   source: str) -> None:
    handler = idempotent_http(operation="PlaceOrder", key="powertools_json(body).order_ref", store=store,
                              **tenants(source))(place)
    calls.reset()
    response = handler(request(source), DrillContext())
    assert response["statusCode"] == 400 and problem(response)["type"].endswith(":idempotency-key-missing")
    assert calls.total == 0 and placed(ddb) == 0


def test_a_request_without_the_selected_key_runs_unprotected_when_optional(store: Any, ddb: Any) -> None:
    handler = idempotent_http(operation="PlaceOrder", key="powertools_json(body).order_ref", key_required=False,
                              store=store)(place)
    for _ in range(2):
        response = handler(http_event(ORDER, key=None), DrillContext())
        assert response["statusCode"] == 201 and names.REPLAYED_HEADER not in response["headers"]
    assert placed(ddb) == 2


@pytest.mark.parametrize("body, kind", [("order_id=o-1", "malformed"), (json.dumps({"order_id": 4.5}), "invalid"),
                                        (json.dumps({"order_id": True}), "invalid")])
def test_a_body_the_key_cannot_be_read_from_is_a_400_with_no_dynamodb_call(store: Any, calls: Any, body: str,
                                                                           kind: str) -> None:
    handler = idempotent_http(operation="PlaceOrder", key="powertools_json(body).order_id", store=store)(place)
    calls.reset()
    response = handler(http_event(raw_body=body, key=None), DrillContext())
    assert response["statusCode"] == 400 and problem(response)["type"].endswith(":idempotency-key-invalid")
    assert calls.total == 0


def test_the_middleware_takes_key_too(store: Any, ddb: Any, calls: Any) -> None:
    app = APIGatewayRestResolver()
    runs: list[int] = []

    @app.post("/orders", middlewares=[IdempotencyMiddleware(key="powertools_json(body).order_id", store=store)])
    def create() -> Response[Any]:
        runs.append(1)
        order = app.current_event.json_body
        app.context[TRANSACTION_KEY].update({"pk": f"order#{order['order_id']}"}, "ADD n :one",
                                            values={":one": 1}, table=ORDERS)
        return Response(201, content_types.APPLICATION_JSON, json.dumps({"order": order["order_id"]}))

    first_event = rest_event(ORDER, key=None)
    assert app.resolve(first_event, DrillContext())["statusCode"] == 201
    calls.reset()
    again = app.resolve(retried(first_event), DrillContext())
    assert again["statusCode"] == 201 and again["multiValueHeaders"][names.REPLAYED_HEADER] == ["true"]
    assert calls.calls == {"TransactWriteItems": 1} and placed(ddb) == 1  # atomic: its buffered writes dropped
    assert app.resolve(rest_event({**ORDER, "amount": 9}, key=None), DrillContext())["statusCode"] == 422
    ran = len(runs)
    missing = app.resolve(rest_event({"amount": 9}, key=None), DrillContext())
    assert missing["statusCode"] == 400 and len(runs) == ran
    with pytest.raises(ConfigurationError):
        IdempotencyMiddleware(key="powertools_json(body).order_id", header="X-Key", store=store)


def test_a_handler_without_txn_runs_claim_first_and_once(store: Any, calls: Any) -> None:
    """A Powertools handler ``(event, context)`` ports as it is: no transaction, so its effects are foreign."""
    runs: list[str] = []

    def charge(event: dict[str, Any], context: Any) -> dict[str, Any]:
        runs.append(context.aws_request_id)
        return {"statusCode": 201, "body": json.dumps({"run": len(runs)})}

    handler = idempotent_http(key="powertools_json(body).order_id", tenant=None, store=store)(charge)
    assert handler.idempotency.mode is Mode.CLAIM_FIRST
    first_event = http_event(ORDER, key=None)
    first = handler(first_event, DrillContext())
    calls.reset()
    again = handler(retried(first_event), DrillContext())
    assert again["body"] == first["body"] and again["headers"][names.REPLAYED_HEADER] == "true" and len(runs) == 1
    assert calls.calls == {"PutItem": 1}  # the claim meets the completed record: no handler run


# -- @idempotent given an HTTP request --------------------------------------------------------------------

@pytest.mark.parametrize("source", list(SOURCES))
def test_idempotent_refers_an_http_request_to_idempotent_http(store: Any, ddb: Any, calls: Any,
                                                              source: str) -> None:
    handler = idempotent(key="powertools_json(body).order_id", store=store)(place)
    calls.reset()
    with pytest.raises(ConfigurationError, match=r"idempotent_http\(key=") as raised:
        handler(request(source), DrillContext())
    assert "o-1" not in str(raised.value) and calls.total == 0 and placed(ddb) == 0
    without_key = idempotent(store=store)(place)
    with pytest.raises(ConfigurationError, match=r"idempotent_http\(key="):
        without_key(request(source), DrillContext())


def test_idempotent_with_a_fingerprint_treats_an_http_request_as_a_plain_event(store: Any, ddb: Any) -> None:
    handler = idempotent(key="powertools_json(body).order_id", fingerprint="body", store=store)(place)
    first_event = http_event(ORDER, key=None)
    first = handler(first_event, DrillContext())
    assert handler(retried(first_event), DrillContext()) == first and placed(ddb) == 1
