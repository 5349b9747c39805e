"""A minimal idempotent SQS consumer for the SnapStart sandbox test: stores each message's text once."""

from __future__ import annotations

from typing import Any

from retrysafe import Transaction
from retrysafe.sqs import Message, idempotent_sqs


@idempotent_sqs(subscriber="notes", operation="StoreQueuedNote")
def handler(message: Message, txn: Transaction) -> Any:
    """Write one item named by the message id in the idempotency table."""
    txn.put({"pk": f"queued#{message.message_id}", "text": message.content["text"]},
            condition="attribute_not_exists(pk)")
    return None
