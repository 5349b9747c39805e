"""The order saga's Lambda tasks: reserve inventory -> charge payment -> confirm; on failure refund, release.

Each is an ``@idempotent_task``: a Step Functions retry of a state replays its
stored result, and a takeover after a crash resumes after the last recovery
point. The state machine passes the payload described in
:mod:`retrysafe.stepfunctions` with ``"input.$": "$"``; the saga's data is the order
``{"orderId", "sku", "quantity", "amount"}`` plus each step's result at
``$.reservation``, ``$.payment`` and ``$.confirmation``.

Business tables: ``SAGA_ORDERS_TABLE`` (partition key ``pk``: ``stock#<sku>``,
``reservation#<order>``, ``payment#<order>``, ``order#<order>``) and the
provider's ledger (``PROVIDER_LEDGER_TABLE``). Import-safe: no AWS call at import.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from retrysafe import Scope, Transaction, names
from retrysafe.stepfunctions import idempotent_task

from .provider import FakePaymentProvider

ORDERS_TABLE = os.environ.get("SAGA_ORDERS_TABLE", "saga-orders")
provider = FakePaymentProvider()


class OutOfStock(Exception):
    """Not enough stock to reserve; the state machine ends the saga (nothing to compensate)."""


class PaymentDeclined(Exception):
    """The provider declined the authorization; the state machine releases the inventory."""


@functools.cache
def dynamodb() -> Any:
    """The DynamoDB client for reads (created on first use)."""
    import boto3

    return boto3.client("dynamodb")


def _item(pk: str) -> dict[str, Any] | None:
    item: dict[str, Any] | None = dynamodb().get_item(TableName=ORDERS_TABLE, Key={"pk": {"S": pk}},
                                                       ConsistentRead=True).get("Item")
    return item


@idempotent_task
def reserve_inventory(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Take ``quantity`` of ``sku`` off the stock (local writes only, committed with the task's record)."""
    stock = _item(f"stock#{order['sku']}")
    if stock is None or int(stock["available"]["N"]) < order["quantity"]:
        raise OutOfStock(f"not enough {order['sku']} for order {order['orderId']}")
    # The read is a hint; the condition decides (a raced reservation fails the transaction and is retried).
    txn.update({"pk": f"stock#{order['sku']}"}, "SET available = available - :q", table=ORDERS_TABLE,
               condition="available >= :q", values={":q": order["quantity"]})
    txn.put({"pk": f"reservation#{order['orderId']}", "sku": order["sku"], "quantity": order["quantity"],
             "status": "reserved"}, table=ORDERS_TABLE, condition="attribute_not_exists(pk)")
    return {"reservationId": order["orderId"], "quantity": order["quantity"]}


@idempotent_task
def charge_payment(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Authorize, then capture: two foreign calls, each a recovery point with its own derived key."""
    amount = order["amount"]
    auth = txn.step("authorize", lambda: provider.authorize(key=txn.derive_key("authorize"), amount=amount))
    if auth["status"] != "authorized":
        raise PaymentDeclined(f"payment for order {order['orderId']} was declined")
    # Commits together with the "capture" checkpoint.
    txn.put({"pk": f"payment#{order['orderId']}", "status": "authorized",
             "authorizationId": auth["authorizationId"], "amount": amount}, table=ORDERS_TABLE)
    charge = txn.step("capture", lambda: provider.capture(key=txn.derive_key("capture"),
                                                          authorization_id=auth["authorizationId"], amount=amount))
    # Commits together with the task's completed record.
    txn.update({"pk": f"payment#{order['orderId']}"}, "SET #s = :s, chargeId = :c", table=ORDERS_TABLE,
               names={"#s": "status"}, values={":s": "captured", ":c": charge["chargeId"]})
    return {"chargeId": charge["chargeId"], "amount": amount}


@idempotent_task
def confirm_order(state: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Mark the order confirmed and publish ``OrderConfirmed`` through the outbox, in one transaction."""
    order_id = state["orderId"]
    txn.put({"pk": f"order#{order_id}", "status": "confirmed", "chargeId": state["payment"]["chargeId"]},
            table=ORDERS_TABLE)
    event_id = txn.append_event("OrderConfirmed", {"orderId": order_id, "amount": state["amount"]},
                                aggregate_type="Order", aggregate_id=order_id, sequence=1)
    return {"status": "confirmed", "eventId": event_id}


def refund_key(tenant: str, charge_id: str) -> str:
    """The provider key of a charge's refund: derived from the charge, whichever state or execution refunds it."""
    return Scope(tenant, "RefundPayment", charge_id, adapter=names.TASK_ADAPTER).derive_key("refund")


@idempotent_task
def refund_payment(state: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Compensation: refund the charge once, even when several paths (or executions) run this task."""
    payment = state["payment"]
    refund = txn.step("refund", lambda: provider.refund(key=refund_key(txn.tenant, payment["chargeId"]),
                                                        charge_id=payment["chargeId"], amount=payment["amount"]))
    txn.update({"pk": f"payment#{state['orderId']}"}, "SET #s = :s, refundId = :r", table=ORDERS_TABLE,
               names={"#s": "status"}, values={":s": "refunded", ":r": refund["refundId"]})
    return {"refundId": refund["refundId"]}


@idempotent_task
def release_inventory(state: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Compensation: put the reserved stock back once; a reservation already released is left alone."""
    reservation = _item(f"reservation#{state['orderId']}")
    if reservation is None or reservation["status"]["S"] != "reserved":
        return {"released": False}
    quantity = int(reservation["quantity"]["N"])
    txn.update({"pk": f"reservation#{state['orderId']}"}, "SET #s = :released", table=ORDERS_TABLE,
               condition="#s = :reserved", names={"#s": "status"},
               values={":released": "released", ":reserved": "reserved"})
    txn.update({"pk": f"stock#{reservation['sku']['S']}"}, "SET available = available + :q", table=ORDERS_TABLE,
               values={":q": quantity})
    return {"released": True, "quantity": quantity}
