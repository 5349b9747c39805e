"""Powertools' idempotent functions of a dataclass and of a pydantic model (the migration guide's "before")."""

# --8<-- [start:before]
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from pydantic import BaseModel

persistence_layer = DynamoDBPersistenceLayer(table_name="IdempotencyTable")
config = IdempotencyConfig(event_key_jmespath="order_id")
processed: list[str] = []  # what really ran (the tests count it)


@dataclass
class OrderItem:
    sku: str
    description: str


@dataclass
class Order:
    item: OrderItem
    order_id: int


class OrderItemModel(BaseModel):
    sku: str
    description: str


class OrderModel(BaseModel):
    item: OrderItemModel
    order_id: int


@idempotent_function(data_keyword_argument="order", config=config, persistence_store=persistence_layer)
def process_order(order: Order) -> str:
    processed.append(f"order {order.order_id}")
    return f"processed order {order.order_id}"


@idempotent_function(data_keyword_argument="order", config=config, persistence_store=persistence_layer)
def process_model_order(order: OrderModel) -> str:
    processed.append(f"model order {order.order_id}")
    return f"processed model order {order.order_id}"


def lambda_handler(event: dict[str, Any], context: Any) -> list[str]:
    config.register_lambda_context(context)  # the functions' claims last as long as this invocation
    order = Order(item=OrderItem(sku=event["sku"], description=event["description"]), order_id=event["order_id"])
    model = OrderModel(item=OrderItemModel(sku=event["sku"], description=event["description"]),
                       order_id=event["order_id"])
    return [process_order(order=order), process_model_order(order=model)]
# --8<-- [end:before]
