"""Powertools idempotency as its documentation shows each kind of use (the migration guide's "before"s):
a response hook, an SQS batch, output serializers, the local cache and its exceptions."""

# --8<-- [start:hook-before]
import uuid
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from examples.snippets.payments import payments

persistence_layer = DynamoDBPersistenceLayer(table_name="IdempotencyTable")


def my_response_hook(response: dict[str, Any], idempotent_data: DataRecord) -> dict[str, Any]:
    response["x-idempotent-key"] = idempotent_data.idempotency_key
    expiry = idempotent_data.get_expiration_datetime()
    if expiry:
        response["x-idempotent-expiration"] = expiry.isoformat()
    return response


hook_config = IdempotencyConfig(response_hook=my_response_hook)


@idempotent_function(data_keyword_argument="order", config=hook_config, persistence_store=persistence_layer)
def process_order(order: dict[str, Any]) -> dict[str, Any]:
    charge = payments.charge(amount=order["amount"], idempotency_key=str(uuid.uuid4()))
    return {"order": order["id"], "charge": charge.id}
# --8<-- [end:hook-before]


# --8<-- [start:batch-before]
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

processor = BatchProcessor(event_type=EventType.SQS)
batch_config = IdempotencyConfig(event_key_jmespath="messageId")


@idempotent_function(data_keyword_argument="record", config=batch_config, persistence_store=persistence_layer)
def record_handler(record: SQSRecord) -> dict[str, Any]:
    charge = payments.charge(amount=1, idempotency_key=str(uuid.uuid4()))
    return {"message": record.body, "charge": charge.id}


def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    batch_config.register_lambda_context(context)
    return process_partial_response(event=event, context=context, processor=processor,
                                    record_handler=record_handler)
# --8<-- [end:batch-before]


# --8<-- [start:serializers-before]
from dataclasses import dataclass

from aws_lambda_powertools.utilities.idempotency.serialization.dataclass import DataclassSerializer
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from pydantic import BaseModel

order_config = IdempotencyConfig(event_key_jmespath="order_id")


@dataclass
class OrderOutput:
    order_id: int
    charge: str


@idempotent_function(data_keyword_argument="order", config=order_config, persistence_store=persistence_layer,
                     output_serializer=DataclassSerializer)
def process_dataclass_order(order: dict[str, Any]) -> OrderOutput:
    charge = payments.charge(amount=order["amount"], idempotency_key=str(uuid.uuid4()))
    return OrderOutput(order_id=order["order_id"], charge=charge.id)


class OrderModel(BaseModel):
    order_id: int
    charge: str


@idempotent_function(data_keyword_argument="order", config=order_config, persistence_store=persistence_layer,
                     output_serializer=PydanticSerializer(model=OrderModel))
def process_pydantic_order(order: dict[str, Any]) -> OrderModel:
    charge = payments.charge(amount=order["amount"], idempotency_key=str(uuid.uuid4()))
    return OrderModel(order_id=order["order_id"], charge=charge.id)
# --8<-- [end:serializers-before]


# --8<-- [start:cache-before]
from aws_lambda_powertools.utilities.idempotency import idempotent

cache_config = IdempotencyConfig(event_key_jmespath="body", use_local_cache=True)


@idempotent(config=cache_config, persistence_store=persistence_layer)
def cached_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=1, idempotency_key=str(uuid.uuid4()))
    return {"body": event["body"], "charge": charge.id}
# --8<-- [end:cache-before]


# --8<-- [start:exceptions-before]
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

exceptions_config = IdempotencyConfig()


@idempotent_function(data_keyword_argument="data", config=exceptions_config, persistence_store=persistence_layer)
def call_external_service(data: dict[str, Any]) -> dict[str, Any]:
    # An exception raised here keeps no record: a retry calls the service again
    charge = payments.charge(amount=data["amount"], idempotency_key=str(uuid.uuid4()))
    return {"charge": charge.id}


def exceptions_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        result = call_external_service(data=event["data"])
    except IdempotencyAlreadyInProgressError:  # the same data, still running elsewhere
        return {"statusCode": 409}
    # An exception raised here keeps the record: the function returned, a retry replays its result
    if event.get("fail_after"):
        raise RuntimeError("failed after the idempotent call")
    return {"statusCode": 200, "result": result}
# --8<-- [end:exceptions-before]
