"""The same functions on retrysafe: the decorator lines and the imports changed, and the context is
registered with retrysafe's ``register_lambda_context`` instead of Powertools' config."""

# --8<-- [start:after]
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from retrysafe import idempotent_function, register_lambda_context

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


@idempotent_function(data_keyword_argument="order", key="order_id")
def process_order(order: Order) -> str:
    processed.append(f"order {order.order_id}")
    return f"processed order {order.order_id}"


@idempotent_function(data_keyword_argument="order", key="order_id")
def process_model_order(order: OrderModel) -> str:
    processed.append(f"model order {order.order_id}")
    return f"processed model order {order.order_id}"


def lambda_handler(event: dict[str, Any], context: Any) -> list[str]:
    register_lambda_context(context)  # the functions' claims last as long as this invocation
    order = Order(item=OrderItem(sku=event["sku"], description=event["description"]), order_id=event["order_id"])
    model = OrderModel(item=OrderItemModel(sku=event["sku"], description=event["description"]),
                       order_id=event["order_id"])
    return [process_order(order=order), process_model_order(order=model)]
# --8<-- [end:after]
