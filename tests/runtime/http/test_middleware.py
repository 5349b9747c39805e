"""The same contract through Powertools' event-handler resolvers (REST v1 and HTTP API v2)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import (
    APIGatewayHttpResolver,
    APIGatewayRestResolver,
    Response,
    content_types,
)
from retrysafe import TRANSACTION_KEY, Engine, IdempotencyMiddleware, Mode, names
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import ORDERS


def make_app(resolver_cls: type, store: Any, mode: Mode, **options: Any) -> tuple[Any, list[int]]:
    app = resolver_cls()
    runs: list[int] = []
    create = IdempotencyMiddleware(engine=Engine(store), mode=mode, **options)

    @app.post("/orders/<customer>", middlewares=[create])
    def create_order(customer: str) -> Response:
        runs.append(1)
        txn = app.context[TRANSACTION_KEY]
        order_id = txn.derive_key("order")[:10]
        body = app.current_event.json_body
        txn.put({"pk": f"order#{order_id}", "customer": customer, "amount": body["amount"]}, table=ORDERS)
        if body["amount"] > 1000:
            return Response(402, content_types.APPLICATION_JSON, json.dumps({"error": "declined"}))
        return Response(201, content_types.APPLICATION_JSON, json.dumps({"id": order_id}),
                        headers={"Location": f"/orders/{order_id}"})

    @app.post("/boom", middlewares=[IdempotencyMiddleware(engine=Engine(store), mode=mode)])
    def boom() -> Response:
        runs.append(1)
        return Response(503, content_types.TEXT_PLAIN, "try later")

    return app, runs


CASES = [
    (APIGatewayRestResolver, lambda body, **kw: rest_event(body, resource="/orders/{customer}", path="/orders/c1", **kw)),
    (APIGatewayHttpResolver, lambda body, **kw: {**http_event(body, route="/orders/c1", **kw),
                                                  "routeKey": "POST /orders/{customer}"}),
]


@pytest.mark.parametrize("resolver_cls, event", CASES)
@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_middleware_runs_once_and_replays(ddb, store, calls, resolver_cls, event, mode):
    app, _runs = make_app(resolver_cls, store, mode)
    first = app.resolve(event({"amount": 10}), DrillContext())
    assert first["statusCode"] == 201
    calls.reset()
    again = app.resolve(event({"amount": 10}), DrillContext())
    assert calls.total == 1
    assert again["statusCode"] == 201 and again["body"] == first["body"]
    headers = again.get("headers") or {k: v[0] for k, v in again.get("multiValueHeaders", {}).items()}
    assert headers[names.REPLAYED_HEADER] == "true" and headers["Location"].startswith("/orders/")
    assert headers["Content-Type"] == "application/json"
    assert len(ddb.scan(TableName=ORDERS)["Items"]) == 1


@pytest.mark.parametrize("resolver_cls, event", CASES)
def test_middleware_refusals_are_problem_json(ddb, store, resolver_cls, event):
    app, runs = make_app(resolver_cls, store, Mode.CLAIM_FIRST)
    app.resolve(event({"amount": 10}), DrillContext())
    mismatch = app.resolve(event({"amount": 11}), DrillContext())
    assert mismatch["statusCode"] == 422
    assert json.loads(mismatch["body"])["type"] == "urn:retrysafe:problem:idempotency-key-reused"
    missing = app.resolve(event({"amount": 10}, key=None), DrillContext())
    assert missing["statusCode"] == 400
    assert runs == [1]


@pytest.mark.parametrize("resolver_cls, event", CASES)
def test_middleware_stores_declines_but_not_5xx(ddb, store, resolver_cls, event):
    app, runs = make_app(resolver_cls, store, Mode.CLAIM_FIRST)
    assert app.resolve(event({"amount": 5000}), DrillContext())["statusCode"] == 402
    assert app.resolve(event({"amount": 5000}), DrillContext())["statusCode"] == 402
    assert runs == [1]
    boom = event({"x": 1})
    boom["resource"] = "/boom"
    boom["path"] = "/boom"
    boom["routeKey"] = "POST /boom"
    boom["rawPath"] = "/boom"
    if "http" in boom["requestContext"]:
        boom["requestContext"]["http"]["path"] = "/boom"
    assert app.resolve(boom, DrillContext())["statusCode"] == 503
    assert app.resolve(boom, DrillContext())["statusCode"] == 503
    assert runs == [1, 1, 1]


def test_middleware_operation_defaults_to_the_matched_route(ddb, store):
    app, runs = make_app(APIGatewayRestResolver, store, Mode.CLAIM_FIRST)
    app.resolve(rest_event({"amount": 1}, resource="/{proxy+}", path="/orders/c1"), DrillContext())
    replay = app.resolve(rest_event({"amount": 1}, resource="/{proxy+}", path="/orders/c1"), DrillContext())
    assert replay["multiValueHeaders"][names.REPLAYED_HEADER] == ["true"] and runs == [1]
    # Another customer, same matched route and key: the same operation (not "/{proxy+}"), another request.
    other = app.resolve(rest_event({"amount": 1}, resource="/{proxy+}", path="/orders/c2"), DrillContext())
    assert other["statusCode"] == 422 and runs == [1]


def test_middleware_on_state_conflict_answers_with_the_handlers_form(ddb, store):
    app = APIGatewayRestResolver()
    ddb.put_item(TableName=ORDERS, Item={"pk": {"S": "order#fixed"}, "amount": {"N": "3"}})

    def existing(error: Any, event: Any) -> Response:
        return Response(200, content_types.APPLICATION_JSON, json.dumps({"amount": int(error.current["amount"])}))

    @app.post("/orders", middlewares=[IdempotencyMiddleware(engine=Engine(store), on_state_conflict=existing)])
    def create() -> Response:
        app.context[TRANSACTION_KEY].put({"pk": "order#fixed", "amount": 9}, table=ORDERS,
                                         condition="attribute_not_exists(pk)")
        return Response(201, content_types.APPLICATION_JSON, "{}")

    answer = app.resolve(rest_event({"amount": 9}), DrillContext())
    assert answer["statusCode"] == 200 and json.loads(answer["body"]) == {"amount": 3}
