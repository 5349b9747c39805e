"""Test-only helpers shared by the suite. Lambda events, contexts and clocks come from ``retrysafe.testing``.

- :class:`CallCounter` -- the DynamoDB round trips a client makes (botocore ``before-call`` events)
- :func:`create_business_table` -- a business table keyed by ``pk``, as the handlers under test write
- :func:`receive_all`, :func:`stream_event` -- what moto's SQS and DynamoDB Streams return, for Lambda
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any


class CallCounter:
    """Counts DynamoDB API calls made through a client, via botocore's ``before-call`` event."""

    def __init__(self, client: Any) -> None:
        self.calls: Counter[str] = Counter()
        client.meta.events.register("before-call.dynamodb", self._on_call)

    def _on_call(self, model: Any, **_: Any) -> None:
        self.calls[model.name] += 1

    @property
    def total(self) -> int:
        """Calls since the last reset."""
        return sum(self.calls.values())

    def reset(self) -> None:
        """Start counting from zero."""
        self.calls.clear()


def create_business_table(client: Any, name: str) -> None:
    """An on-demand table with the string partition key ``pk`` (the idempotency table: the plugin's ``create_table``)."""
    client.create_table(TableName=name, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")


def receive_all(sqs: Any, url: str, expected: int | None = None, attempts: int = 10) -> list[dict[str, Any]]:
    """Receive until the queue is drained (or ``expected`` messages were seen), with every attribute."""
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
