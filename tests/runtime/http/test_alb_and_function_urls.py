"""ALB target groups (multi-value headers off and on) and Lambda function URLs as sources of ``@idempotent_http``.

Events in the shapes AWS documents (and Powertools' ``ALBEvent`` / ``LambdaFunctionUrlEvent`` read):
first request, replay, key reuse 422, in flight 409, missing key 400, each answered in the request's
own shape, with the DynamoDB round trips of each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import ALBEvent, LambdaFunctionUrlEvent
from retrysafe import names
from retrysafe._transaction import Transaction
from retrysafe.http._decorator import idempotent_http
from retrysafe.http._request import parse_event
from retrysafe.testing._events import DrillContext, alb_event, function_url_event

from tests.helpers import ORDERS

ROLE = "arn:aws:sts::123456789012:assumed-role/checkout/session-1"

#: (name, event builder, tenant option) per source shape.
SHAPES: list[tuple[str, Callable[..., dict[str, Any]], Any]] = [
    ("alb", lambda body, **kw: alb_event(body, **kw), None),
    ("alb-multi-value", lambda body, **kw: alb_event(body, multi_value=True, **kw), None),
    ("function-url-none", lambda body, **kw: function_url_event(body, **kw), None),
    ("function-url-iam", lambda body, **kw: function_url_event(body, iam_caller=ROLE, **kw), "default"),
]


def headers_of(response: dict[str, Any]) -> dict[str, str]:
    """The response's headers in either shape; a multi-value response must carry no ``headers``."""
    if "multiValueHeaders" in response:
        assert "headers" not in response
        assert all(isinstance(v, list) and len(v) == 1 for v in response["multiValueHeaders"].values())
        return {k: v[0] for k, v in response["multiValueHeaders"].items()}
    return dict(response["headers"])


def problem_type(response: dict[str, Any]) -> str:
    assert headers_of(response)["Content-Type"] == "application/problem+json"
    doc = json.loads(response["body"])
    assert doc["status"] == response["statusCode"]
    return str(doc["type"])


def make(store: Any, tenant: Any, mode: str = "atomic",
         during: Callable[[], None] | None = None) -> Any:
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        if during is not None:
            during()
        amount = json.loads(event["body"])["amount"]
        txn.update({"pk": "order#1"}, "ADD n :one", values={":one": 1}, table=ORDERS)
        headers = {"Content-Type": "application/json", "Location": "/orders/1"}
        body = json.dumps({"id": "1", "amount": amount})
        if "multiValueHeaders" in event:  # the target group answers in its own shape
            return {"statusCode": 201, "statusDescription": "201 Created",
                    "multiValueHeaders": {k: [v] for k, v in headers.items()}, "body": body}
        return {"statusCode": 201, "headers": headers, "body": body}

    options: dict[str, Any] = {} if tenant == "default" else {"tenant": tenant}
    return idempotent_http(operation="CreateOrder", mode=mode, store=store, **options)(create)


def effects(ddb: Any) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "order#1"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


@pytest.mark.parametrize(("shape", "build", "tenant"), SHAPES, ids=[s[0] for s in SHAPES])
def test_first_replay_and_key_reuse_in_the_requests_shape(store: Any, ddb: Any, calls: Any, shape: str,
                                                          build: Callable[..., dict[str, Any]], tenant: Any) -> None:
    handler = make(store, tenant)
    calls.reset()
    first = handler(build({"amount": 42}, key="order-1"), DrillContext())
    assert first["statusCode"] == 201 and calls.calls == {"TransactWriteItems": 1}
    calls.reset()
    replay = handler(build({"amount": 42}, key="order-1"), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    assert replay["statusCode"] == 201 and replay["body"] == first["body"]
    assert headers_of(replay)[names.REPLAYED_HEADER] == "true" and headers_of(replay)["Location"] == "/orders/1"
    assert ("multiValueHeaders" in replay) is (shape == "alb-multi-value")
    if shape.startswith("alb"):
        assert replay["statusDescription"] == "201 Created"
    reused = handler(build({"amount": 43}, key="order-1"), DrillContext())
    assert reused["statusCode"] == 422 and problem_type(reused).endswith("idempotency-key-reused")
    assert effects(ddb) == 1


@pytest.mark.parametrize(("shape", "build", "tenant"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_missing_key_and_a_duplicate_in_flight_are_refused_in_the_requests_shape(
        store: Any, ddb: Any, calls: Any, shape: str, build: Callable[..., dict[str, Any]], tenant: Any) -> None:
    missing = make(store, tenant)(build({"amount": 42}, key=None), DrillContext())
    assert missing["statusCode"] == 400 and problem_type(missing).endswith("idempotency-key-missing")
    assert ("multiValueHeaders" in missing) is (shape == "alb-multi-value")
    inner: list[dict[str, Any]] = []
    handler = make(store, tenant, mode="claim_first",
                   during=lambda: inner.append(handler(build({"amount": 42}, key="order-2"), DrillContext())))
    calls.reset()
    assert handler(build({"amount": 42}, key="order-2"), DrillContext())["statusCode"] == 201
    (busy,) = inner  # the duplicate arrived while the first held its claim
    assert busy["statusCode"] == 409 and problem_type(busy).endswith("request-in-progress")
    assert int(headers_of(busy)["Retry-After"]) >= 1
    assert ("multiValueHeaders" in busy) is (shape == "alb-multi-value")
    # The first: claim + completing transaction; the duplicate: its refused claim (ALL_OLD answers it).
    assert calls.calls == {"PutItem": 2, "TransactWriteItems": 1}
    assert effects(ddb) == 1


def test_multi_value_headers_and_query_parameters_are_read(store: Any) -> None:
    event = alb_event({"amount": 1}, key="order-3", multi_value=True, query={"tag": ["a%2Cb", "c"]},
                      headers={"accept": ["text/html", "application/json"]})
    request = parse_event(event)
    assert request.source == "alb" and request.multi_value
    assert request.header(names.IDEMPOTENCY_KEY_HEADER) == "order-3"
    assert request.header("accept") == "text/html,application/json"
    assert request.query == {"tag": ("a%2Cb", "c")}  # still encoded, as the load balancer passed them
    # What Powertools' data classes read from the same events.
    assert ALBEvent(event).multi_value_headers[names.IDEMPOTENCY_KEY_HEADER.lower()] == ["order-3"]
    assert parse_event(alb_event({}, query={"q": "x%41"})).query == {"q": ("xA",)}  # unreserved escape normalised
    url = function_url_event({"amount": 1}, key="order-4", iam_caller=ROLE)
    assert parse_event(url).source == "function-url" and parse_event(url).route == "POST /orders"
    assert LambdaFunctionUrlEvent(url).request_context.authorizer.iam.user_arn == ROLE


@pytest.mark.parametrize("event", [alb_event({"amount": 1}), alb_event({"amount": 1}, multi_value=True),
                                   function_url_event({"amount": 1})], ids=["alb", "alb-multi-value", "url-none"])
def test_the_default_tenant_rule_refuses_a_source_without_a_caller(store: Any, event: dict[str, Any]) -> None:
    """``tenant=None`` (a public endpoint) is never implied: the default finds no caller and answers 401."""
    response = make(store, "default")(event, DrillContext())
    assert response["statusCode"] == 401 and problem_type(response).endswith("tenant-required")
    detail = json.loads(response["body"])["detail"]
    assert "tenant=None" in detail


def test_iam_callers_of_a_function_url_are_separate_tenants(store: Any, ddb: Any) -> None:
    handler = make(store, "default")
    other = "arn:aws:sts::123456789012:assumed-role/checkout/session-2"
    assert handler(function_url_event({"amount": 1}, key="k", iam_caller=ROLE), DrillContext())["statusCode"] == 201
    second = handler(function_url_event({"amount": 1}, key="k", iam_caller=other), DrillContext())
    assert second["statusCode"] == 201 and names.REPLAYED_HEADER not in second["headers"]
    assert effects(ddb) == 2


@pytest.mark.parametrize("multi_value", [False, True], ids=["alb", "alb-multi-value"])
def test_the_middleware_behind_powertools_alb_resolver(store: Any, ddb: Any, calls: Any, multi_value: bool) -> None:
    from aws_lambda_powertools.event_handler import ALBResolver, Response, content_types
    from retrysafe import TRANSACTION_KEY, Engine, IdempotencyMiddleware

    app = ALBResolver()
    runs: list[int] = []

    @app.post("/orders", middlewares=[IdempotencyMiddleware(operation="CreateOrder", tenant=None,
                                                            engine=Engine(store))])
    def create() -> Response[str]:
        runs.append(1)
        app.context[TRANSACTION_KEY].update({"pk": "order#1"}, "ADD n :one", values={":one": 1}, table=ORDERS)
        return Response(201, content_types.APPLICATION_JSON, json.dumps({"id": "1"}), headers={"Location": "/orders/1"})

    first = app.resolve(alb_event({"amount": 1}, key="order-9", multi_value=multi_value), DrillContext())
    calls.reset()
    replay = app.resolve(alb_event({"amount": 1}, key="order-9", multi_value=multi_value), DrillContext())
    # Atomic: the replay's body runs again, its buffered write is dropped with the refused commit.
    assert calls.calls == {"TransactWriteItems": 1} and runs == [1, 1] and effects(ddb) == 1
    assert first["statusCode"] == replay["statusCode"] == 201 and replay["body"] == first["body"]
    assert headers_of(replay)[names.REPLAYED_HEADER] == "true"
    assert ("multiValueHeaders" in replay) is multi_value  # Powertools answers in the target group's shape


@pytest.mark.parametrize("field, value", [
    ("multiValueHeaders", {names.IDEMPOTENCY_KEY_HEADER.lower(): [None]}),
    ("multiValueHeaders", ["not", "an", "object"]),
    ("multiValueQueryStringParameters", {"q": [1]}),
    ("queryStringParameters", {"q": {"nested": True}}),
    ("httpMethod", None),
    ("body", 42),
], ids=["null-header", "headers-list", "number-param", "object-param", "no-method", "body-number"])
def test_hostile_load_balancer_events_are_a_400_with_no_dynamodb_call(store: Any, calls: Any, field: str,
                                                                      value: Any) -> None:
    event = alb_event({"amount": 1}, key="order-5", multi_value=field.startswith("multiValue"))
    event[field] = value
    calls.reset()
    response = make(store, None)(event, DrillContext())
    assert response["statusCode"] == 400 and problem_type(response).endswith("malformed-request")
    assert calls.total == 0
