"""The same kinds of use on retrysafe: each ported by its decorator line and imports (the migration guide's
"after"s; where a line more changes, the guide says which and why)."""

# --8<-- [start:hook-after]
import uuid
from datetime import UTC, datetime
from typing import Any

from retrysafe import ReplayInfo, idempotent_function

from examples.snippets.payments import payments


def my_response_hook(response: dict[str, Any], idempotent_data: ReplayInfo) -> dict[str, Any]:
    response["x-idempotent-key"] = idempotent_data.record_id
    expiry = idempotent_data.expires_at
    if expiry:
        response["x-idempotent-expiration"] = datetime.fromtimestamp(expiry, UTC).isoformat()
    return response


@idempotent_function(data_keyword_argument="order", on_replay=my_response_hook)
def process_order(order: dict[str, Any]) -> dict[str, Any]:
    charge = payments.charge(amount=order["amount"], idempotency_key=str(uuid.uuid4()))
    return {"order": order["id"], "charge": charge.id}
# --8<-- [end:hook-after]


# --8<-- [start:batch-after]
from retrysafe import Message, idempotent_sqs


@idempotent_sqs(key="messageId")
def record_handler(record: Message) -> dict[str, Any]:
    charge = payments.charge(amount=1, idempotency_key=str(uuid.uuid4()))
    return {"message": record.record.body, "charge": charge.id}
# --8<-- [end:batch-after]


# --8<-- [start:serializers-after]
from dataclasses import dataclass

from pydantic import BaseModel


@dataclass
class OrderOutput:
    order_id: int
    charge: str


@idempotent_function(data_keyword_argument="order", key="order_id")
def process_dataclass_order(order: dict[str, Any]) -> OrderOutput:
    charge = payments.charge(amount=order["amount"], idempotency_key=str(uuid.uuid4()))
    return OrderOutput(order_id=order["order_id"], charge=charge.id)


class OrderModel(BaseModel):
    order_id: int
    charge: str


@idempotent_function(data_keyword_argument="order", key="order_id")
def process_pydantic_order(order: dict[str, Any]) -> OrderModel:
    charge = payments.charge(amount=order["amount"], idempotency_key=str(uuid.uuid4()))
    return OrderModel(order_id=order["order_id"], charge=charge.id)
# --8<-- [end:serializers-after]


# --8<-- [start:cache-after]
from retrysafe import idempotent


@idempotent(key="body")
def cached_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=1, idempotency_key=str(uuid.uuid4()))
    return {"body": event["body"], "charge": charge.id}
# --8<-- [end:cache-after]


# --8<-- [start:exceptions-after]
from retrysafe.errors import RequestInFlightError


@idempotent_function(data_keyword_argument="data")
def call_external_service(data: dict[str, Any]) -> dict[str, Any]:
    # An exception raised here keeps no record: a retry calls the service again
    charge = payments.charge(amount=data["amount"], idempotency_key=str(uuid.uuid4()))
    return {"charge": charge.id}


def exceptions_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        result = call_external_service(data=event["data"])
    except RequestInFlightError:  # the same data, still running elsewhere
        return {"statusCode": 409}
    # An exception raised here keeps the record: the function returned, a retry replays its result
    if event.get("fail_after"):
        raise RuntimeError("failed after the idempotent call")
    return {"statusCode": 200, "result": result}
# --8<-- [end:exceptions-after]
