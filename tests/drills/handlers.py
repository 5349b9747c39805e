"""Handlers written the way a user writes them, one per path, for the project's own drills."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from retrysafe import (
    Transaction,
    idempotent,
    idempotent_function,
    idempotent_http,
    idempotent_sqs,
    idempotent_task,
    names,
)
from retrysafe.sqs import Message
from retrysafe.webhook import GitHub, StandardWebhooks, WebhookReceiver

ORDERS = "orders"
SECRET = b"drill-secret"


class FakeProvider:
    """A payment provider that dedupes on the Idempotency-Key it receives (like Stripe)."""

    def __init__(self) -> None:
        self.ledger: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def charge(self, key: str, amount: int) -> dict[str, Any]:
        """Charge once per key; a repeated key returns the first response."""
        with self._lock:
            if key not in self.ledger:
                self.ledger[key] = {"charge": f"ch_{len(self.ledger) + 1}", "amount": amount}
            return self.ledger[key]

    def charges(self) -> int:
        """Distinct charges made: the foreign effect count."""
        return len(self.ledger)


provider = FakeProvider()


def _order(txn: Transaction, amount: int) -> str:
    order_id = txn.derive_key("order")[:16]
    # Conditioned: a late replay after the record expired finds the order instead of writing it again.
    txn.put({"pk": f"order#{order_id}", "amount": amount}, table=ORDERS, condition="attribute_not_exists(pk)")
    txn.append_event("OrderPlaced", {"order": order_id, "amount": amount}, aggregate_type="Order",
                     aggregate_id=order_id, sequence=1)
    return order_id


@idempotent_http(operation="CreateOrder")
def create_order(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Atomic: the order and its event commit with the record."""
    amount = int(json.loads(event["body"])["amount"])
    order_id = _order(txn, amount)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
            "body": json.dumps({"id": order_id, "amount": amount})}


@idempotent_http(operation="QuoteOrder")
def quote_order(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Atomic, writing nothing but the record: a price quote whose number a retry must see again."""
    amount = int(json.loads(event["body"])["amount"])
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"quote": txn.derive_key("quote")[:16], "amount": amount, "fee": amount // 10})}


@idempotent_http(operation="PayOrder", mode="claim_first")
def pay_order(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Claim-first: a foreign charge with a derived key, then the local writes."""
    amount = int(json.loads(event["body"])["amount"])
    charge = provider.charge(txn.derive_key("charge"), amount)
    order_id = _order(txn, amount)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": order_id, "charge": charge["charge"]})}


@idempotent_sqs(subscriber="billing")
def bill(message: Message, txn: Transaction) -> str:
    """Atomic consumer: one invoice line per message."""
    content = message.content
    if content.get("event_type") == names.WEBHOOK_RECEIPT_EVENT:  # a webhook receipt: the delivery's body
        content = json.loads(content["payload"]["body"])
    order = content["payload"]["order"] if "payload" in content else content["order"]
    txn.update({"pk": f"invoice#{order}"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1},
               table=ORDERS)
    return str(order)


@idempotent_sqs(subscriber="mailer", mode="claim_first", lease_seconds=30)
def notify(message: Message, txn: Transaction) -> str:
    """Claim-first consumer: a foreign call (the provider) per message."""
    return str(provider.charge(txn.derive_key("mail"), int(message.content["amount"]))["charge"])


receiver = WebhookReceiver(GitHub(), secrets=lambda: [SECRET])
#: Standard Webhooks signs its id: the same id with another body is a key reuse (422).
standard_receiver = WebhookReceiver(StandardWebhooks(), secrets=lambda: [b"whsec_ZHJpbGwtc2VjcmV0"])


@idempotent_task
def capture(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Step Functions task: a foreign charge as a recovery point, then the local write."""
    charge = txn.step("charge", lambda: provider.charge(txn.derive_key("charge"), int(order["amount"])))
    txn.put({"pk": f"payment#{order['order']}", "charge": charge["charge"]}, table=ORDERS)
    return {"charge": charge["charge"]}


@idempotent(subscriber="fulfilment")
def ship(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Any event (here EventBridge, keyed by its id), atomic: the order and its event commit with the record."""
    return {"order": _order(txn, int(event["detail"]["amount"]))}


@idempotent(subscriber="payments", mode="claim_first", lease_seconds=30)
def charge_event(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Any event, claim-first: a foreign charge with a derived key."""
    return {"charge": provider.charge(txn.derive_key("charge"), int(event["detail"]["amount"]))["charge"]}


@idempotent_function(data_keyword_argument="order", subscriber="payments", key="id", lease_seconds=30)
def charge_card(order: dict[str, Any]) -> dict[str, Any]:
    """A plain function, claim-first (no txn): the provider's key comes from the argument's own id."""
    return provider.charge(f"card#{order['id']}", int(order["amount"]))


@idempotent_function(data_keyword_argument="order", subscriber="billing", key="id")
def invoice(order: dict[str, Any], txn: Transaction) -> str:
    """A plain function taking txn: atomic, its writes commit with its record."""
    return _order(txn, int(order["amount"]))


# -- async def handlers: the same work, awaited (docs/events-and-functions.md, "Async handlers") --


async def _provider_call() -> None:
    """Where an async handler awaits its network calls: control goes back to the loop."""
    await asyncio.sleep(0)


@idempotent_http(operation="PayOrderAsync", mode="claim_first")
async def pay_order_async(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """``pay_order`` as an ``async def``: Lambda's sync handler runs it on the environment's loop."""
    await _provider_call()
    amount = int(json.loads(event["body"])["amount"])
    charge = provider.charge(txn.derive_key("charge"), amount)
    order_id = _order(txn, amount)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": order_id, "charge": charge["charge"]})}


@idempotent_sqs(subscriber="billing-async")
async def bill_async(message: Message, txn: Transaction) -> str:
    """``bill`` as an ``async def`` (atomic)."""
    await _provider_call()
    order = message.content["order"]
    txn.update({"pk": f"invoice#{order}"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1}, table=ORDERS)
    return str(order)


@idempotent_task
async def capture_async(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """``capture`` as an ``async def``: its recovery point is a sync step around a foreign call."""
    await _provider_call()
    charge = txn.step("charge", lambda: provider.charge(txn.derive_key("charge"), int(order["amount"])))
    txn.put({"pk": f"payment#{order['order']}", "charge": charge["charge"]}, table=ORDERS)
    return {"charge": charge["charge"]}


@idempotent(subscriber="fulfilment-async")
async def ship_async(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """``ship`` as an ``async def`` (atomic)."""
    await _provider_call()
    return {"order": _order(txn, int(event["detail"]["amount"]))}


@idempotent(subscriber="payments-async", lease_seconds=30)
async def charge_event_async(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """An async event handler without ``txn``: claim-first by its signature."""
    await _provider_call()
    return {"charge": provider.charge(f"event#{event['id']}", int(event["detail"]["amount"]))["charge"]}


@idempotent_function(data_keyword_argument="order", subscriber="payments-async", key="id", lease_seconds=30)
async def charge_card_async(order: dict[str, Any]) -> dict[str, Any]:
    """``charge_card`` as an ``async def``: awaited on the caller's loop, claim-first."""
    await _provider_call()
    return provider.charge(f"card-async#{order['id']}", int(order["amount"]))


@idempotent_function(data_keyword_argument="order", subscriber="billing-async", key="id")
async def invoice_async(order: dict[str, Any], txn: Transaction) -> str:
    """``invoice`` as an ``async def``: atomic, its writes commit with its record."""
    await _provider_call()
    return _order(txn, int(order["amount"]))
