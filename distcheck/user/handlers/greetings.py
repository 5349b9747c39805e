"""A user's handler: an idempotent HTTP endpoint writing one greeting with its idempotency record."""

import json
from typing import Any

from retrysafe import Transaction, idempotent_http


@idempotent_http(operation="CreateGreeting")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])
    greeting_id = txn.derive_key("greeting")[:12]
    txn.put({"pk": f"greeting#{greeting_id}", "text": f"hello {body['name']}"}, table="greetings",
            condition="attribute_not_exists(pk)")
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": greeting_id, "greeting": f"hello {body['name']}"})}
