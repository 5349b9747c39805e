"""An idempotent SQS consumer (the inbox): one invoice per ``OrderPlaced`` event, whatever the redeliveries."""

# --8<-- [start:handler]
from retrysafe import Message, Transaction, idempotent_sqs


@idempotent_sqs(subscriber="billing")
def handler(message: Message, txn: Transaction) -> None:
    event = message.content                     # the outbox envelope (EventBridge/SNS wrapping removed)
    order = event["payload"]                    # {"order_id": ..., "amount": ...} from OrderPlaced
    txn.put({"pk": f"invoice#{order['order_id']}", "amount": order["amount"]}, table="invoices")
    txn.append_event("InvoiceCreated", {"order_id": order["order_id"]},
                     aggregate_type="Invoice", aggregate_id=order["order_id"], sequence=1)
# --8<-- [end:handler]
