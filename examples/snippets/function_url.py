"""``@idempotent_http`` behind a Lambda function URL with ``AuthType AWS_IAM``: the tenant is the IAM caller."""

# --8<-- [start:handler]
import json
from typing import Any

from retrysafe import Transaction, idempotent_http


@idempotent_http(operation="CreateOrder", fingerprint="{amount: amount, currency: currency}")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])              # {"amount": ..., "currency": ..., "sent_at": ...}
    order_id = txn.derive_key("order")[:20]
    txn.put({"pk": f"order#{order_id}", "amount": body["amount"], "currency": body["currency"]},
            table="orders")
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": order_id})}
# --8<-- [end:handler]
