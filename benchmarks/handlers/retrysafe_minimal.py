"""A minimal decorated handler module, for the import-time benchmark."""

from retrysafe import idempotent_http


@idempotent_http(operation="CreateOrder")
def handler(event, context, txn):  # type: ignore[no-untyped-def]
    return {"statusCode": 201, "body": "{}"}
