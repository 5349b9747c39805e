"""A hook on replays: the key's expiry as a response header (docs/getting-started.md)."""

# --8<-- [start:hook]
import json
from typing import Any

from retrysafe import ReplayInfo, Transaction, idempotent_http


def expiry_header(response: dict[str, Any], info: ReplayInfo) -> dict[str, Any]:
    response["headers"]["X-Idempotency-Expires"] = str(info.expires_at)
    return response


@idempotent_http(on_replay=expiry_header)
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    order_id = txn.derive_key("order")
    txn.put({"pk": f"order#{order_id}", "total": json.loads(event["body"])["total"]}, table="orders")
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": order_id})}
# --8<-- [end:hook]
