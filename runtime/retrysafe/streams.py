"""``@idempotent_kinesis`` and ``@idempotent_dynamodb_stream``: idempotent consumers of Kinesis Data Streams
and DynamoDB Streams.

Per record, the same engine and contract as :func:`retrysafe.idempotent_sqs`:
in atomic mode one ``TransactWriteItems`` commits the processed-record record
with the handler's writes and events, and a redelivery is a no-op in that one
round trip. Failures are reported as ``batchItemFailures`` (sequence numbers);
after a failure the rest of that shard's batch is reported failed without
running, so the shard's order holds.
"""

from __future__ import annotations

from ._streams import (
    DynamoDBChange,
    DynamoDBStreamLambdaHandler,
    KinesisLambdaHandler,
    KinesisMessage,
    StreamConsumer,
    idempotent_dynamodb_stream,
    idempotent_kinesis,
)

__all__ = ["DynamoDBChange", "DynamoDBStreamLambdaHandler", "KinesisLambdaHandler", "KinesisMessage",
           "StreamConsumer", "idempotent_dynamodb_stream", "idempotent_kinesis"]
