"""A Step Functions task with two recovery points (authorize, capture)."""

# --8<-- [start:task]
from typing import Any

from retrysafe import Transaction, idempotent_task

from .payments import provider  # your provider's client (a fake in these docs)


class PaymentDeclined(Exception):
    """A business outcome: the state machine catches it by name and compensates."""


@idempotent_task
def charge_payment(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    auth = txn.step("authorize", lambda: provider.authorize(key=txn.derive_key("authorize"),
                                                            amount=order["amount"]))
    if auth["status"] != "authorized":
        raise PaymentDeclined(order["orderId"])          # a named error the state machine catches
    txn.put({"pk": f"payment#{order['orderId']}", "status": "authorized"}, table="orders")
    charge = txn.step("capture", lambda: provider.capture(key=txn.derive_key("capture"),
                                                          authorization_id=auth["authorizationId"]))
    return {"chargeId": charge["chargeId"]}              # stored, and returned to every retry
# --8<-- [end:task]
