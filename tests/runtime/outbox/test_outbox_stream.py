"""End to end on moto's server (DynamoDB Streams need it): runtime -> table stream -> publisher ->
EventBridge bus -> rule -> SQS queue -> idempotent consumer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from retrysafe import names
from retrysafe._engine import Completion, Engine, Intent
from retrysafe._keys import Scope
from retrysafe._store import DynamoStore
from retrysafe._transaction import Transaction
from retrysafe.outbox._stream import outbox_inserts
from retrysafe.outbox._targets import EventBridgeTarget
from retrysafe.outbox.publisher import Publisher, handler
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, sqs_event

from tests.helpers import (
    ORDERS,
    TABLE,
    create_business_table,
    create_idempotency_table,
    receive_all,
    stream_event,
)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A moto server on a free local port (in-process moto does not implement DescribeStream)."""
    from moto.server import ThreadedMotoServer

    motoserver = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    motoserver.start()
    host, port = motoserver.get_host_and_port()
    yield f"http://{host}:{port}"
    motoserver.stop()


@pytest.fixture
def clients(server: str) -> Iterator[dict[str, Any]]:
    """Clients of the server, with a fresh idempotency table, orders table, bus, rule and queue."""
    made = {name: boto3.client(name, region_name="eu-west-1", endpoint_url=server)
            for name in ("dynamodb", "dynamodbstreams", "events", "sqs")}
    ddb = made["dynamodb"]
    create_idempotency_table(ddb)
    create_business_table(ddb, ORDERS)
    url = made["sqs"].create_queue(QueueName="shipping")["QueueUrl"]
    arn = made["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    made["events"].create_event_bus(Name="orders-bus")
    made["events"].put_rule(Name="to-shipping", EventBusName="orders-bus",
                            EventPattern=json.dumps({"source": [names.DEFAULT_EVENT_SOURCE]}))
    made["events"].put_targets(Rule="to-shipping", EventBusName="orders-bus", Targets=[{"Id": "q", "Arn": arn}])
    made["queue_url"] = url
    yield made
    ddb.delete_table(TableName=TABLE)
    ddb.delete_table(TableName=ORDERS)
    made["sqs"].delete_queue(QueueUrl=url)
    made["events"].remove_targets(Rule="to-shipping", EventBusName="orders-bus", Ids=["q"])
    made["events"].delete_rule(Name="to-shipping", EventBusName="orders-bus")
    made["events"].delete_event_bus(Name="orders-bus")


def read_stream(clients: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """Every record of the idempotency table's stream, read with GetShardIterator/GetRecords."""
    arn = clients["dynamodb"].describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    streams = clients["dynamodbstreams"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        records.extend(streams.get_records(ShardIterator=iterator)["Records"])
    return arn, records


def place_order(store: DynamoStore) -> str:
    """An HTTP-like operation: the order and its OrderPlaced event commit in one transaction."""
    def work(txn: Transaction) -> Completion:
        txn.put({"pk": "order#1", "total": 42}, table=ORDERS)
        txn.append_event("OrderPlaced", {"order": "1", "total": 42}, aggregate_type="Order", aggregate_id="1",
                         sequence=1)
        return Completion({"order": "1"})

    Engine(store).execute(Intent(Scope("tenant-a", "PlaceOrder", "key-1", adapter=names.HTTP_ADAPTER), "fp"), work)
    (event_id,) = [i["eid"]["S"] for i in store.client.scan(TableName=TABLE)["Items"] if "eid" in i]
    return str(event_id)


def test_published_twice_applied_once(clients: dict[str, Any]) -> None:
    store = DynamoStore(TABLE, client=clients["dynamodb"])
    event_id = place_order(store)
    stream_arn, records = read_stream(clients)
    assert [r["eventName"] for r in records].count("INSERT") >= 2  # the record and the outbox item (and the order)
    publisher = Publisher(EventBridgeTarget("orders-bus", client=clients["events"]), store)

    lambda_event = stream_event(records, stream_arn)
    assert handler(lambda_event, DrillContext(), publisher=publisher) == {"batchItemFailures": []}
    assert handler(lambda_event, DrillContext(), publisher=publisher) == {"batchItemFailures": []}  # a retry

    item = clients["dynamodb"].get_item(TableName=TABLE, Key={"pk": {"S": names.OUTBOX_PREFIX + event_id}})["Item"]
    assert names.UNPUBLISHED_ATTRIBUTE not in item and "published_at" in item
    # The mark-published update shows up on the stream as MODIFY; it is not published again.
    _, after = read_stream(clients)
    assert "MODIFY" in [r["eventName"] for r in after]
    assert [m.event_id for _, m in outbox_inserts(stream_event(after, stream_arn)["Records"])] == [event_id]

    messages = receive_all(clients["sqs"], clients["queue_url"], expected=2)
    assert len(messages) == 2
    envelopes = [json.loads(m["Body"]) for m in messages]
    assert envelopes[0]["id"] != envelopes[1]["id"]  # EventBridge ids differ per publish...
    assert {e["detail"]["event_id"] for e in envelopes} == {event_id}  # ...the event id does not
    assert envelopes[0]["detail-type"] == "OrderPlaced" and envelopes[0]["source"] == names.DEFAULT_EVENT_SOURCE
    assert envelopes[0]["detail"]["sequence"] == 1 and envelopes[0]["detail"]["aggregate_id"] == "1"

    seen: list[str] = []

    def ship(message: Message, txn: Transaction) -> None:
        seen.append(message.key)
        txn.update({"pk": f"shipment#{message.content['aggregate_id']}"}, "ADD n :one", values={":one": 1},
                   table=ORDERS)

    consumer = idempotent_sqs(ship, subscriber="shipping", store=store)
    assert consumer(sqs_event(messages, "shipping"), DrillContext()) == {"batchItemFailures": []}
    shipment = clients["dynamodb"].get_item(TableName=ORDERS, Key={"pk": {"S": "shipment#1"}})["Item"]
    assert shipment["n"]["N"] == "1" and seen == [event_id, event_id]


def test_a_1mb_github_delivery_through_the_real_stream_is_consumed_once(clients: dict[str, Any], server: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Receiver -> S3 claim check + outbox -> the table's stream (GetRecords) -> publisher -> bus -> rule ->
    queue -> consumer that gets the body back inline, all on moto's server."""
    import base64
    import hashlib
    import hmac

    from retrysafe._claimcheck import ClaimCheck
    from retrysafe.testing._events import rest_event
    from retrysafe.webhook import GitHub, WebhookReceiver

    s3 = boto3.client("s3", region_name="eu-west-1", endpoint_url=server)
    s3.create_bucket(Bucket="bodies", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    store = DynamoStore(TABLE, client=clients["dynamodb"])
    secret = b"hook-secret"
    body = json.dumps({"ref": "refs/heads/main", "commits": [{"message": "\u00fc" * 500, "id": f"{i:040x}"}
                                                             for i in range(1000)]}).encode()
    assert len(body) > 1_000_000
    receiver = WebhookReceiver(GitHub(), secrets=lambda: [secret], store=store,
                               claim_check=ClaimCheck("bodies", client=s3))
    signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    for delivery in ("d-1", "d-1-redelivered"):
        event = rest_event(raw_body=base64.b64encode(body).decode(), base64=True, key=None, tenant=None,
                           resource="/hooks/github", headers={"X-Hub-Signature-256": signature,
                                                              "X-GitHub-Delivery": delivery, "X-GitHub-Event": "push"})
        assert receiver(event, DrillContext())["statusCode"] == 202

    stream_arn, records = read_stream(clients)
    publisher = Publisher(EventBridgeTarget("orders-bus", client=clients["events"]), store)
    lambda_event = stream_event(records, stream_arn)
    assert handler(lambda_event, DrillContext(), publisher=publisher) == {"batchItemFailures": []}
    messages = receive_all(clients["sqs"], clients["queue_url"], expected=1)
    assert len(messages) == 1 and json.loads(messages[0]["Body"])["detail"]["payload"]["body_encoding"] == "s3"

    pushes: list[int] = []

    def build(message: Message, txn: Transaction) -> None:
        receipt = message.content["payload"]
        assert receipt["body"].encode() == body and receipt["body_sha256"] == hashlib.sha256(body).hexdigest()
        pushes.append(len(json.loads(receipt["body"])["commits"]))
        txn.update({"pk": "builds"}, "ADD n :one", values={":one": 1}, table=ORDERS)

    # The consumer's own S3 client (boto3 defaults) reaches the server through the standard endpoint variable;
    # its bucket is the one the constructs give the worker.
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server)
    monkeypatch.setenv(names.CLAIM_CHECK_BUCKET_ENV, "bodies")
    consumer = idempotent_sqs(build, subscriber="ci", store=store)
    delivered = sqs_event(messages, "shipping")
    assert consumer(delivered, DrillContext()) == {"batchItemFailures": []}
    assert consumer(delivered, DrillContext()) == {"batchItemFailures": []}  # redelivered
    item = clients["dynamodb"].get_item(TableName=ORDERS, Key={"pk": {"S": "builds"}})["Item"]
    assert item["n"]["N"] == "1" and set(pushes) == {1000}
