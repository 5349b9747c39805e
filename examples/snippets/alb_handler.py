"""``@idempotent_http`` behind an Application Load Balancer (multi-value headers on or off)."""

# --8<-- [start:handler]
import json
from typing import Any

from retrysafe import Transaction, idempotent_http


@idempotent_http(operation="CreateOrder", tenant=None)   # the load balancer names no caller
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])
    order_id = txn.derive_key("order")[:20]
    txn.put({"pk": f"order#{order_id}", "amount": body["amount"]}, table="orders")
    headers = {"Content-Type": "application/json", "Location": f"/orders/{order_id}"}
    response: dict[str, Any] = {"statusCode": 201, "statusDescription": "201 Created",
                                "body": json.dumps({"id": order_id}), "isBase64Encoded": False}
    if "multiValueHeaders" in event:              # the target group has multi-value headers on
        response["multiValueHeaders"] = {name: [value] for name, value in headers.items()}
    else:
        response["headers"] = headers
    return response
# --8<-- [end:handler]
