"""``@idempotent_http`` behind a Lambda function URL with ``AuthType AWS_IAM``: the tenant is the IAM caller."""

# --8<-- [start:handler]
import json
from typing import Any

from retrysafe import Transaction, idempotent_http
from retrysafe.http import HttpRequest  # role_tenant below


@idempotent_http(operation="CreateOrder", fingerprint="{amount: amount, currency: currency}")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    body = json.loads(event["body"])              # {"amount": ..., "currency": ..., "sent_at": ...}
    order_id = txn.derive_key("order")[:20]
    txn.put({"pk": f"order#{order_id}", "amount": body["amount"], "currency": body["currency"]},
            table="orders")
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": order_id})}
# --8<-- [end:handler]


# --8<-- [start:role_tenant]
def role_tenant(request: HttpRequest) -> str | None:
    """The signing role, without its session name: a credential refresh keeps the tenant."""
    iam = request.event.get("requestContext", {}).get("authorizer", {}).get("iam") or {}
    arn = iam.get("userArn") or ""
    # arn:aws:sts::<account>:assumed-role/<role>/<session>  ->  arn:aws:sts::<account>:assumed-role/<role>
    if ":assumed-role/" in arn:
        return arn.rsplit("/", 1)[0]
    return arn or None


@idempotent_http(operation="CreateOrder", tenant=role_tenant)
def per_role(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    order_id = txn.derive_key("order")[:20]
    txn.put({"pk": f"order#{order_id}", "amount": json.loads(event["body"])["amount"]}, table="orders")
    return {"statusCode": 201, "body": json.dumps({"id": order_id})}
# --8<-- [end:role_tenant]
