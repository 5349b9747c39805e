"""The outbox publisher and sweeper on in-process moto: filtering, targets, failures, republishing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from retrysafe import names
from retrysafe._engine import Completion, Engine, Intent
from retrysafe._keys import Scope
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.outbox import OutboxMessage
from retrysafe.outbox import publisher as outbox_publisher
from retrysafe.outbox import sweeper as outbox_sweeper
from retrysafe.outbox._stream import outbox_inserts
from retrysafe.outbox._targets import EventBridgeTarget, SnsTarget, SqsTarget, group_id
from retrysafe.outbox.parked import list_parked
from retrysafe.outbox.publisher import Publisher, handler
from retrysafe.outbox.sweeper import SweepIncompleteError, sweep
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, sqs_event

from tests.helpers import TABLE, receive_all


def commit_events(store: Any, count: int, key: str = "k") -> list[str]:
    """One operation appending ``count`` events; returns their ids."""
    ids: list[str] = []

    def work(txn: Transaction) -> Completion:
        for i in range(count):
            ids.append(txn.append_event("ItemAdded", {"i": i}, aggregate_type="Cart", aggregate_id="c1",
                                        sequence=i + 1))
        return Completion(None)

    Engine(store).execute(Intent(Scope("t", "AddItems", key, adapter=names.HTTP_ADAPTER), "fp"), work)
    return ids


def outbox_item(store: Any, event_id: str) -> dict[str, Any]:
    return dict(store.client.get_item(TableName=TABLE, Key={"pk": {"S": names.OUTBOX_PREFIX + event_id}})["Item"])


def stream_record(seq: str, name: str, image: dict[str, Any] | None, identity: dict[str, str] | None = None
                  ) -> dict[str, Any]:
    record: dict[str, Any] = {"eventID": seq, "eventName": name, "eventSource": "aws:dynamodb",
                              "dynamodb": {"SequenceNumber": seq, "Keys": {"pk": image["pk"]} if image else {}}}
    if image is not None:
        record["dynamodb"]["NewImage"] = image
    if identity:
        record["userIdentity"] = identity
    return record


class FakeTarget:
    """Accepts everything except ``reject``; remembers what it was sent, call by call."""

    def __init__(self, reject: set[str] | None = None) -> None:
        self.reject = reject or set()
        self.calls: list[list[str]] = []

    def send(self, messages: Sequence[OutboxMessage]) -> set[str]:
        self.calls.append([m.event_id for m in messages])
        return {m.event_id for m in messages} & self.reject


def test_only_outbox_inserts_are_published(store: Any) -> None:
    (eid,) = commit_events(store, 1)
    image = outbox_item(store, eid)
    ttl = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    records = [stream_record("1", "INSERT", {"pk": {"S": "idem#x"}, "st": {"S": "completed"}}),
               stream_record("2", "INSERT", image), stream_record("3", "MODIFY", image),
               stream_record("4", "REMOVE", None, ttl), stream_record("5", "INSERT", image, ttl)]
    target = FakeTarget()
    assert handler({"Records": records}, publisher=Publisher(target, store)) == {"batchItemFailures": []}
    assert target.calls == [[eid]]
    assert [seq for seq, _ in outbox_inserts(records)] == ["2"]
    assert names.UNPUBLISHED_ATTRIBUTE not in outbox_item(store, eid)


def test_the_first_failed_record_is_reported_and_only_accepted_items_are_marked(store: Any) -> None:
    ids = commit_events(store, 4)
    records = [stream_record(str(10 + i), "INSERT", outbox_item(store, eid)) for i, eid in enumerate(ids)]
    target = FakeTarget(reject={ids[1], ids[3]})
    assert handler({"Records": records}, publisher=Publisher(target, store)) == {
        "batchItemFailures": [{"itemIdentifier": "11"}]}
    assert [names.UNPUBLISHED_ATTRIBUTE in outbox_item(store, eid) for eid in ids] == [False, True, False, True]


class FakeEvents:
    """An EventBridge client whose PutEvents fails the entries named in ``fail``, or raises."""

    def __init__(self, fail: set[int] | None = None, error: bool = False) -> None:
        self.fail, self.error = fail or set(), error
        self.batches: list[list[dict[str, Any]]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        if self.error:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "PutEvents")
        offset = sum(len(b) for b in self.batches)
        self.batches.append(Entries)
        entries = [{"ErrorCode": "InternalFailure"} if offset + i in self.fail else {"EventId": str(i)}
                   for i in range(len(Entries))]
        return {"FailedEntryCount": sum("ErrorCode" in e for e in entries), "Entries": entries}


def test_eventbridge_batches_of_ten_and_per_entry_failures(store: Any) -> None:
    ids = commit_events(store, 23)
    events = FakeEvents(fail={12})
    failed = Publisher(EventBridgeTarget("bus", "shop.orders", client=events), store).publish(
        [OutboxMessage.from_item(_plain(outbox_item(store, eid))) for eid in ids])
    assert failed == {ids[12]}
    assert [len(b) for b in events.batches] == [10, 10, 3]
    entry = events.batches[0][0]
    assert entry["Source"] == "shop.orders" and entry["DetailType"] == "ItemAdded" and entry["EventBusName"] == "bus"
    assert json.loads(entry["Detail"])["event_id"] == ids[0]
    assert Publisher(EventBridgeTarget("bus", client=FakeEvents(error=True)), store).publish(
        [OutboxMessage.from_item(_plain(outbox_item(store, ids[0])))]) == {ids[0]}


def test_sqs_fifo_target_carries_key_group_and_dedup_id(store: Any) -> None:
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="events.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    ids = commit_events(store, 2)
    records = [stream_record(str(i), "INSERT", outbox_item(store, eid)) for i, eid in enumerate(ids)]
    publisher = Publisher(SqsTarget(url, client=sqs), store)
    assert handler({"Records": records}, publisher=publisher) == {"batchItemFailures": []}
    messages = receive_all(sqs, url, expected=2)
    assert [m["MessageAttributes"][names.KEY_MESSAGE_ATTRIBUTE]["StringValue"] for m in messages] == ids
    assert {m["Attributes"]["MessageGroupId"] for m in messages} == {"Cart#c1"}
    assert [m["Attributes"]["MessageDeduplicationId"] for m in messages] == ids


def test_sns_target_reaches_a_consumer_that_dedupes_on_the_event_id(store: Any) -> None:
    sns, sqs = boto3.client("sns", region_name="eu-west-1"), boto3.client("sqs", region_name="eu-west-1")
    topic = sns.create_topic(Name="orders")["TopicArn"]
    url = sqs.create_queue(QueueName="billing")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    (eid,) = commit_events(store, 1)
    message = OutboxMessage.from_item(_plain(outbox_item(store, eid)))
    publisher = Publisher(SnsTarget(topic, client=sns), store)
    assert publisher.publish([message]) == set() and publisher.publish([message]) == set()
    seen: list[str] = []

    def bill(msg: Message, txn: Transaction) -> None:
        seen.append(msg.key)
        txn.put({"pk": f"invoice#{msg.content['aggregate_id']}", "seq": msg.content["sequence"]}, table="orders")

    consumer = idempotent_sqs(bill, subscriber="billing", store=store)
    messages = receive_all(sqs, url, expected=2)
    assert len(messages) == 2
    assert consumer(sqs_event(messages, "billing"), DrillContext()) == {"batchItemFailures": []}
    assert seen == [eid, eid]
    assert store.client.scan(TableName="orders")["Count"] == 1


def test_sweeper_republishes_what_the_stream_never_delivered(store: Any) -> None:
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="events")["QueueUrl"]
    ids = commit_events(store, 3)  # the stream publisher never ran
    publisher = Publisher(SqsTarget(url, client=sqs), store)
    assert sweep(publisher, 900) == {"republished": 0, "failed": 0}  # too young to sweep
    later = datetime.now(UTC) + timedelta(hours=1)
    assert sweep(publisher, 900, now=later) == {"republished": 3, "failed": 0}
    assert sorted(m["MessageAttributes"][names.KEY_MESSAGE_ATTRIBUTE]["StringValue"] for m in receive_all(sqs, url, 3)) \
        == sorted(ids)
    assert all(names.UNPUBLISHED_ATTRIBUTE not in outbox_item(store, eid) for eid in ids)
    assert sweep(publisher, 900, now=later) == {"republished": 0, "failed": 0}


def test_the_sweeper_goes_by_commit_time_never_by_the_handlers_occurred_at(store: Any) -> None:
    """A client clock ten days ahead, or a date in the past: occurred_at is data in the envelope. The sweeper
    sweeps both once they have been unpublished for its age, by when they were committed."""
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="events")["QueueUrl"]
    committed = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    ahead, past = committed + timedelta(days=10), committed - timedelta(days=3)

    def work(txn: Transaction) -> Completion:
        txn.append_event("Ahead", {"n": 1}, aggregate_type="Cart", aggregate_id="c1", occurred_at=ahead)
        txn.append_event("Past", {"n": 2}, aggregate_type="Cart", aggregate_id="c1", occurred_at=past)
        return Completion(None)

    engine = Engine(store, clock=committed.timestamp)
    engine.execute(Intent(Scope("t", "Clocks", "k", adapter=names.HTTP_ADAPTER), "fp"), work)
    publisher = Publisher(SqsTarget(url, client=sqs), store)
    # One second after the commit, the event dated three days back is not re-sent at once...
    assert sweep(publisher, 900, now=committed + timedelta(seconds=1)) == {"republished": 0, "failed": 0}
    # ...and 15 minutes after it, the event dated ten days ahead is swept (long before TTL would delete it).
    assert sweep(publisher, 900, now=committed + timedelta(seconds=901)) == {"republished": 2, "failed": 0}
    envelopes = {json.loads(m["Body"])["event_type"]: json.loads(m["Body"]) for m in receive_all(sqs, url, 2)}
    assert envelopes["Ahead"]["occurred_at"] == ahead.isoformat(timespec="milliseconds")
    assert envelopes["Past"]["occurred_at"] == past.isoformat(timespec="milliseconds")


def test_sweeper_reports_what_it_could_not_publish(store: Any) -> None:
    ids = commit_events(store, 2)
    target = FakeTarget(reject={ids[0]})
    later = datetime.now(UTC) + timedelta(hours=1)
    with pytest.raises(SweepIncompleteError):
        sweep(Publisher(target, store), 60, now=later)
    assert names.UNPUBLISHED_ATTRIBUTE in outbox_item(store, ids[0]) and names.UNPUBLISHED_ATTRIBUTE not in outbox_item(store, ids[1])
    target.reject.clear()
    assert sweep(Publisher(target, store), 60, now=later) == {"republished": 1, "failed": 0}


def test_entry_points_read_their_target_from_the_environment(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="events")["QueueUrl"]
    commit_events(store, 1)
    monkeypatch.setattr(outbox_publisher, "_publisher", None)
    monkeypatch.setenv(names.QUEUE_ENV, url)
    monkeypatch.setenv(names.SWEEP_AFTER_ENV, "0")
    assert outbox_sweeper.handler({}, DrillContext(remaining_ms=60_000)) == {"republished": 1, "failed": 0}
    monkeypatch.setenv(names.TOPIC_ENV, "arn:aws:sns:eu-west-1:123456789012:t")
    with pytest.raises(ConfigurationError, match="exactly one"):
        Publisher.from_env()
    monkeypatch.setenv(names.SWEEP_AFTER_ENV, "later")
    with pytest.raises(ConfigurationError):
        outbox_sweeper.sweep_after_seconds()


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    from boto3.dynamodb.types import TypeDeserializer

    return {k: TypeDeserializer().deserialize(v) for k, v in item.items()}


def test_an_unreadable_outbox_insert_is_reported_failed_not_dropped(store: Any) -> None:
    class Nowhere:
        def send(self, messages: Any) -> set[str]:
            raise AssertionError(f"published {messages}")

    broken = {"eventName": "INSERT", "eventSource": "aws:dynamodb",
              "dynamodb": {"SequenceNumber": "42", "NewImage": {"kind": {"S": "outbox"}, "pk": {"S": "outbox#x"}}}}
    assert handler({"Records": [broken]}, publisher=Publisher(Nowhere(), store)) == {
        "batchItemFailures": [{"itemIdentifier": "42"}]}


#: What SQS and SNS FIFO accept as a MessageGroupId (alphanumeric characters and punctuation, 1 to 128).
VALID_GROUP = r"^[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}$"


@pytest.mark.parametrize("aggregate_id", ["jane doe", "zo\u00eb", "a" * 130, "tab\there", "c1"],
                         ids=["space", "non-ascii", "130-chars", "control", "readable"])
def test_every_aggregate_id_reaches_a_fifo_queue_in_one_deterministic_group(store: Any, aggregate_id: str) -> None:
    """An aggregate id SQS would refuse as a group id is mapped to a valid one: the event is delivered, never parked
    forever (republish could not fix it), and each aggregate keeps one group of its own."""
    import re

    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="events.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    sent: list[dict[str, Any]] = []
    sqs.meta.events.register("provide-client-params.sqs.SendMessageBatch",
                             lambda params, **_: sent.extend(params["Entries"]))

    def work(txn: Transaction) -> Completion:
        for n in range(2):
            txn.append_event("Renamed", {"n": n}, aggregate_type="Customer", aggregate_id=aggregate_id, sequence=n)
        txn.append_event("Renamed", {"n": 9}, aggregate_type="Customer", aggregate_id=aggregate_id + "2")
        return Completion(None)

    Engine(store).execute(Intent(Scope("t", "Rename", "k", adapter=names.HTTP_ADAPTER), "fp"), work)
    later = datetime.now(UTC) + timedelta(hours=1)
    assert sweep(Publisher(SqsTarget(url, client=sqs), store), 900, now=later) == {"republished": 3, "failed": 0}
    assert len(receive_all(sqs, url, expected=3)) == 3
    groups = {json.loads(e["MessageBody"])["payload"]["n"]: e["MessageGroupId"] for e in sent}
    assert all(re.match(VALID_GROUP, group) for group in groups.values()), groups
    assert groups[0] == groups[1] != groups[9]  # one group per aggregate, the same for all its events
    if aggregate_id == "c1":
        assert groups[0] == "Customer#c1"  # readable when it is valid as it is
    assert list(list_parked(store)) == []


def test_group_ids_never_collide_across_the_readable_and_the_hashed_forms() -> None:
    pairs = [("a#b", "c"), ("a", "b#c"), ("~x", "y"), ("Order", "jane doe"), ("Order", "jane_doe"), ("Order", "")]
    groups = [group_id(t, i) for t, i in pairs]
    assert len(set(groups)) == len(pairs)
    assert groups[1] == "a#b#c" and groups[0].startswith("~") and groups[2].startswith("~")
