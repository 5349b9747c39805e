"""``POST /orders/{id}/payments``: capture a payment once (claim-first mode, foreign effect).

The charge at the (simulated) provider carries a key derived from the request's
idempotency scope, and runs as a checkpointed step: a retry after a crash, or a
takeover of an expired lease, repeats the call with the same downstream key and
the provider answers with the same charge instead of charging twice.
Importing this module makes no AWS call.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from retrysafe import Mode, Transaction, idempotent_http

ORDERS_TABLE = os.environ.get("ORDERS_TABLE", "orders")


class SimulatedProvider:
    """A payment provider that, like Stripe, dedupes charges on the caller's idempotency key."""

    def __init__(self) -> None:
        self.charges: dict[str, dict[str, Any]] = {}

    def charge(self, amount_cents: int, currency: str, idempotency_key: str) -> dict[str, Any]:
        """Charge once per key; the same key returns the first charge (a different amount is an error)."""
        existing = self.charges.get(idempotency_key)
        if existing is not None:
            if existing["amount"] != amount_cents:
                raise ValueError("idempotency key reused with a different amount")
            return existing
        charge_id = "ch_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]
        self.charges[idempotency_key] = {"id": charge_id, "amount": amount_cents, "currency": currency,
                                         "status": "succeeded"}
        return self.charges[idempotency_key]


provider = SimulatedProvider()


@idempotent_http(operation="CapturePayment", mode=Mode.CLAIM_FIRST)
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Charge the provider (derived key), then mark the order paid and emit ``PaymentCaptured``."""
    order_id = (event.get("pathParameters") or {}).get("id", "")
    body = json.loads(event.get("body") or "{}")
    amount = int(body.get("amount_cents", 0))
    if not order_id or amount <= 0:
        return {"statusCode": 400, "headers": {"Content-Type": "application/problem+json"},
                "body": json.dumps({"title": "Invalid payment", "status": 400,
                                    "detail": "an order id and a positive amount_cents are required"})}
    downstream_key = txn.derive_key("provider-charge")
    charge = txn.step("charge", lambda: provider.charge(amount, body.get("currency", "EUR"), downstream_key))
    txn.update({"pk": f"order#{order_id}"}, "SET #s = :paid, charge_id = :c, version = version + :one",
               table=ORDERS_TABLE, condition="attribute_exists(pk) AND #s = :placed",
               names={"#s": "status"}, values={":paid": "PAID", ":placed": "PLACED", ":c": charge["id"], ":one": 1})
    txn.append_event("PaymentCaptured", {"order_id": order_id, "charge_id": charge["id"], "amount_cents": amount},
                     aggregate_type="Order", aggregate_id=order_id, sequence=2)
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"order": order_id, "charge": charge["id"], "status": "PAID"})}
