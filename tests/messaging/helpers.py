"""Builders for Lambda SQS / DynamoDB Streams events from what real (moto) services return."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

REGION = "eu-west-1"
ACCOUNT = "123456789012"


def queue_arn(name: str) -> str:
    """The ARN of a queue in the test account."""
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def sqs_record(body: Any, *, message_id: str | None = None, attributes: dict[str, str] | None = None,
               group: str | None = None, queue: str = "inbox", receive_count: int = 1) -> dict[str, Any]:
    """One SQS record of a Lambda event, built by hand."""
    system = {"ApproximateReceiveCount": str(receive_count), "SentTimestamp": "1700000000000",
              "SenderId": "AIDAEXAMPLE", "ApproximateFirstReceiveTimestamp": "1700000000001"}
    if group is not None:
        system.update(MessageGroupId=group, SequenceNumber="1", MessageDeduplicationId=uuid.uuid4().hex)
    return {
        "messageId": message_id or str(uuid.uuid4()), "receiptHandle": uuid.uuid4().hex,
        "body": body if isinstance(body, str) else json.dumps(body), "attributes": system,
        "messageAttributes": {k: {"stringValue": v, "stringListValues": [], "binaryListValues": [],
                                  "dataType": "String"} for k, v in (attributes or {}).items()},
        "md5OfBody": "-", "eventSource": "aws:sqs", "eventSourceARN": queue_arn(queue), "awsRegion": REGION,
    }


def sqs_event_from_messages(messages: list[dict[str, Any]], queue: str) -> dict[str, Any]:
    """The Lambda event for messages returned by ReceiveMessage (AttributeNames/MessageAttributeNames All)."""
    records = []
    for m in messages:
        records.append({
            "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": m.get("Attributes", {}),
            "messageAttributes": {k: {"stringValue": v.get("StringValue"), "stringListValues": [],
                                      "binaryListValues": [], "dataType": v["DataType"]}
                                  for k, v in m.get("MessageAttributes", {}).items()},
            "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs", "eventSourceARN": queue_arn(queue),
            "awsRegion": REGION,
        })
    return {"Records": records}


def receive_all(sqs: Any, url: str, expected: int | None = None, attempts: int = 10) -> list[dict[str, Any]]:
    """Receive until the queue is drained (or ``expected`` messages were seen)."""
    seen: list[dict[str, Any]] = []
    for _ in range(attempts):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"],
                                  MessageAttributeNames=["All"], WaitTimeSeconds=0).get("Messages", [])
        seen.extend(got)
        if not got and (expected is None or len(seen) >= expected):
            break
    return seen


def stream_event(records: list[dict[str, Any]], stream_arn: str) -> dict[str, Any]:
    """The Lambda event for records returned by dynamodbstreams GetRecords."""
    out = []
    for r in records:
        dynamodb = dict(r["dynamodb"])
        created = dynamodb.get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
        out.append({**{k: v for k, v in r.items() if k != "dynamodb"}, "dynamodb": dynamodb,
                    "eventSourceARN": stream_arn})
    return {"Records": out}
