"""One envelope, whichever relay publishes it: the Lambda publisher and OutboxPipe as synthesized.

One outbox item goes through the publisher (PutEvents) and through the pipe's deployed
configuration (its enrichment function and input template, rendered as Pipes does against a
DynamoDB stream record). Both land on the same moto bus, pass the WebhookReceiver's Stripe rule
pattern (moto routes them to the work queue through it), and reach the same ``@idempotent_sqs``
consumer, which runs once and replays the other.
"""

from __future__ import annotations

import importlib
import json
import re
from datetime import UTC, datetime
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_events as events
from boto3.dynamodb.types import TypeDeserializer
from retrysafe import names
from retrysafe._transaction import Transaction
from retrysafe.outbox import OutboxEvent, OutboxMessage
from retrysafe.outbox._targets import EventBridgeTarget
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, sqs_event
from retrysafe_cdk import IdempotencyTable, IdempotentRestApi, OutboxPipe, OutboxTarget, WebhookReceiver

from tests.helpers import receive_all

from .builders import inline_function

SOURCE = "orders"
REGION = "eu-west-1"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """A stack whose Stripe webhook receipts are relayed by an OutboxPipe, synthesized."""
    app = cdk.App()
    stack = cdk.Stack(app, "PipeEnvelope")
    table = IdempotencyTable(stack, "Table")
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"), source=SOURCE)
    OutboxPipe(stack, "Pipe", table=table, target=target)
    api = IdempotentRestApi(stack, "Api", iam_authorization=True)
    WebhookReceiver(stack, "Stripe", table=table, api=api, worker=inline_function(stack, table),
                    outbox_target=target, provider="stripe")
    result: dict[str, Any] = app.synth().get_stack_by_name("PipeEnvelope").template
    return result


def _of_type(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == kind]


def _path(document: Any, path: str) -> Any:
    """A JSON path of the dotted form Pipes templates use (``$.a.b``)."""
    value = document
    for part in path.removeprefix("$").strip(".").split("."):
        if part:
            value = value[part]
    return value


def _render(input_template: str, event: Any) -> Any:
    """An input template rendered as Pipes does: quoted variables get the escaped text, bare ones JSON."""
    def quoted(match: re.Match[str]) -> str:
        value = _path(event, match.group(1))
        return json.dumps(value if isinstance(value, str) else json.dumps(value))

    text = re.sub(r'"<(\$[^>]*)>"', quoted, input_template)
    text = re.sub(r"<(\$[^>]*)>", lambda m: json.dumps(_path(event, m.group(1))), text)
    return json.loads(text)


def through_pipe(template: dict[str, Any], record: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(source, detail-type, detail) of each event the deployed pipe puts on the bus for ``record``."""
    (pipe,) = _of_type(template, "AWS::Pipes::Pipe")
    props = pipe["Properties"]
    batch: list[Any] = [record]
    if "Enrichment" in props:
        function = template["Resources"][props["Enrichment"]["Fn::GetAtt"][0]]["Properties"]
        module, name = function["Handler"].rsplit(".", 1)
        batch = getattr(importlib.import_module(module), name)(batch, None)
    parameters = props["TargetParameters"]
    bus = parameters["EventBridgeEventBusParameters"]
    detail_type = bus["DetailType"]
    # Dynamic target parameters read the event before the input template; the template makes the detail.
    return [(bus["Source"], _path(event, detail_type) if detail_type.startswith("$.") else detail_type,
             _render(parameters["InputTemplate"], event) if "InputTemplate" in parameters else event)
            for event in batch]


def stripe_pattern(template: dict[str, Any]) -> dict[str, Any]:
    (rule,) = [r for r in _of_type(template, "AWS::Events::Rule") if "EventPattern" in r["Properties"]]
    pattern: dict[str, Any] = rule["Properties"]["EventPattern"]
    return pattern


def test_publisher_and_pipe_deliver_one_envelope_to_the_same_rule_and_consumer(
        template: dict[str, Any], store: Any, ddb: Any) -> None:
    occurred = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    receipt = {"source": "stripe", "hook": "default", "delivery_id": "evt_1", "event": "charge.succeeded",
               "body": "{\"id\": \"evt_1\"}", "body_encoding": "utf-8"}
    item = OutboxEvent("0b5d7c7e-3f1a-5b2c-9d4e-1a2b3c4d5e6f", names.WEBHOOK_RECEIPT_EVENT, "webhook:stripe", "evt_1",
                       receipt, occurred).to_item(1_900_000_000, committed_at=occurred.timestamp())
    record = {"eventID": "1", "eventName": "INSERT", "eventVersion": "1.1", "eventSource": "aws:dynamodb",
              "awsRegion": REGION, "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/t/stream/x",
              "dynamodb": {"Keys": {"pk": item["pk"]}, "NewImage": item, "SequenceNumber": "100",
                           "SizeBytes": 100, "StreamViewType": "NEW_IMAGE"}}
    pattern = stripe_pattern(template)

    bus_events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
    bus_events.create_event_bus(Name="bus")
    url = sqs.create_queue(QueueName="work")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    bus_events.put_rule(Name="stripe", EventBusName="bus", EventPattern=json.dumps(pattern))
    bus_events.put_targets(Rule="stripe", EventBusName="bus", Targets=[{"Id": "work", "Arn": arn}])

    deserializer = TypeDeserializer()
    message = OutboxMessage.from_item({k: deserializer.deserialize(v) for k, v in item.items()})
    assert not EventBridgeTarget("bus", SOURCE, client=bus_events).send([message])  # nothing refused
    (published,) = receive_all(sqs, url, expected=1)

    for source, detail_type, detail in through_pipe(template, record):
        entry = {"EventBusName": "bus", "Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}
        assert bus_events.put_events(Entries=[entry])["FailedEntryCount"] == 0
    (piped,) = receive_all(sqs, url, expected=1)

    by_publisher, by_pipe = json.loads(published["Body"]), json.loads(piped["Body"])
    assert by_pipe["detail"] == by_publisher["detail"] == message.envelope()
    assert (by_pipe["source"], by_pipe["detail-type"]) == (by_publisher["source"], by_publisher["detail-type"])
    # Each reached the queue through the rule's pattern (moto matches it; its TestEventPattern is not
    # implemented). The control: the same event for another webhook source does not match.
    other = {**by_pipe["detail"], "aggregate_type": "webhook:github"}
    bus_events.put_events(Entries=[{"EventBusName": "bus", "Source": SOURCE, "DetailType": names.WEBHOOK_RECEIPT_EVENT,
                                    "Detail": json.dumps(other)}])
    assert receive_all(sqs, url) == []

    effects: list[str] = []

    def work(message: Message, txn: Transaction) -> str:
        effects.append(message.key)
        return "done"

    # claim-first: the handler body runs only for the first delivery (atomic mode re-runs it, dropping writes)
    consumer = idempotent_sqs(work, subscriber="stripe-worker", mode="claim_first", store=store)
    for delivered in (published, piped):
        response = consumer(sqs_event([delivered], "work"), DrillContext())
        assert response == {"batchItemFailures": []}
    assert effects == [message.event_id]  # the second delivery is a replay of the first, keyed on the event id
