"""The one business operation both libraries run: create an order (one order item + one event item, ~1 KB JSON answer)."""

from __future__ import annotations

import json
import uuid
from typing import Any

TABLE = "bench-idempotency"
ORDERS = "bench-orders"
POWERTOOLS_TABLE = "bench-powertools"

RESPONSE_LINES = [{"sku": f"SKU-{i:04d}", "qty": 1 + i % 3, "price": "19.90", "name": "Espresso cup"} for i in range(12)]


def order_event(key: str, amount: int = 42, tenant: str = "tenant-a") -> dict[str, Any]:
    """A REST API (v1) POST /orders event with a Cognito authorizer and an Idempotency-Key."""
    return {
        "resource": "/orders", "path": "/orders", "httpMethod": "POST",
        "headers": {"Content-Type": "application/json", "Idempotency-Key": key},
        "multiValueHeaders": {}, "queryStringParameters": None, "multiValueQueryStringParameters": None,
        "pathParameters": None, "stageVariables": None, "isBase64Encoded": False,
        "requestContext": {"resourcePath": "/orders", "httpMethod": "POST", "stage": "prod", "requestId": "r",
                           "authorizer": {"claims": {"sub": tenant}}, "identity": {"sourceIp": "127.0.0.1"}},
        "body": json.dumps({"customer": "c-1", "amount": amount, "currency": "EUR", "lines": RESPONSE_LINES[:3]}),
    }


def response_body(order_id: str, amount: int) -> str:
    """About 1 KB of JSON."""
    return json.dumps({"id": order_id, "status": "placed", "amount": amount, "currency": "EUR", "lines": RESPONSE_LINES})


class Context:
    """A Lambda context with plenty of time left."""

    function_name = "bench"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:bench"
    aws_request_id = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


def retrysafe_handler(mode: str, engine: Any) -> Any:
    """The workload under ``@idempotent_http``: order + event in the transaction."""
    from retrysafe import idempotent_http

    @idempotent_http(operation="CreateOrder", mode=mode, engine=engine)
    def handler(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        body = json.loads(event["body"])
        order_id = txn.derive_key("order")[:22]
        txn.put({"pk": f"order#{order_id}", "customer": body["customer"], "amount": body["amount"]}, table=ORDERS)
        txn.append_event("OrderPlaced", {"id": order_id, "amount": body["amount"]}, aggregate_type="Order",
                         aggregate_id=order_id, sequence=1)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
                "body": response_body(order_id, body["amount"])}

    return handler


def powertools_handler(client: Any) -> Any:
    """The workload under Powertools ``@idempotent`` (payload validation on); the handler writes its own items."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent,
    )

    persistence = DynamoDBPersistenceLayer(table_name=POWERTOOLS_TABLE, boto3_client=client)
    config = IdempotencyConfig(event_key_jmespath='headers."Idempotency-Key"', payload_validation_jmespath="body",
                               expires_after_seconds=7 * 86400)

    @idempotent(persistence_store=persistence, config=config)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        body = json.loads(event["body"])
        order_id = uuid.uuid4().hex[:22]
        client.put_item(TableName=ORDERS, Item={"pk": {"S": f"order#{order_id}"}, "customer": {"S": body["customer"]},
                                                 "amount": {"N": str(body["amount"])}})
        client.put_item(TableName=POWERTOOLS_TABLE, Item={"id": {"S": f"event#{order_id}"},
                                                           "type": {"S": "OrderPlaced"},
                                                           "payload": {"S": json.dumps({"id": order_id})}})
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
                "body": response_body(order_id, body["amount"])}

    return handler


def create_tables(client: Any) -> None:
    """The three tables of the benchmark."""
    for name, key in ((TABLE, "pk"), (ORDERS, "pk"), (POWERTOOLS_TABLE, "id")):
        client.create_table(TableName=name, AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
