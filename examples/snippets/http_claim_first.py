"""Claim-first mode: a foreign effect (a payment provider) with a key derived from the intent."""

# --8<-- [start:handler]
import json
from typing import Any

from retrysafe import Transaction, idempotent_http

from .payments import payments  # your provider's client (a fake in these docs)


@idempotent_http(operation="ChargeOrder", mode="claim_first")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    order = json.loads(event["body"])
    # Same key for every retry and every takeover of this intent: the provider dedupes it.
    charge = payments.charge(amount=order["amount"], idempotency_key=txn.derive_key("charge"))
    txn.update({"pk": f"order#{order['id']}"}, "SET charge_id = :c, #s = :paid",
               table="orders", names={"#s": "status"}, values={":c": charge.id, ":paid": "paid"})
    txn.append_event("PaymentCaptured", {"order_id": order["id"], "charge": charge.id},
                     aggregate_type="Order", aggregate_id=order["id"], sequence=2,
                     once_per_key=True)                 # a late replay cannot announce it twice
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:handler]
