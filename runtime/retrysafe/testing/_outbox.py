"""Drill 6: the outbox publisher publishes the same events twice; the consumer applies each once.

The events come from the table itself (outbox items written by the user's
producer), are turned into the stream records DynamoDB would deliver, and go
through the real publisher (:func:`retrysafe.outbox.publisher.handler`) to an
SQS queue on moto. The first publish crashes right after ``SendMessageBatch``
succeeded (before the items are marked published), so the stream batch is
retried and every event is sent twice; each message is then delivered to the
consumer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._store import DynamoStore
from ..names import KIND_ATTRIBUTE, OUTBOX_KIND, PARTITION_KEY, UNPUBLISHED_ATTRIBUTE
from ..outbox._targets import SqsTarget
from ..outbox.publisher import Publisher, handler
from ._adapters import engine_of
from ._boundary import Boundary, SimulatedCrash
from ._drills import DrillFailed, DrillReport
from ._events import DrillContext, sqs_record


def outbox_stream_event(store: DynamoStore) -> dict[str, Any]:
    """A DynamoDB Streams event with one INSERT record per outbox item still marked unpublished."""
    request: dict[str, Any] = {"TableName": store.table_name, "ConsistentRead": True,
                               "FilterExpression": "#kind = :k AND attribute_exists(#obq)",
                               "ExpressionAttributeNames": {"#kind": KIND_ATTRIBUTE, "#obq": UNPUBLISHED_ATTRIBUTE},
                               "ExpressionAttributeValues": {":k": {"S": OUTBOX_KIND}}}
    items: list[dict[str, Any]] = []
    while True:  # a scan page holds at most 1 MB: large events span pages
        page = store.client.scan(**request)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            break
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return {"Records": [{"eventID": str(i), "eventName": "INSERT", "eventSource": "aws:dynamodb",
                         "dynamodb": {"Keys": {PARTITION_KEY: item[PARTITION_KEY]}, "NewImage": item,
                                      "SequenceNumber": f"{i + 1:021d}", "StreamViewType": "NEW_IMAGE"}}
                        for i, item in enumerate(items)]}


def publish_twice(store: DynamoStore, consumer: Callable[[Any, Any], Any], *,
                  effects: Callable[[], int] | None = None, queue: str = "retrysafe-drill-outbox") -> DrillReport:
    """Publish every unpublished outbox event twice and deliver both copies to ``consumer``.

    Asserts one committed effect per event on the consumer side (and, with
    ``effects``, that the counter grew by the number of events).
    """
    import boto3

    report = DrillReport("outbox event published twice", queue)
    sqs = boto3.client("sqs", region_name=store.region)  # whatever the store's transport is
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    event = outbox_stream_event(store)
    count = len(event["Records"])
    if not count:
        raise DrillFailed("drill 'outbox event published twice': the table holds no unpublished outbox event; "
                          "run a producer that calls txn.append_event first")
    publisher = Publisher(SqsTarget(url, client=sqs), store)
    sending = Boundary(sqs)
    try:
        sending.crash("SendMessageBatch", when="after")
        try:
            handler(event, None, publisher=publisher)
            report.steps.append("first publish: no crash happened (SendMessageBatch was never called)")
        except SimulatedCrash:
            report.steps.append(f"first publish of {count} events: crash after SendMessageBatch, "
                                "before the items were marked published")
        sending.revive()
        failures = handler(event, None, publisher=publisher)["batchItemFailures"]
        report.steps.append(f"the stream batch is retried: published again ({len(failures)} failures)")
    finally:
        sending.close()
    messages = _drain(sqs, url)
    report.steps.append(f"the queue holds {len(messages)} messages for {count} events")
    engine = engine_of(consumer)
    consuming = Boundary(engine.store.client)
    before = effects() if effects is not None else 0
    try:
        for message in messages:
            record = sqs_record(message["Body"], message_id=message["MessageId"],
                                attributes={k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()})
            consumer({"Records": [record]}, DrillContext())
        per_event: dict[str, int] = {}
        for commit in consuming.effects():
            per_event[str(commit.record_id)] = per_event.get(str(commit.record_id), 0) + 1
    finally:
        consuming.close()
    report.steps.append(f"the consumer committed effects {sorted(per_event.values())} for {count} events")
    report.effects = sum(per_event.values())
    grown = (effects() - before) if effects is not None else count
    if len(messages) < 2 * count or len(per_event) != count or set(per_event.values()) != {1} or grown != count:
        raise DrillFailed(f"drill '{report.drill}' failed: {count} events, {len(messages)} messages, effects per "
                          f"intent {per_event}, effects counter +{grown}\n{report.story()}")
    return report


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    while True:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                  WaitTimeSeconds=0).get("Messages", [])
        if not got:
            return seen
        seen.extend(got)
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                                        for i, m in enumerate(got)])


__all__ = ["outbox_stream_event", "publish_twice"]
