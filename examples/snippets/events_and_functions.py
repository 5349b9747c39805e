"""Handlers of any event (EventBridge, SNS, S3, direct Invoke) and plain functions, made idempotent."""

from __future__ import annotations

# --8<-- [start:eventbridge]
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from retrysafe import Transaction, idempotent


@dataclass
class Shipment:
    order_id: str
    weight_kg: Decimal


@idempotent(subscriber="fulfilment", key="detail.order_id")  # a republished event has a new id
def ship_order(event: dict[str, Any], context: Any, txn: Transaction) -> Shipment:
    order = event["detail"]
    txn.put({"pk": f"shipment#{order['order_id']}", "status": "requested"}, table="orders")
    return Shipment(order["order_id"], Decimal(str(order["weight_kg"])))  # replayed as a Shipment
# --8<-- [end:eventbridge]


# --8<-- [start:natural]
@idempotent(subscriber="thumbnails")  # S3's natural key: bucket, object key and sequencer
def make_thumbnail(event: dict[str, Any], context: Any, txn: Transaction) -> str:
    source = event["Records"][0]["s3"]["object"]["key"]
    txn.put({"pk": f"thumbnail#{source}"}, table="orders")
    return f"thumbnails/{source}"
# --8<-- [end:natural]


# --8<-- [start:invoke]
@idempotent(subscriber="reports", key="report_id", fingerprint="[report_id, month]")
def build_report(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, str]:
    txn.put({"pk": f"report#{event['report_id']}", "month": event["month"]}, table="orders")
    return {"report": event["report_id"]}
# --8<-- [end:invoke]


# --8<-- [start:function]
from retrysafe import idempotent_function

from .payments import payments  # your provider's client (a fake in these docs)


@dataclass
class Order:
    order_id: str
    total: int


@dataclass
class Receipt:
    charge_id: str
    amount: Decimal


@idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id")
def charge(order: Order) -> Receipt:  # no txn: claim-first, the mode for foreign calls
    made = payments.charge(amount=order.total, idempotency_key=f"order-{order.order_id}")
    return Receipt(made.id, Decimal(made.amount) / 100)
# --8<-- [end:function]


# --8<-- [start:function_txn]
@idempotent_function(data_keyword_argument="order", subscriber="billing", key="order_id")
def invoice(order: Order, txn: Transaction) -> str:  # takes txn: atomic, one round trip
    txn.put({"pk": f"invoice#{order.order_id}", "total": order.total}, table="invoices")
    return f"invoice#{order.order_id}"
# --8<-- [end:function_txn]


# --8<-- [start:caller]
from retrysafe import idempotent_sqs
from retrysafe.sqs import Message


@idempotent_sqs(subscriber="checkout", mode="claim_first")
def checkout(message: Message, txn: Transaction) -> dict[str, str]:
    order = Order(message.content["order_id"], int(message.content["total"]))
    receipt = charge(order=order)      # once per order, whichever handler asks first
    return {"invoice": invoice(order=order), "charge": receipt.charge_id}
# --8<-- [end:caller]


# --8<-- [start:register_context]
from retrysafe import register_lambda_context


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, str]:  # a handler retrysafe does not wrap
    register_lambda_context(context)  # charge's claim holds as long as this invocation can run
    receipt = charge(order=Order(event["order_id"], int(event["total"])))
    return {"charge": receipt.charge_id}
# --8<-- [end:register_context]


# --8<-- [start:serializer]
class Cents:
    """Store a Decimal amount as integer cents; replay it as the Decimal."""

    def dump(self, result: Decimal, /) -> int:
        return int(result * 100)

    def load(self, stored: Any, /) -> Decimal:
        return Decimal(stored) / 100


@idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id",
                     operation="refund", serializer=Cents())
def refund(order: Order) -> Decimal:
    payments.charge(amount=-order.total, idempotency_key=f"refund-{order.order_id}")
    return Decimal(order.total) / 100
# --8<-- [end:serializer]


# --8<-- [start:async]
import asyncio


@idempotent(subscriber="fulfilment", operation="ship_order_async", key="detail.order_id")
async def ship_order_async(event: dict[str, Any], context: Any, txn: Transaction) -> Shipment:
    # Lambda calls this synchronously: its coroutine runs on the execution environment's loop
    order = event["detail"]
    await asyncio.sleep(0)  # your awaited calls (an async HTTP client...)
    txn.put({"pk": f"shipment#{order['order_id']}", "status": "requested"}, table="orders")
    return Shipment(order["order_id"], Decimal(str(order["weight_kg"])))


@idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id")
async def charge_async(order: Order) -> Receipt:  # awaited on the caller's loop (an ASGI app's)
    made = await asyncio.to_thread(payments.charge, amount=order.total, idempotency_key=f"order-{order.order_id}")
    return Receipt(made.id, Decimal(made.amount) / 100)


async def checkout_async(order: Order) -> str:
    receipt = await charge_async(order=order)  # once per order; a replay is awaited like a first call
    return receipt.charge_id
# --8<-- [end:async]
