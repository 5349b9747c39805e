"""The one business operation both libraries run: create an order (one order item + one event item, ~1 KB JSON answer)."""

from __future__ import annotations

import json
from typing import Any

from retrysafe import names

TABLE = "bench-idempotency"
ORDERS = "bench-orders"
POWERTOOLS_TABLE = "bench-powertools"

RESPONSE_LINES = [{"sku": f"SKU-{i:04d}", "qty": 1 + i % 3, "price": "19.90", "name": "Espresso cup"} for i in range(12)]


def order_event(key: str, amount: int = 42, tenant: str = "tenant-a") -> dict[str, Any]:
    """An HTTP API (v2) POST /orders event with a JWT authorizer and an Idempotency-Key."""
    return {
        "version": "2.0", "routeKey": "POST /orders", "rawPath": "/orders", "rawQueryString": "",
        "headers": {"content-type": "application/json", names.IDEMPOTENCY_KEY_HEADER.lower(): key, "host": "api.example.com",
                    "user-agent": "bench/1.0", "x-forwarded-for": "127.0.0.1"},
        "requestContext": {"accountId": "123456789012", "apiId": "api", "domainName": "api.example.com",
                           "http": {"method": "POST", "path": "/orders", "protocol": "HTTP/1.1",
                                    "sourceIp": "127.0.0.1", "userAgent": "bench/1.0"},
                           "requestId": "r", "routeKey": "POST /orders", "stage": "$default",
                           "authorizer": {"jwt": {"claims": {"sub": tenant}, "scopes": []}},
                           "time": "30/Nov/2026:12:00:00 +0000", "timeEpoch": 1796040000000},
        "body": json.dumps({"customer": "c-1", "amount": amount, "currency": "EUR", "lines": RESPONSE_LINES[:3]}),
        "isBase64Encoded": False,
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


def create_order(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
    """The handler's own work under retrysafe: order + event in the transaction, ~1 KB answer."""
    body = json.loads(event["body"])
    order_id = txn.derive_key("order")[:22]
    txn.put({"pk": f"order#{order_id}", "customer": body["customer"], "amount": body["amount"]}, table=ORDERS)
    txn.append_event("OrderPlaced", {"id": order_id, "amount": body["amount"]}, aggregate_type="Order",
                     aggregate_id=order_id, sequence=1)
    return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
            "body": response_body(order_id, body["amount"])}


def quote(event: dict[str, Any], context: Any, txn: Any = None) -> dict[str, Any]:
    """A handler that writes nothing but its idempotency record: a ~1 KB price quote."""
    body = json.loads(event["body"])
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": response_body(f"quote-{body['customer']}", body["amount"])}


def retrysafe_handler(mode: str, engine: Any, body: Any = create_order) -> Any:
    """The workload under ``@idempotent_http``: ``body`` (default :func:`create_order`) as the handler."""
    from retrysafe import idempotent_http

    return idempotent_http(operation="CreateOrder", mode=mode, engine=engine)(body)


def client_config() -> Any:
    """The botocore configuration of every client in the benchmark (retrysafe's store uses the same values)."""
    from botocore.config import Config

    return Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2, read_timeout=10,
                  tcp_keepalive=True)


def user_client() -> Any:
    """The DynamoDB client a Powertools user creates at module level and shares with the persistence layer."""
    import boto3

    return boto3.session.Session().client("dynamodb", config=client_config())


def powertools_handler(client: Any) -> Any:
    """The workload under Powertools ``@idempotent`` (payload validation on); the handler writes its own items.

    The event item carries what retrysafe's outbox event carries (type, aggregate, payload, time, expiry).
    """
    import time
    import uuid

    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent,
    )

    persistence = DynamoDBPersistenceLayer(table_name=POWERTOOLS_TABLE, boto3_client=client)
    config = IdempotencyConfig(event_key_jmespath='headers."idempotency-key"', payload_validation_jmespath="body",
                               expires_after_seconds=7 * 86400)

    @idempotent(persistence_store=persistence, config=config)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        body = json.loads(event["body"])
        order_id = uuid.uuid4().hex[:22]
        now = time.time()
        client.put_item(TableName=ORDERS, Item={"pk": {"S": f"order#{order_id}"}, "customer": {"S": body["customer"]},
                                                 "amount": {"N": str(body["amount"])}})
        client.put_item(TableName=POWERTOOLS_TABLE, Item={
            "id": {"S": f"event#{order_id}"}, "type": {"S": "OrderPlaced"}, "aggregate": {"S": f"Order/{order_id}"},
            "payload": {"S": json.dumps({"id": order_id, "amount": body["amount"]})},
            "at": {"S": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))},
            "exp": {"N": str(int(now) + 7 * 86400)}})
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
                "body": response_body(order_id, body["amount"])}

    return handler


def powertools_quote_handler(client: Any) -> Any:
    """:func:`quote` under Powertools ``@idempotent``, configured as :func:`powertools_handler` is."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent,
    )

    persistence = DynamoDBPersistenceLayer(table_name=POWERTOOLS_TABLE, boto3_client=client)
    config = IdempotencyConfig(event_key_jmespath='headers."idempotency-key"', payload_validation_jmespath="body",
                               expires_after_seconds=7 * 86400)
    return idempotent(persistence_store=persistence, config=config)(quote)


def sqs_message(message_id: str, receive_count: int) -> dict[str, Any]:
    """An SQS Lambda event with one order message, delivered for the ``receive_count``-th time."""
    from retrysafe.testing._events import sqs_record

    body = {"customer": "c-1", "amount": 42, "currency": "EUR", "lines": RESPONSE_LINES[:3]}
    return {"Records": [sqs_record(body, message_id=message_id, receive_count=receive_count)]}


def place_order(message: Any, txn: Any) -> None:
    """The SQS consumer's work under retrysafe: order + event in the transaction."""
    order_id = txn.derive_key("order")[:22]
    txn.put({"pk": f"order#{order_id}", "customer": message.content["customer"],
             "amount": message.content["amount"]}, table=ORDERS)
    txn.append_event("OrderPlaced", {"id": order_id, "amount": message.content["amount"]}, aggregate_type="Order",
                     aggregate_id=order_id, sequence=1)


def retrysafe_sqs_handler(engine: Any, *, retry_hints: bool = True) -> Any:
    """:func:`place_order` under ``@idempotent_sqs`` (atomic mode)."""
    from retrysafe import idempotent_sqs

    return idempotent_sqs(place_order, subscriber="bench", operation="PlaceOrder", retry_hints=retry_hints,
                          engine=engine)


def powertools_sqs_handler(client: Any) -> Any:
    """The same consumer as Powertools documents it: ``BatchProcessor`` + ``@idempotent_function`` keyed by
    ``messageId``; the record handler writes the order and the event item itself."""
    import time
    import uuid

    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    persistence = DynamoDBPersistenceLayer(table_name=POWERTOOLS_TABLE, boto3_client=client)
    config = IdempotencyConfig(event_key_jmespath="messageId", expires_after_seconds=7 * 86400)
    processor = BatchProcessor(event_type=EventType.SQS)

    @idempotent_function(data_keyword_argument="record", config=config, persistence_store=persistence)
    def record_handler(record: Any) -> dict[str, Any]:
        body = json.loads(record.body)
        order_id = uuid.uuid4().hex[:22]
        now = time.time()
        client.put_item(TableName=ORDERS, Item={"pk": {"S": f"order#{order_id}"}, "customer": {"S": body["customer"]},
                                                 "amount": {"N": str(body["amount"])}})
        client.put_item(TableName=POWERTOOLS_TABLE, Item={
            "id": {"S": f"event#{order_id}"}, "type": {"S": "OrderPlaced"}, "aggregate": {"S": f"Order/{order_id}"},
            "payload": {"S": json.dumps({"id": order_id, "amount": body["amount"]})},
            "at": {"S": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))},
            "exp": {"N": str(int(now) + 7 * 86400)}})
        return {"id": order_id}

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        config.register_lambda_context(context)
        return dict(process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                             context=context))

    return handler


def model_tables() -> dict[str, Any]:
    """The three tables as the in-memory model holds them; the idempotency table has the outbox index
    that ``retrysafe_cdk.IdempotencyTable`` deploys (``outbox-unpublished``: ``obq``/``at``, projection ALL)."""
    from benchmarks.ddb_model import Table

    return {TABLE: Table("pk", {names.OUTBOX_INDEX: (names.UNPUBLISHED_ATTRIBUTE, "at")}), ORDERS: Table("pk"),
            POWERTOOLS_TABLE: Table("id")}


def create_tables(client: Any) -> None:
    """The three tables on a real DynamoDB API (moto's server), the outbox index included."""
    for name, key in ((TABLE, "pk"), (ORDERS, "pk"), (POWERTOOLS_TABLE, "id")):
        extra: dict[str, Any] = {}
        attributes = [{"AttributeName": key, "AttributeType": "S"}]
        if name == TABLE:
            attributes += [{"AttributeName": names.UNPUBLISHED_ATTRIBUTE, "AttributeType": "S"}, {"AttributeName": "at", "AttributeType": "S"}]
            extra["GlobalSecondaryIndexes"] = [{
                "IndexName": names.OUTBOX_INDEX, "Projection": {"ProjectionType": "ALL"},
                "KeySchema": [{"AttributeName": names.UNPUBLISHED_ATTRIBUTE, "KeyType": "HASH"}, {"AttributeName": "at", "KeyType": "RANGE"}]}]
        client.create_table(TableName=name, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST",
                            KeySchema=[{"AttributeName": key, "KeyType": "HASH"}], **extra)
