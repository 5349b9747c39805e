"""Powertools' getting-started API, keyed on the body (the migration guide's body-keyed "before")."""

# --8<-- [start:before]
import json
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)

from examples.snippets.payments import payments

persistence_layer = DynamoDBPersistenceLayer(table_name="IdempotencyTable")
config = IdempotencyConfig(event_key_jmespath="powertools_json(body)")


@idempotent(config=config, persistence_store=persistence_layer)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order = json.loads(event["body"])
    charge = payments.charge(amount=order["amount"], idempotency_key=context.aws_request_id)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:before]


# --8<-- [start:subset-before]
subset_config = IdempotencyConfig(event_key_jmespath='powertools_json(body).["user_id", "product_id"]')


@idempotent(config=subset_config, persistence_store=persistence_layer)
def subscribe(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order = json.loads(event["body"])
    charge = payments.charge(amount=order["amount"], idempotency_key=context.aws_request_id)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:subset-before]
