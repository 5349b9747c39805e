"""A minimal Powertools-idempotent handler module, for the import-time benchmark."""

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent

persistence = DynamoDBPersistenceLayer(table_name="bench-powertools")
config = IdempotencyConfig(event_key_jmespath='headers."Idempotency-Key"', payload_validation_jmespath="body")


@idempotent(persistence_store=persistence, config=config)
def handler(event, context):  # type: ignore[no-untyped-def]
    return {"statusCode": 201, "body": "{}"}
