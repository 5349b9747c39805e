"""The same handlers on retrysafe: the decorator lines and the imports changed, nothing else."""

# --8<-- [start:composite-after]
from typing import Any

from retrysafe import idempotent

from examples.snippets.payments import payments


@idempotent(key='["user_id", "product_id"]')
def subscribe(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=event["amount"], idempotency_key=context.aws_request_id)
    return {"subscription": f"{event['user_id']}/{event['product_id']}", "charge": charge.id}
# --8<-- [end:composite-after]


# --8<-- [start:validation-after]
@idempotent(key='["user_id", "product_id"]', fingerprint="amount")
def pay(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=event["amount"], idempotency_key=context.aws_request_id)
    return {"payment": f"{event['user_id']}/{event['product_id']}", "charge": charge.id}
# --8<-- [end:validation-after]


# --8<-- [start:prefix-after]
@idempotent(key='["user_id", "product_id"]', subscriber="subscriptions", operation="renew")
def renew(event: dict[str, Any], context: Any) -> dict[str, Any]:
    charge = payments.charge(amount=event["amount"], idempotency_key=context.aws_request_id)
    return {"renewal": f"{event['user_id']}/{event['product_id']}", "charge": charge.id}
# --8<-- [end:prefix-after]
