"""The HTTP contract as a Powertools event-handler middleware."""

# --8<-- [start:app]
import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from retrysafe import TRANSACTION_KEY, IdempotencyMiddleware

app = APIGatewayRestResolver()


@app.post("/orders", middlewares=[IdempotencyMiddleware(operation="CreateOrder")])
def create_order() -> Response[str]:
    txn = app.context[TRANSACTION_KEY]
    order_id = txn.derive_key("order")[:20]
    txn.put({"pk": f"order#{order_id}", **app.current_event.json_body}, table="orders")
    return Response(201, content_types.APPLICATION_JSON, json.dumps({"id": order_id}),
                    headers={"Location": f"/orders/{order_id}"})


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
# --8<-- [end:app]
