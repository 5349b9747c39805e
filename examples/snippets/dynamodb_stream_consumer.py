"""A DynamoDB Streams consumer: keep a search index in step with the orders table."""

# --8<-- [start:handler]
from retrysafe import DynamoDBChange, Transaction, idempotent_dynamodb_stream


@idempotent_dynamodb_stream(subscriber="search-index", skip_ttl_removals=True)
def handler(change: DynamoDBChange, txn: Transaction) -> None:
    order_id = change.keys["pk"]
    if change.event_name == "REMOVE":             # an application's delete (TTL removals are skipped)
        txn.delete({"pk": f"doc#{order_id}"}, table="search")
    else:                                         # INSERT or MODIFY: the image after the change
        txn.put({"pk": f"doc#{order_id}", "total": change.new_image["total"]}, table="search")
# --8<-- [end:handler]
