"""The outbox under real service limits (moto): batches cut by bytes, poison events parked, not retried forever."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from retrysafe import metrics, names
from retrysafe._engine import Completion, Engine, Intent
from retrysafe._keys import Scope
from retrysafe._transaction import Transaction
from retrysafe.errors import EventTooLargeError
from retrysafe.outbox._targets import EventBridgeTarget, SnsTarget, SqsTarget
from retrysafe.outbox.parked import list_parked, republish
from retrysafe.outbox.publisher import Publisher, handler
from retrysafe.outbox.sweeper import sweep
from retrysafe.testing._outbox import outbox_stream_event

from tests.helpers import TABLE, receive_all
from tests.operating import run

KB = 1000


@pytest.fixture
def sqs(store: Any) -> Any:
    return boto3.client("sqs", region_name="eu-west-1")


@pytest.fixture(autouse=True)
def no_target_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (names.OUTBOX_TARGET_ENV, names.OUTBOX_MAX_MESSAGE_ENV):
        monkeypatch.delenv(name, raising=False)
    yield


def commit(store: Any, payloads: list[Any], key: str = "k") -> list[str]:
    """One operation appending one event per payload; returns the event ids."""
    ids: list[str] = []

    def work(txn: Transaction) -> Completion:
        for i, payload in enumerate(payloads):
            ids.append(txn.append_event("Blob", payload, aggregate_type="Doc", aggregate_id=f"d{i}", sequence=i + 1))
        return Completion(None)

    Engine(store).execute(Intent(Scope("t", "Write", key, adapter=names.HTTP_ADAPTER), "fp"), work)
    return ids


def item(store: Any, event_id: str) -> dict[str, Any]:
    return dict(store.client.get_item(TableName=TABLE, Key={"pk": {"S": names.OUTBOX_PREFIX + event_id}})["Item"])


class Calls:
    """Counts the entries of each batch call a boto3 client makes."""

    def __init__(self, client: Any, operation: str, field: str) -> None:
        self.sizes: list[int] = []
        client.meta.events.register(f"provide-client-params.*.{operation}",
                                    lambda params, **_: self.sizes.append(len(params[field])))


def test_six_200kb_events_all_reach_an_sqs_target(store: Any, sqs: Any) -> None:
    """Six ~200 KB events are 1.2 MB: one SendMessageBatch of them is refused (BatchRequestTooLong) on every
    retry. Cut by the 1 MiB request limit, they all arrive, in two calls."""
    url = sqs.create_queue(QueueName="docs")["QueueUrl"]
    ids = commit(store, [{"blob": str(i) * (200 * KB)} for i in range(6)])
    calls = Calls(sqs, "SendMessageBatch", "Entries")
    publisher = Publisher(SqsTarget(url, client=sqs), store)
    assert handler(outbox_stream_event(store), publisher=publisher) == {"batchItemFailures": []}
    assert calls.sizes == [5, 1]
    received = receive_all(sqs, url, expected=6)
    assert sorted(m["MessageAttributes"][names.KEY_MESSAGE_ATTRIBUTE]["StringValue"] for m in received) == sorted(ids)
    assert all("published_at" in item(store, eid) for eid in ids)
    with pytest.raises(Exception, match="BatchRequestTooLong"):  # what fixed chunks of ten did
        sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "x" * (200 * KB)}
                                                      for i in range(6)])


def test_a_permanently_refused_event_is_parked_and_the_rest_published(store: Any, sqs: Any,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # The queue was created with a 100 KB MaximumMessageSize; the publisher believes 256 KiB.
    url = sqs.create_queue(QueueName="small", Attributes={"MaximumMessageSize": str(100 * 1024)})["QueueUrl"]
    ids = commit(store, [{"n": 0}, {"blob": "x" * (150 * KB)}, {"n": 2}, {"n": 3}])
    publisher = Publisher(SqsTarget(url, client=sqs), store)
    event = outbox_stream_event(store)
    assert handler(event, publisher=publisher) == {"batchItemFailures": []}  # the stream moves on
    poison = item(store, ids[1])
    assert poison[names.UNPUBLISHED_ATTRIBUTE]["S"] == "parked" and "InvalidParameterValue" in poison["park_reason"]["S"]
    assert metrics.OUTBOX_EVENT_PARKED in capsys.readouterr().out  # the metric (EMF) the constructs alarm on
    received = receive_all(sqs, url, expected=3)
    assert sorted(m["MessageAttributes"][names.KEY_MESSAGE_ATTRIBUTE]["StringValue"] for m in received) == sorted(
        [ids[0], ids[2], ids[3]])
    # Neither a stream retry nor the sweeper tries it again.
    assert handler(event, publisher=publisher) == {"batchItemFailures": []}
    assert sweep(publisher, 0, now=datetime.now(UTC) + timedelta(hours=1))["failed"] == 0
    assert [p.message.event_id for p in list_parked(store)] == [ids[1]]
    # The operator fixes the queue and republishes.
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaximumMessageSize": str(256 * 1024)})
    receive_all(sqs, url)
    assert republish(publisher) == {"republished": 1, "parked": 0, "failed": 0}
    assert [m["MessageAttributes"][names.KEY_MESSAGE_ATTRIBUTE]["StringValue"] for m in receive_all(sqs, url, 1)] == [ids[1]]
    fixed = item(store, ids[1])
    assert names.UNPUBLISHED_ATTRIBUTE not in fixed and "park_reason" not in fixed and "published_at" in fixed
    assert list(list_parked(store)) == []


def test_the_operator_command_lists_and_republishes(store: Any, sqs: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    url = sqs.create_queue(QueueName="tiny", Attributes={"MaximumMessageSize": "1024"})["QueueUrl"]
    (eid,) = commit(store, [{"blob": "y" * 2000}])
    handler(outbox_stream_event(store), publisher=Publisher(SqsTarget(url, client=sqs), store))
    monkeypatch.setenv(names.QUEUE_ENV, url)
    ran = run("outbox", "parked", "list", "--table", TABLE)
    assert ran.status == 0, ran.err
    (line,) = ran.out.strip().splitlines()
    listed = json.loads(line)
    assert listed["event_id"] == eid and listed["event_type"] == "Blob" and "payload" not in listed
    assert "y" * 100 not in ran.out + ran.err
    ran = run("outbox", "parked", "republish", eid)
    assert ran.status == 1  # still too large for the queue: still parked
    assert json.loads(ran.out.strip().splitlines()[-1]) == {"republished": 0, "parked": 1, "failed": 0}
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"MaximumMessageSize": "4096"})
    assert run("outbox", "parked", "republish").status == 0
    assert list(list_parked(store)) == []


def test_an_event_larger_than_the_target_accepts_is_parked_without_a_call(store: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Appended for an SQS target raised to 1 MiB, then the target became an event bus (256 KB)."""
    monkeypatch.setenv(names.OUTBOX_TARGET_ENV, "sqs")
    monkeypatch.setenv(names.OUTBOX_MAX_MESSAGE_ENV, str(1024 * 1024))
    ids = commit(store, [{"blob": "z" * (300 * KB)}, {"n": 1}])
    events = boto3.client("events", region_name="eu-west-1")
    calls = Calls(events, "PutEvents", "Entries")
    publisher = Publisher(EventBridgeTarget("default", client=events), store)
    assert handler(outbox_stream_event(store), publisher=publisher) == {"batchItemFailures": []}
    assert calls.sizes == [1]
    assert item(store, ids[0])[names.UNPUBLISHED_ATTRIBUTE]["S"] == "parked" and "published_at" in item(store, ids[1])
    assert "eventbridge accepts 262143" in item(store, ids[0])["park_reason"]["S"]


def test_batches_respect_eventbridge_and_sns_request_totals(store: Any) -> None:
    from retrysafe.outbox._stream import outbox_inserts

    commit(store, [{"blob": str(i) * (100 * KB)} for i in range(5)])
    messages = [m for _, m in outbox_inserts(outbox_stream_event(store)["Records"]) if m is not None]
    events = boto3.client("events", region_name="eu-west-1")
    sent = Calls(events, "PutEvents", "Entries")
    assert Publisher(EventBridgeTarget("default", client=events), store).publish(messages) == set()
    assert sent.sizes == [2, 2, 1]  # < 256 KB per PutEvents request
    sns = boto3.client("sns", region_name="eu-west-1")
    topic = sns.create_topic(Name="docs")["TopicArn"]
    published = Calls(sns, "PublishBatch", "PublishBatchRequestEntries")
    assert Publisher(SnsTarget(topic, client=sns), store).publish(messages) == set()
    assert published.sizes == [2, 2, 1]  # <= 256 KiB per PublishBatch request


def test_transient_refusals_are_retried_not_parked(store: Any) -> None:
    from botocore.exceptions import ClientError

    class Throttled:
        def put_events(self, Entries: list[Any]) -> dict[str, Any]:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "PutEvents")

    class Failing:
        def put_events(self, Entries: list[Any]) -> dict[str, Any]:
            return {"FailedEntryCount": len(Entries),
                    "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "oops"} for _ in Entries]}

    ids = commit(store, [{"n": 1}, {"n": 2}])
    for client in (Throttled(), Failing()):
        result = handler(outbox_stream_event(store), publisher=Publisher(EventBridgeTarget("b", client=client), store))
        assert result["batchItemFailures"] != []
        assert all(item(store, eid)[names.UNPUBLISHED_ATTRIBUTE]["S"].startswith("u") for eid in ids)
    assert list(list_parked(store)) == []


def test_append_event_refuses_what_the_configured_target_cannot_carry(store: Any, ddb: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.OUTBOX_TARGET_ENV, "eventbridge")
    with pytest.raises(EventTooLargeError, match="eventbridge accepts 262143 bytes"):
        commit(store, [{"n": 1}, {"blob": "\u00e9" * (132 * KB)}])  # 264 KB once UTF-8 encoded
    assert ddb.scan(TableName=TABLE)["Count"] == 0  # nothing committed, not even the record
    monkeypatch.setenv(names.OUTBOX_TARGET_ENV, "sqs")
    monkeypatch.setenv(names.OUTBOX_MAX_MESSAGE_ENV, str(1024 * 1024))
    assert len(commit(store, [{"blob": "\u00e9" * (132 * KB)}], key="k2")) == 1  # SQS raised to 1 MiB carries it
    monkeypatch.setenv(names.OUTBOX_TARGET_ENV, "kafka")
    from retrysafe.errors import ConfigurationError

    with pytest.raises(ConfigurationError):
        commit(store, [{"blob": "x" * (200 * KB)}], key="k3")
