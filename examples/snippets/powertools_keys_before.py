"""Powertools' key options on a direct invoke: a composite key, payload validation and a key prefix
(the migration guide's "before"; each handler's event is the payment request itself)."""

# --8<-- [start:composite-before]
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)

from examples.snippets.payments import payments

persistence_layer = DynamoDBPersistenceLayer(table_name="IdempotencyTable")
config = IdempotencyConfig(event_key_jmespath='["user_id", "product_id"]')


@idempotent(config=config, persistence_store=persistence_layer)
def subscribe(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=event["amount"], idempotency_key=context.aws_request_id)
    return {"subscription": f"{event['user_id']}/{event['product_id']}", "charge": charge.id}
# --8<-- [end:composite-before]


# --8<-- [start:validation-before]
validation_config = IdempotencyConfig(event_key_jmespath='["user_id", "product_id"]',
                                      payload_validation_jmespath="amount")


@idempotent(config=validation_config, persistence_store=persistence_layer)
def pay(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=event["amount"], idempotency_key=context.aws_request_id)
    return {"payment": f"{event['user_id']}/{event['product_id']}", "charge": charge.id}
# --8<-- [end:validation-before]


# --8<-- [start:prefix-before]
@idempotent(config=config, persistence_store=persistence_layer, key_prefix="subscriptions")
def renew(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=event["amount"], idempotency_key=context.aws_request_id)
    return {"renewal": f"{event['user_id']}/{event['product_id']}", "charge": charge.id}
# --8<-- [end:prefix-before]
