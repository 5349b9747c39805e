"""``POST /orders``: create an order once per Idempotency-Key (atomic mode).

The order item, the completed idempotency record and the ``OrderPlaced`` outbox
event commit in ONE DynamoDB transaction. The order id is derived from the key,
so even a replay after the record expired finds the same order instead of
creating a second one (conditional put on ``attribute_not_exists(pk)``).
Importing this module makes no AWS call.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Any

from retrysafe import Transaction, idempotent_http

ORDERS_TABLE = os.environ.get("ORDERS_TABLE", "orders")


def _order_request(event: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(event.get("body") or "{}")
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise ValueError("items must be a non-empty list")
    quantities = [int(i["quantity"]) for i in items]
    if min(quantities) <= 0:
        raise ValueError("quantities must be positive")
    lines = [{"sku": str(i["sku"]), "quantity": q, "price": Decimal(str(i["price"]))} for i, q in zip(items, quantities)]
    return {"customer": str(body.get("customer", "")), "lines": lines}


@idempotent_http(operation="CreateOrder")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Create the order and announce it; a 400 decline is stored and replayed like a success."""
    try:
        request = _order_request(event)
    except (ValueError, KeyError, TypeError) as error:
        return {"statusCode": 400, "headers": {"Content-Type": "application/problem+json"},
                "body": json.dumps({"title": "Invalid order", "status": 400, "detail": str(error)})}
    order_id = txn.derive_key("order")
    total = sum(line["price"] * line["quantity"] for line in request["lines"])
    txn.put({"pk": f"order#{order_id}", "tenant": txn.tenant, "customer": request["customer"],
             "lines": request["lines"], "total": total, "status": "PLACED", "version": 1},
            table=ORDERS_TABLE, condition="attribute_not_exists(pk)")
    txn.append_event("OrderPlaced", {"order_id": order_id, "tenant": txn.tenant, "total": str(total),
                                     "lines": [{**line, "price": str(line["price"])} for line in request["lines"]]},
                     aggregate_type="Order", aggregate_id=order_id, sequence=1)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
            "body": json.dumps({"id": order_id, "status": "PLACED", "total": str(total)})}
