"""An order-aware consumer of webhook receipts: a stale delivery is acknowledged and changes nothing."""

# --8<-- [start:handler]
import json

from retrysafe import Message, Transaction, idempotent_sqs, put_if_newer


@idempotent_sqs(subscriber="pr-sync")
def handler(message: Message, txn: Transaction) -> None:
    pr = json.loads(message.content["payload"]["body"])
    put_if_newer({"pk": f"pr#{pr['number']}", "state": pr["action"], "version": pr["updated_at"]},
                 table="pull-requests")
# --8<-- [end:handler]
