"""The code before the switch: an orders API on Powertools idempotency (the migration guide's "before")."""

# --8<-- [start:before]
import json
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)

from examples.snippets.payments import payments

config = IdempotencyConfig(event_key_jmespath='headers."idempotency-key"', expires_after_seconds=3600)
persistence = DynamoDBPersistenceLayer(table_name="orders-idempotency")


@idempotent(config=config, persistence_store=persistence)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order = json.loads(event["body"])
    charge = payments.charge(amount=order["amount"], idempotency_key=context.aws_request_id)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:before]
