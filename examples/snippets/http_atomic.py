"""Atomic mode: the handler's writes and outbox event commit with the idempotency record."""

# --8<-- [start:handler]
import json
from typing import Any

from retrysafe import Transaction, idempotent_http


@idempotent_http(operation="CreateOrder")          # mode="atomic" is the default
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])
    order_id = txn.derive_key("order")[:20]        # business id derived from the key
    txn.put({"pk": f"order#{order_id}", "amount": body["amount"], "status": "placed"},
            table="orders", condition="attribute_not_exists(pk)")
    txn.append_event("OrderPlaced", {"order_id": order_id, "amount": body["amount"]},
                     aggregate_type="Order", aggregate_id=order_id, sequence=1)
    return {"statusCode": 201,
            "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
            "body": json.dumps({"id": order_id, "status": "placed"})}
# --8<-- [end:handler]
