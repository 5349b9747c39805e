"""``fingerprint=`` on ``@idempotent_http``: a re-sent order with a new ``sent_at`` replays instead of 422."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import names
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.http._decorator import idempotent_http
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import ORDERS, problem


def place(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    order = json.loads(event["body"])
    txn.update({"pk": f"order#{order['order']}"}, "ADD n :one", values={":one": 1}, table=ORDERS)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"order": order["order"], "amount": order["amount"]})}


def placed(ddb: Any, order: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": f"order#{order}"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def test_without_a_selector_a_new_sent_at_is_another_request(store: Any, ddb: Any) -> None:
    handler = idempotent_http(operation="PlaceOrder", store=store)(place)
    assert handler(http_event({"order": "o1", "amount": 5, "sent_at": "10:00"}), DrillContext())["statusCode"] == 201
    resent = handler(http_event({"order": "o1", "amount": 5, "sent_at": "10:05"}), DrillContext())
    assert resent["statusCode"] == 422 and placed(ddb, "o1") == 1


@pytest.mark.parametrize("selector", ["{order: order, amount: amount}",
                                      lambda body: {"order": body["order"], "amount": body["amount"]}],
                         ids=["jmespath", "callable"])
@pytest.mark.parametrize("build", [http_event, rest_event], ids=["v2", "v1"])
def test_a_selected_fingerprint_replays_the_re_sent_order_and_still_refuses_another(
        store: Any, ddb: Any, calls: Any, selector: Any, build: Any) -> None:
    handler = idempotent_http(operation="PlaceOrder", fingerprint=selector, store=store)(place)
    first = handler(build({"order": "o1", "amount": 5, "sent_at": "10:00"}), DrillContext())
    calls.reset()
    resent = handler(build({"order": "o1", "amount": 5, "sent_at": "10:05"}), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    assert resent["statusCode"] == 201 and resent["headers"][names.REPLAYED_HEADER] == "true"
    assert resent["body"] == first["body"]
    other = handler(build({"order": "o1", "amount": 9, "sent_at": "10:06"}), DrillContext())
    assert other["statusCode"] == 422 and placed(ddb, "o1") == 1
    # The route and path stay in the fingerprint: the same key and body on another path is refused.
    moved = handler(build({"order": "o1", "amount": 5}, **({"route": "/orders/2"} if build is http_event
                                                          else {"resource": "/orders", "path": "/orders/2"})),
                    DrillContext())
    assert moved["statusCode"] == 422


def test_a_body_the_selector_cannot_read_is_a_400_with_no_dynamodb_call(store: Any, calls: Any) -> None:
    handler = idempotent_http(operation="PlaceOrder", fingerprint="{order: order}", store=store)(place)
    calls.reset()
    not_json = handler(http_event(raw_body="order=o1", content_type="application/x-www-form-urlencoded"),
                       DrillContext())
    assert not_json["statusCode"] == 400 and "not JSON" in problem(not_json)["detail"]
    nothing = idempotent_http(operation="PlaceOrder", fingerprint="missing", store=store)(place)
    empty = nothing(http_event({"order": "o1", "amount": 5}), DrillContext())
    assert empty["statusCode"] == 400 and calls.total == 0


def test_a_malformed_selector_is_refused_at_decoration(store: Any) -> None:
    with pytest.raises(ConfigurationError):
        idempotent_http(operation="PlaceOrder", fingerprint="{order", store=store)(place)
