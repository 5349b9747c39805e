"""Inventory consumer: reserves stock for each ``OrderPlaced`` event arriving on SQS (via EventBridge).

The processed-message record (keyed by the event id the outbox assigned) and the
stock updates commit in one transaction, so a redelivered or re-published event
is acknowledged without reserving twice. Importing this module makes no AWS call.
"""

from __future__ import annotations

import os
from typing import Any

from retrysafe import Transaction
from retrysafe.sqs import Message, idempotent_sqs

INVENTORY_TABLE = os.environ.get("INVENTORY_TABLE", "inventory")


@idempotent_sqs(subscriber="inventory", operation="ReserveStock")
def handler(message: Message, txn: Transaction) -> Any:
    """Reserve each line's quantity; an unknown SKU or short stock fails the message (then the DLQ)."""
    order = message.content["payload"]
    for line in order["lines"]:
        txn.update({"pk": f"sku#{line['sku']}"}, "SET reserved = if_not_exists(reserved, :zero) + :q",
                   table=INVENTORY_TABLE, condition="attribute_exists(pk) AND available >= :q",
                   values={":q": int(line["quantity"]), ":zero": 0})
    txn.append_event("StockReserved", {"order_id": order["order_id"]}, aggregate_type="Order",
                     aggregate_id=order["order_id"])
    return None
