"""A table with replicas: every claim and commit of a tenant is sent to its home region (without the constructs)."""

# --8<-- [start:store]
import json
from typing import Any

from retrysafe import DynamoStore, Engine, HomeRegions, Transaction, idempotent_http

# What the constructs pass as RETRYSAFE_HOME_REGION / RETRYSAFE_TENANT_HOME_REGIONS, here in code:
HOMES = HomeRegions("eu-west-1", tenants={"acme": "us-east-1"})
store = DynamoStore("idempotency", home_regions=HOMES)


@idempotent_http(operation="CreateOrder", engine=Engine(store))
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])
    order_id = txn.derive_key("order")[:20]
    txn.put({"pk": f"order#{order_id}", "amount": body["amount"]}, table="orders")  # the home region's replica
    return {"statusCode": 201, "body": json.dumps({"id": order_id})}
# --8<-- [end:store]
