"""The example's handlers: import-safe, and idempotent end to end against moto."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from retrysafe import names
from retrysafe.testing._events import DrillContext, rest_event

from tests.helpers import ROOT, create_business_table

HANDLERS = ROOT / "examples" / "orders" / "handlers"
NAMES = ("orders", "payments", "inventory", "github", "authorizer", "shipping", "notifications")


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"orders_example_{name}", HANDLERS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules() -> dict[str, ModuleType]:
    return {name: _load(name) for name in NAMES}


def test_importing_the_handlers_makes_no_aws_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("AWS call at import time")

    monkeypatch.setattr("botocore.client.BaseClient._make_api_call", refuse)
    for name in NAMES:
        assert callable(_load(name).handler)
    assert sorted(p.stem for p in Path(HANDLERS).glob("*.py")) == sorted(NAMES)


def _order(ddb: Any, order_id: str) -> dict[str, Any]:
    item: dict[str, Any] = ddb.get_item(TableName="orders", Key={"pk": {"S": f"order#{order_id}"}})["Item"]
    return item


def _outbox(ddb: Any) -> list[dict[str, Any]]:
    items = ddb.scan(TableName="idempotency")["Items"]
    return [i for i in items if i.get("kind", {}).get("S") == "outbox"]


def test_create_order_runs_once_and_replays(ddb: Any, modules: dict[str, ModuleType]) -> None:
    body = {"customer": "c-1", "items": [{"sku": "book", "quantity": 2, "price": "12.50"}]}
    first = modules["orders"].handler(rest_event(body, key="order-1"), DrillContext())
    again = modules["orders"].handler(rest_event(body, key="order-1"), DrillContext())
    assert first["statusCode"] == again["statusCode"] == 201
    assert json.loads(again["body"]) == json.loads(first["body"])
    assert again["headers"][names.REPLAYED_HEADER] == "true"
    order_id = json.loads(first["body"])["id"]
    assert _order(ddb, order_id)["status"]["S"] == "PLACED"
    assert [e["etype"]["S"] for e in _outbox(ddb)] == ["OrderPlaced"]
    reused = modules["orders"].handler(rest_event({**body, "customer": "c-2"}, key="order-1"), DrillContext())
    assert reused["statusCode"] == 422


def test_payment_charges_the_provider_once(ddb: Any, modules: dict[str, ModuleType]) -> None:
    placed = modules["orders"].handler(
        rest_event({"items": [{"sku": "pen", "quantity": 1, "price": "3"}]}, key="order-2"), DrillContext())
    order_id = json.loads(placed["body"])["id"]

    def pay() -> dict[str, Any]:
        event = rest_event({"amount_cents": 300}, key="pay-1", resource="/orders/{id}/payments",
                           path=f"/orders/{order_id}/payments")
        event["pathParameters"] = {"id": order_id}
        result: dict[str, Any] = modules["payments"].handler(event, DrillContext())
        return result

    first, again = pay(), pay()
    assert first["statusCode"] == again["statusCode"] == 200
    assert again["headers"][names.REPLAYED_HEADER] == "true"
    provider = modules["payments"].provider
    assert len(provider.charges) == 1
    assert _order(ddb, order_id)["status"]["S"] == "PAID"


def test_authorizer_tenant_comes_from_a_signed_token(modules: dict[str, ModuleType]) -> None:
    secret = b"s3cret"
    signature = hmac.new(secret, b"acme", hashlib.sha256).hexdigest()
    tenant_from_token = modules["authorizer"].tenant_from_token
    assert tenant_from_token(f"Bearer acme.{signature}", secret) == "acme"
    assert tenant_from_token(f"Bearer evil.{signature}", secret) is None
    assert tenant_from_token("Bearer acme", secret) is None


def _placed(event_id: str, order_id: str) -> dict[str, Any]:
    """An ``OrderPlaced`` EventBridge event as the rule delivers it: the outbox envelope as the detail."""
    return {"version": "0", "id": event_id, "detail-type": "OrderPlaced", "source": "orders",
            "account": "123456789012", "time": "2026-12-01T10:00:00Z", "region": "eu-west-1", "resources": [],
            "detail": {"event_id": f"outbox-{order_id}", "event_type": "OrderPlaced", "aggregate_type": "Order",
                       "aggregate_id": order_id, "sequence": 1, "occurred_at": "2026-12-01T10:00:00+00:00",
                       "payload": {"order_id": order_id, "tenant": "acme", "total": "9.90",
                                   "lines": [{"sku": "pen", "quantity": 1, "price": "9.90"}]}}}


def _shipments(ddb: Any) -> dict[str, dict[str, Any]]:
    return {i["pk"]["S"]: i for i in ddb.scan(TableName="shipments", ConsistentRead=True)["Items"]}


def test_shipping_ships_a_republished_order_once(ddb: Any, modules: dict[str, ModuleType]) -> None:
    create_business_table(ddb, "shipments")
    first = modules["shipping"].handler(_placed("eb-1", "o-1"), DrillContext())
    # the outbox published the same event again: EventBridge gave it a new id (and the retry a new time)
    again = modules["shipping"].handler({**_placed("eb-2", "o-1"), "time": "2026-12-01T10:00:05Z"}, DrillContext())
    assert first == again == {"shipped": "o-1"}
    shipment = _shipments(ddb)["shipment#o-1"]
    assert shipment["shipped"] == {"N": "1"} and shipment["lines"]["L"][0]["M"]["sku"] == {"S": "pen"}


def test_notifications_notify_once_per_shipment_record(ddb: Any, modules: dict[str, ModuleType]) -> None:
    create_business_table(ddb, "shipments")
    # a DynamoDB Streams batch as Lambda delivers it (NEW_IMAGE view), then the same batch read again
    record = {"eventID": "c4ca4238a0b923820dcc509a6f75849b", "eventName": "INSERT", "eventVersion": "1.1",
              "eventSource": "aws:dynamodb", "awsRegion": "eu-west-1",
              "dynamodb": {"ApproximateCreationDateTime": 1764583200, "Keys": {"pk": {"S": "shipment#o-1"}},
                           "NewImage": {"pk": {"S": "shipment#o-1"}, "order_id": {"S": "o-1"}, "shipped": {"N": "1"}},
                           "SequenceNumber": "111", "SizeBytes": 26, "StreamViewType": "NEW_IMAGE"},
              "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/shipments/stream/2026-12-01T00:00:00.000"}
    for _ in range(2):
        assert modules["notifications"].handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert _shipments(ddb)["notice#o-1"]["notices"] == {"N": "1"}
