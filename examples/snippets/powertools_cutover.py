"""The same API on retrysafe, with the cut-over on (the migration guide's "after")."""

# --8<-- [start:after]
import json
from typing import Any

from retrysafe import Mode, PowertoolsCutover, Transaction, idempotent_http

from .payments import payments  # your provider's client (a fake in these docs)

# What the old code configured: the same jmespath, hash and function ("<module>.<function>").
# table_name and until come from the environment IdempotentFunction(powertools_cutover=...) sets.
CUTOVER = PowertoolsCutover(function_name="orders_api.lambda_handler",
                            event_key_jmespath='headers."idempotency-key"')


@idempotent_http(operation="CreateOrder", mode=Mode.CLAIM_FIRST, tenant=None, powertools_cutover=CUTOVER)
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    order = json.loads(event["body"])
    charge = payments.charge(amount=order["amount"], idempotency_key=txn.derive_key("charge"))
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"charge": charge.id})}
# --8<-- [end:after]
