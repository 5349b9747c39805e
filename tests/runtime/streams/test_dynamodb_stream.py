"""``@idempotent_dynamodb_stream``: records in AWS's documented shape (in-process moto), and a table's real
stream read back with GetRecords from moto's server (in-process moto does not implement DescribeStream)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from retrysafe._store import DynamoStore
from retrysafe._transaction import Transaction
from retrysafe.names import LEASE_MARGIN_SECONDS
from retrysafe.streams import DynamoDBChange, idempotent_dynamodb_stream
from retrysafe.testing._events import DrillContext, dynamodb_stream_record

from tests.helpers import ORDERS, TABLE, CallCounter, create_idempotency_table, stream_event

INDEX = "search-index"


def applied(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=INDEX, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def index(change: DynamoDBChange, txn: Transaction) -> str:
    """The business effect: count each change of an order in the search index."""
    name = f"{change.keys['pk']}#{change.event_name}"
    txn.update({"pk": name}, "ADD n :one", values={":one": 1}, table=INDEX)
    return name


def order(n: int, total: int) -> dict[str, Any]:
    return {"pk": {"S": f"order#{n}"}, "total": {"N": str(total)}}


@pytest.fixture
def search(ddb: Any) -> Any:
    ddb.create_table(TableName=INDEX, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
    return ddb


def test_a_failure_fails_the_rest_of_the_batch_unrun_and_the_retry_is_exactly_once(
        store: Any, search: Any, calls: Any) -> None:
    ran: list[str] = []
    broken = {"order#2"}

    def consume(change: DynamoDBChange, txn: Transaction) -> str:
        ran.append(change.keys["pk"])
        if change.keys["pk"] in broken:
            raise RuntimeError("index unavailable")
        return index(change, txn)

    handler = idempotent_dynamodb_stream(subscriber="search", store=store)(consume)
    records = [dynamodb_stream_record("INSERT", {"pk": {"S": f"order#{n}"}}, new_image=order(n, 10 * n),
                                      sequence_number=f"10{n}") for n in (1, 2, 3)]
    calls.reset()
    assert handler({"Records": records}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": "102"}, {"itemIdentifier": "103"}]}
    assert ran == ["order#1", "order#2"] and calls.calls == {"TransactWriteItems": 1}
    broken.clear()
    calls.reset()
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}  # retried from the first
    assert calls.calls == {"TransactWriteItems": 3}  # order#1: its record answers, in the same one call
    assert [applied(search, f"order#{n}#INSERT") for n in (1, 2, 3)] == [1, 1, 1]


def test_claim_first_leases_each_record_for_the_invocation_s_remaining_time(
        store: Any, search: Any, calls: Any) -> None:
    # The Lambda context reaches each record's processing (through the batch layer) for the lease.
    leases: list[float] = []

    def consume(change: DynamoDBChange, txn: Transaction) -> str:
        claim = store.get(txn.scope.record_id)
        leases.append((claim.lease_until_ms - claim.created_at_ms) / 1000)
        return index(change, txn)

    handler = idempotent_dynamodb_stream(subscriber="search", mode="claim_first", store=store)(consume)
    records = [dynamodb_stream_record("INSERT", {"pk": {"S": f"order#{n}"}}, new_image=order(n, 10 * n),
                                      sequence_number=f"10{n}") for n in (1, 2)]
    calls.reset()
    assert handler({"Records": records}, DrillContext(remaining_ms=12_000)) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 2, "GetItem": 2, "TransactWriteItems": 2}  # GetItem: the test's own
    assert leases == [pytest.approx(12 + LEASE_MARGIN_SECONDS, abs=1)] * 2


def test_a_batch_inspects_no_signature(store: Any, search: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the Lambda context, Powertools' batch processor inspects the record handler's signature on every
    # batch: the consumer hands its context to the records itself.
    handler = idempotent_dynamodb_stream(subscriber="search", store=store)(index)
    records = [dynamodb_stream_record("INSERT", {"pk": {"S": f"order#{n}"}}, new_image=order(n, 10 * n),
                                      sequence_number=f"10{n}") for n in (1, 2)]
    inspected: list[Any] = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *args, **kwargs: inspected.append(args) or real(*args, **kwargs))
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}  # the batch redelivered
    assert inspected == []
    assert [applied(search, f"order#{n}#INSERT") for n in (1, 2)] == [1, 1]


def test_the_handler_sees_deserialized_images_and_the_default_key_is_the_sequence_number(
        store: Any, search: Any) -> None:
    seen: list[tuple[Any, ...]] = []

    def consume(change: DynamoDBChange, txn: Transaction) -> None:
        seen.append((change.key, change.event_name, change.keys, change.old_image, change.new_image,
                     change.sequence_number, change.is_ttl_removal))

    handler = idempotent_dynamodb_stream(subscriber="search", store=store)(consume)
    record = dynamodb_stream_record("MODIFY", {"pk": {"S": "order#1"}}, old_image=order(1, 10),
                                    new_image={**order(1, 12), "tags": {"SS": ["a", "b"]}}, sequence_number="222")
    assert handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert seen == [("222", "MODIFY", {"pk": "order#1"}, {"pk": "order#1", "total": Decimal(10)},
                     {"pk": "order#1", "total": Decimal(12), "tags": {"a", "b"}}, "222", False)]


def test_ttl_removals_are_delivered_marked_or_skipped_without_a_call(store: Any, search: Any, calls: Any) -> None:
    expired = dynamodb_stream_record("REMOVE", {"pk": {"S": "session#1"}}, old_image={"pk": {"S": "session#1"}},
                                     sequence_number="301", ttl=True)
    deleted = dynamodb_stream_record("REMOVE", {"pk": {"S": "session#2"}}, old_image={"pk": {"S": "session#2"}},
                                     sequence_number="302")
    marks: list[bool] = []

    def consume(change: DynamoDBChange, txn: Transaction) -> None:
        marks.append(change.is_ttl_removal)

    delivered = idempotent_dynamodb_stream(subscriber="audit", store=store)(consume)
    assert delivered({"Records": [expired, deleted]}, DrillContext()) == {"batchItemFailures": []}
    assert marks == [True, False]
    skipping = idempotent_dynamodb_stream(subscriber="archive", skip_ttl_removals=True, store=store)(consume)
    calls.reset()
    assert skipping({"Records": [expired]}, DrillContext()) == {"batchItemFailures": []}
    assert marks == [True, False] and calls.total == 0


def test_a_business_key_with_a_changed_image_is_refused_and_blocks_the_rest(store: Any, search: Any) -> None:
    handler = idempotent_dynamodb_stream(subscriber="search", key="dynamodb.NewImage.order_id.S",
                                         store=store)(index)
    first = dynamodb_stream_record("INSERT", {"pk": {"S": "a"}}, sequence_number="1",
                                   new_image={"pk": {"S": "a"}, "order_id": {"S": "o-1"}})
    reuse = dynamodb_stream_record("INSERT", {"pk": {"S": "b"}}, sequence_number="2",
                                   new_image={"pk": {"S": "b"}, "order_id": {"S": "o-1"}})
    later = dynamodb_stream_record("INSERT", {"pk": {"S": "c"}}, sequence_number="3",
                                   new_image={"pk": {"S": "c"}, "order_id": {"S": "o-3"}})
    assert handler({"Records": [first, reuse, later]}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": "2"}, {"itemIdentifier": "3"}]}
    assert (applied(search, "a#INSERT"), applied(search, "b#INSERT"), applied(search, "c#INSERT")) == (1, 0, 0)
    # With a fingerprint over the business part only, the second write of the same order replays.
    same_order = idempotent_dynamodb_stream(subscriber="orders", key="dynamodb.NewImage.order_id.S",
                                            fingerprint="dynamodb.NewImage.order_id", store=store)(index)
    assert same_order({"Records": [first, reuse]}, DrillContext()) == {"batchItemFailures": []}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    motoserver = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    motoserver.start()
    host, port = motoserver.get_host_and_port()
    yield f"http://{host}:{port}"
    motoserver.stop()


def test_a_tables_real_stream_is_consumed_once_per_change(server: str) -> None:
    ddb = boto3.client("dynamodb", region_name="eu-west-1", endpoint_url=server)
    streams = boto3.client("dynamodbstreams", region_name="eu-west-1", endpoint_url=server)
    create_idempotency_table(ddb)
    for name, stream in ((ORDERS, {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}), (INDEX, None)):
        ddb.create_table(TableName=name, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                         KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST",
                         **({"StreamSpecification": stream} if stream else {}))
    try:
        ddb.put_item(TableName=ORDERS, Item=order(1, 10))
        ddb.update_item(TableName=ORDERS, Key={"pk": {"S": "order#1"}}, UpdateExpression="SET #t = :t",
                        ExpressionAttributeNames={"#t": "total"}, ExpressionAttributeValues={":t": {"N": "12"}})
        ddb.delete_item(TableName=ORDERS, Key={"pk": {"S": "order#1"}})
        arn = ddb.describe_table(TableName=ORDERS)["Table"]["LatestStreamArn"]
        (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        event = stream_event(streams.get_records(ShardIterator=iterator)["Records"], arn)
        store = DynamoStore(TABLE, client=ddb)
        handler = idempotent_dynamodb_stream(subscriber="search", store=store)(index)
        calls = CallCounter(ddb)
        assert handler(event, DrillContext()) == {"batchItemFailures": []}
        assert calls.calls == {"TransactWriteItems": 3}
        calls.reset()
        assert handler(event, DrillContext()) == {"batchItemFailures": []}  # the batch redelivered
        assert calls.calls == {"TransactWriteItems": 3}
        assert [applied(ddb, f"order#1#{name}") for name in ("INSERT", "MODIFY", "REMOVE")] == [1, 1, 1]
    finally:
        for name in (TABLE, ORDERS, INDEX):
            ddb.delete_table(TableName=name)


def hostile(kind: str) -> dict[str, Any]:
    record = dynamodb_stream_record("INSERT", {"pk": {"S": "h"}}, sequence_number="9",
                                    new_image={"pk": {"S": "h"}, "note": {"S": "fine"}})
    if kind == "no-change":
        del record["dynamodb"]
    elif kind == "lone-surrogate":
        record["dynamodb"]["NewImage"]["note"] = {"S": "\ud800"}
    elif kind == "no-sequence-number":
        del record["dynamodb"]["SequenceNumber"]
    return record


@pytest.mark.parametrize("kind", ["no-change", "lone-surrogate", "no-sequence-number"])
def test_hostile_records_fail_with_the_rest_of_the_batch_and_no_dynamodb_call(
        store: Any, search: Any, calls: Any, kind: str) -> None:
    handler = idempotent_dynamodb_stream(subscriber="search", store=store)(index)
    after = dynamodb_stream_record("INSERT", {"pk": {"S": "later"}}, sequence_number="10",
                                   new_image={"pk": {"S": "later"}})
    calls.reset()
    response = handler({"Records": [hostile(kind), after]}, DrillContext())
    assert [f["itemIdentifier"] for f in response["batchItemFailures"]][1:] == ["10"]
    assert len(response["batchItemFailures"]) == 2 and calls.total == 0
