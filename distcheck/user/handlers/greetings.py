"""A user's handler: an idempotent HTTP endpoint whose only write is its idempotency record."""

import json
from typing import Any

from retrysafe import Transaction, idempotent_http


@idempotent_http(operation="CreateGreeting")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"greeting": f"hello {body['name']}", "id": txn.derive_key("greeting")[:12]})}
