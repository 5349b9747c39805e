"""Shipping: ships each placed order once, on the ``OrderPlaced`` events the outbox publishes to the bus.

EventBridge invokes it asynchronously (an ``IdempotentEventRule`` target), at least once: the
outbox may publish an event again (it gets a new EventBridge ``id`` each time) and Lambda retries
an invocation that failed. The key is the order id in the event's detail (the outbox envelope's
``payload``), so every delivery of one order's event meets one record; the shipment and that
record commit in one transaction. Importing this module makes no AWS call.
"""

from __future__ import annotations

import os
from typing import Any

from retrysafe import Transaction, idempotent

SHIPMENTS_TABLE = os.environ.get("SHIPMENTS_TABLE", "shipments")


@idempotent(subscriber="shipping", key="detail.payload.order_id")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Ship the order: one shipment item per order, counted (``shipped``) so a second effect would show."""
    order = event["detail"]["payload"]
    txn.update({"pk": f"shipment#{order['order_id']}"}, "SET order_id = :o, #lines = :l ADD shipped :one",
               table=SHIPMENTS_TABLE, names={"#lines": "lines"},  # LINES is a DynamoDB reserved word
               values={":o": order["order_id"], ":l": order["lines"], ":one": 1})
    return {"shipped": order["order_id"]}
