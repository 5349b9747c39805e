"""``@idempotent_kinesis`` against moto (Kinesis and DynamoDB in-process): records read back with GetRecords."""

from __future__ import annotations

import inspect
import json
from typing import Any

import boto3
import pytest
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.names import LEASE_MARGIN_SECONDS
from retrysafe.streams import KinesisMessage, idempotent_kinesis
from retrysafe.testing._events import DrillContext, kinesis_event, kinesis_record

from tests.helpers import ORDERS

STREAM = "orders"


def applied(ddb: Any, name: str) -> int:
    """How many times the effect named ``name`` was committed."""
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def count_effect(message: KinesisMessage, txn: Transaction) -> str:
    """The business effect: a counter named by the record, moved only by a committed transaction."""
    name = str(message.content["counter"])
    txn.update({"pk": name}, "ADD n :one", values={":one": 1}, table=ORDERS)
    return name


def read_shard(kinesis: Any, shard: str) -> list[dict[str, Any]]:
    iterator = kinesis.get_shard_iterator(StreamName=STREAM, ShardId=shard,
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    records: list[dict[str, Any]] = kinesis.get_records(ShardIterator=iterator)["Records"]
    return records


@pytest.fixture
def kinesis(ddb: Any) -> Any:
    client = boto3.client("kinesis", region_name="eu-west-1")
    client.create_stream(StreamName=STREAM, ShardCount=1)
    return client


def batch(kinesis: Any, *counters: str, partition_key: str = "order-1") -> dict[str, Any]:
    for counter in counters:
        kinesis.put_record(StreamName=STREAM, Data=json.dumps({"counter": counter}).encode(),
                           PartitionKey=partition_key)
    return kinesis_event(read_shard(kinesis, "shardId-000000000000"), shard="shardId-000000000000", stream=STREAM)


def sequence_numbers(event: dict[str, Any]) -> list[str]:
    return [r["kinesis"]["sequenceNumber"] for r in event["Records"]]


def test_a_failure_in_the_middle_reports_that_record_and_the_rest_of_its_shard(
        store: Any, ddb: Any, kinesis: Any) -> None:
    ran: list[str] = []
    broken = {"c"}

    def consume(message: KinesisMessage, txn: Transaction) -> str:
        ran.append(message.content["counter"])
        if message.content["counter"] in broken:
            raise RuntimeError("downstream refused")
        return count_effect(message, txn)

    handler = idempotent_kinesis(subscriber="ledger", store=store)(consume)
    event = batch(kinesis, "a", "b", "c", "d", "e")
    sequence = sequence_numbers(event)
    response = handler(event, DrillContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": s} for s in sequence[2:]]}
    assert ran == ["a", "b", "c"]  # d and e did not run: they would have overtaken c
    assert [applied(ddb, n) for n in "abcde"] == [1, 1, 0, 0, 0]
    # Lambda retries from the lowest reported sequence number: c, d, e, in order.
    broken.clear()
    retry = {"Records": event["Records"][2:]}
    assert handler(retry, DrillContext()) == {"batchItemFailures": []}
    assert ran == ["a", "b", "c", "c", "d", "e"]
    assert [applied(ddb, n) for n in "abcde"] == [1] * 5


def test_records_of_another_shard_go_on_after_a_failure(store: Any, ddb: Any) -> None:
    def consume(message: KinesisMessage, txn: Transaction) -> str:
        if message.content["counter"] == "a1":
            raise RuntimeError("downstream refused")
        return count_effect(message, txn)

    handler = idempotent_kinesis(subscriber="ledger", store=store)(consume)
    records = [kinesis_record({"counter": "a1"}, sequence_number="11", shard="shardId-000000000000"),
               kinesis_record({"counter": "b1"}, sequence_number="21", shard="shardId-000000000001"),
               kinesis_record({"counter": "a2"}, sequence_number="12", shard="shardId-000000000000"),
               kinesis_record({"counter": "b2"}, sequence_number="22", shard="shardId-000000000001")]
    assert handler({"Records": records}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": "11"}, {"itemIdentifier": "12"}]}
    assert [applied(ddb, n) for n in ("a1", "a2", "b1", "b2")] == [0, 0, 1, 1]


def test_a_redelivered_batch_is_a_no_op_in_one_round_trip_per_record(
        store: Any, ddb: Any, kinesis: Any, calls: Any) -> None:
    handler = idempotent_kinesis(subscriber="ledger", store=store)(count_effect)
    event = batch(kinesis, "a", "b", "c")
    calls.reset()
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"TransactWriteItems": 3}
    calls.reset()
    assert handler(event, DrillContext()) == {"batchItemFailures": []}  # the batch retried after a crash
    assert calls.calls == {"TransactWriteItems": 3}
    assert [applied(ddb, n) for n in "abc"] == [1, 1, 1]


def test_claim_first_costs_two_round_trips_and_leases_for_the_remaining_time(
        store: Any, ddb: Any, kinesis: Any, calls: Any) -> None:
    leases: list[float] = []

    def charge(message: KinesisMessage, txn: Transaction) -> str:
        claim = store.get(txn.scope.record_id)
        leases.append((claim.lease_until_ms - claim.created_at_ms) / 1000)
        return count_effect(message, txn)

    handler = idempotent_kinesis(subscriber="payments", mode="claim_first", store=store)(charge)
    event = batch(kinesis, "charged")
    calls.reset()
    assert handler(event, DrillContext(remaining_ms=40_000)) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1, "GetItem": 1, "TransactWriteItems": 1}  # GetItem: the test's own
    assert leases[0] == pytest.approx(40 + LEASE_MARGIN_SECONDS, abs=1)  # the invocation's remaining time
    calls.reset()
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1} and len(leases) == 1 and applied(ddb, "charged") == 1


def test_a_batch_inspects_no_signature(store: Any, ddb: Any, kinesis: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the Lambda context, Powertools' batch processor inspects the record handler's signature on every
    # batch: the consumer hands its context to the records itself.
    handler = idempotent_kinesis(subscriber="ledger", store=store)(count_effect)
    event = batch(kinesis, "a", "b")
    inspected: list[Any] = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *args, **kwargs: inspected.append(args) or real(*args, **kwargs))
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    assert handler(event, DrillContext()) == {"batchItemFailures": []}  # the batch redelivered
    assert inspected == []
    assert (applied(ddb, "a"), applied(ddb, "b")) == (1, 1)


def test_the_default_key_is_the_partition_key_and_sequence_number(store: Any, ddb: Any) -> None:
    keys: list[str] = []

    def consume(message: KinesisMessage, txn: Transaction) -> str:
        keys.append(message.key)
        return count_effect(message, txn)

    handler = idempotent_kinesis(subscriber="ledger", store=store)(consume)
    # The same sequence number under two partition keys (Kinesis numbers are unique per shard and key).
    records = [kinesis_record({"counter": "x"}, sequence_number="7", partition_key="p1"),
               kinesis_record({"counter": "y"}, sequence_number="7", partition_key="p2")]
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert keys == ['["p1","7"]', '["p2","7"]'] and (applied(ddb, "x"), applied(ddb, "y")) == (1, 1)


def test_a_business_key_dedupes_a_re_sent_record_and_a_fingerprint_ignores_its_volatile_field(
        store: Any, ddb: Any) -> None:
    handler = idempotent_kinesis(subscriber="ledger", key="kinesis.data.order_id",
                                 fingerprint="kinesis.data.{counter: counter, amount: amount}",
                                 store=store)(count_effect)
    first = kinesis_record({"order_id": "o-1", "counter": "o", "amount": 5, "sent_at": "10:00"}, sequence_number="1")
    again = kinesis_record({"order_id": "o-1", "counter": "o", "amount": 5, "sent_at": "10:05"}, sequence_number="2")
    other = kinesis_record({"order_id": "o-1", "counter": "o", "amount": 9, "sent_at": "10:06"}, sequence_number="3")
    assert handler({"Records": [first, again]}, DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "o") == 1
    assert handler({"Records": [other]}, DrillContext()) == {"batchItemFailures": [{"itemIdentifier": "3"}]}
    assert applied(ddb, "o") == 1


def test_a_callable_key_gets_the_message_and_data_that_is_not_json(store: Any, ddb: Any) -> None:
    seen: list[Any] = []

    def consume(message: KinesisMessage, txn: Transaction) -> None:
        seen.append((message.content, message.data, message.partition_key, message.shard_id))
        txn.update({"pk": "raw"}, "ADD n :one", values={":one": 1}, table=ORDERS)

    handler = idempotent_kinesis(subscriber="ledger", key=lambda m: m.partition_key, store=store)(consume)
    records = [kinesis_record("plain text", sequence_number="1", partition_key="device-9"),
               kinesis_record(b"\xff\x00", sequence_number="2", partition_key="device-8")]
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert seen == [("plain text", b"plain text", "device-9", "shardId-000000000000"),
                    (b"\xff\x00", b"\xff\x00", "device-8", "shardId-000000000000")]


def test_hostile_records_fail_alone_with_no_dynamodb_call(store: Any, ddb: Any, calls: Any) -> None:
    handler = idempotent_kinesis(subscriber="ledger", key="kinesis.data.order_id", store=store)(count_effect)
    not_base64 = kinesis_record({"counter": "z"}, sequence_number="1", shard="shardId-000000000001")
    not_base64["kinesis"]["data"] = "%%%"
    no_key = kinesis_record({"counter": "z"}, sequence_number="2", shard="shardId-000000000002")
    duplicate = kinesis_record('{"order_id": "o", "order_id": "p"}', sequence_number="3",
                               shard="shardId-000000000003")
    calls.reset()
    response = handler({"Records": [not_base64, no_key, duplicate]}, DrillContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": s} for s in ("1", "2", "3")]}
    assert calls.total == 0


def test_configuration_errors_are_raised_at_decoration(store: Any) -> None:
    with pytest.raises(ConfigurationError):
        idempotent_kinesis(subscriber="", store=store)(count_effect)
    with pytest.raises(ConfigurationError):
        idempotent_kinesis(subscriber="s", mode="sometimes", store=store)(count_effect)
    with pytest.raises(ConfigurationError):
        idempotent_kinesis(subscriber="s", key="kinesis.[", store=store)(count_effect)


def test_a_record_without_its_kinesis_member_fails_the_whole_batch(store: Any, calls: Any) -> None:
    """Nothing identifies it: a null itemIdentifier, which Lambda takes as a failure of the whole batch."""
    handler = idempotent_kinesis(subscriber="ledger", store=store)(count_effect)
    broken = kinesis_record({"counter": "z"}, sequence_number="1")
    del broken["kinesis"]
    calls.reset()
    response = handler({"Records": [broken, kinesis_record({"counter": "y"}, sequence_number="2")]}, DrillContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": None}, {"itemIdentifier": "2"}]}
    assert calls.total == 0
