"""Shipping notices: tells the customer once per shipment, from the shipments table's DynamoDB stream.

An ``IdempotentStreamConsumer`` delivers the stream's ``INSERT`` s of ``shipment#`` items (its
filter); Lambda reads a batch again from its first record after a failure, so a record can arrive
more than once. The key is the record's sequence number (the default): the notice and the
processed-record record commit in one transaction. Importing this module makes no AWS call.
"""

from __future__ import annotations

import os
from typing import Any

from retrysafe import DynamoDBChange, Transaction, idempotent_dynamodb_stream

SHIPMENTS_TABLE = os.environ.get("SHIPMENTS_TABLE", "shipments")


@idempotent_dynamodb_stream(subscriber="shipping-notices")
def handler(change: DynamoDBChange, txn: Transaction) -> Any:
    """Record one notice for the shipped order (counted, ``notices``, so a second effect would show)."""
    order_id = change.new_image["order_id"]
    # A notice# item: the consumer's filter keeps its own writes out of its stream batches.
    txn.update({"pk": f"notice#{order_id}"}, "ADD notices :one", table=SHIPMENTS_TABLE, values={":one": 1})
    return None
