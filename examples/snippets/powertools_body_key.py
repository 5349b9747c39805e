"""The same API on retrysafe: the decorator line and the imports changed, nothing else."""

# --8<-- [start:after]
import json
from typing import Any

from retrysafe import idempotent_http

from examples.snippets.payments import payments


@idempotent_http(key="powertools_json(body)", tenant=None)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order = json.loads(event["body"])
    charge = payments.charge(amount=order["amount"], idempotency_key=context.aws_request_id)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:after]


# --8<-- [start:subset-after]
@idempotent_http(key='powertools_json(body).["user_id", "product_id"]', tenant=None)
def subscribe(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order = json.loads(event["body"])
    charge = payments.charge(amount=order["amount"], idempotency_key=context.aws_request_id)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:subset-after]
