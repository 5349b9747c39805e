"""A Kinesis consumer: one ledger entry per payment record, in shard order, whatever the retries."""

# --8<-- [start:handler]
from retrysafe import KinesisMessage, Transaction, idempotent_kinesis


@idempotent_kinesis(subscriber="ledger")          # key: partition key + sequence number
def handler(message: KinesisMessage, txn: Transaction) -> None:
    payment = message.content                     # the record's data, decoded (JSON here)
    txn.update({"pk": f"account#{payment['account']}"}, "ADD balance :amount",
               values={":amount": payment["amount"]}, table="accounts")
# --8<-- [end:handler]

# --8<-- [start:business-key]
@idempotent_kinesis(subscriber="ledger-by-payment", key="kinesis.data.payment_id",
                    fingerprint="kinesis.data.{account: account, amount: amount}")
def by_payment(message: KinesisMessage, txn: Transaction) -> None:
    # A producer that re-puts the same payment (new sequence number, new sent_at) is applied once.
    payment = message.content
    txn.update({"pk": f"account#{payment['account']}"}, "ADD balance :amount",
               values={":amount": payment["amount"]}, table="accounts")
# --8<-- [end:business-key]
