"""The moto behaviours ``retrysafe_sandbox.moto_adapter`` relies on, one test each (numbered as in its docstring),
then the adapter itself.

The behaviour tests talk to moto's own server (``ThreadedMotoServer`` on 127.0.0.1, no adapter), so a
moto release that changes one fails the test named after it; its docstring says what the adapter
would then have to do.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.dynamodbstreams.models import dynamodbstreams_backends
from moto.server import ThreadedMotoServer
from retrysafe_sandbox.assembly import ACCOUNT, REGION
from retrysafe_sandbox.embedded import EmbeddedAws
from retrysafe_sandbox.moto_adapter import dynamodb_tables, serialized, trial_tables


def _client(endpoint: str, service: str, access_key: str = "sandbox") -> Any:
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION, aws_access_key_id=access_key,
                        aws_secret_access_key="sandbox")


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    """moto's own threaded server, without the adapter."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def adapted_server() -> Iterator[str]:
    """The sandbox's embedded AWS: moto's app behind the adapter (no IAM guard)."""
    server = EmbeddedAws(0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _streamed_table(endpoint: str) -> tuple[str, str]:
    """A new table with a NEW_AND_OLD_IMAGES stream (moto's backends are shared within the process)."""
    name = f"adapter-{uuid.uuid4().hex[:8]}"
    table = _client(endpoint, "dynamodb").create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST", AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})["TableDescription"]
    return name, table["LatestStreamArn"]


def _iterator(endpoint: str, stream_arn: str) -> str:
    streams = _client(endpoint, "dynamodbstreams")
    [shard] = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
    return str(streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard["ShardId"],
                                          ShardIteratorType="TRIM_HORIZON")["ShardIterator"])


def _records(endpoint: str, iterator: str) -> list[tuple[str, str]]:
    records = _client(endpoint, "dynamodbstreams").get_records(ShardIterator=iterator)["Records"]
    return [(r["eventName"], r["dynamodb"]["Keys"]["pk"]["S"]) for r in records]


def _cancelled_transaction(endpoint: str, name: str) -> None:
    """Puts ``phantom``, then fails the condition on the existing item ``a``: cancelled."""
    with pytest.raises(ClientError, match="TransactionCanceledException"):
        _client(endpoint, "dynamodb").transact_write_items(TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": "phantom"}}}},
            {"Put": {"TableName": name, "Item": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_not_exists(pk)"}}])


def _add_one(endpoint: str, name: str, token: str | None = None) -> None:
    update = {"Update": {"TableName": name, "Key": {"pk": {"S": "counter"}}, "UpdateExpression": "ADD n :one",
                         "ExpressionAttributeValues": {":one": {"N": "1"}}}}
    _client(endpoint, "dynamodb").transact_write_items(TransactItems=[update],
                                                       **({"ClientRequestToken": token} if token else {}))


def _counter(endpoint: str, name: str) -> int:
    item = _client(endpoint, "dynamodb").get_item(TableName=name, Key={"pk": {"S": "counter"}})["Item"]
    return int(item["n"]["N"])


# -- the moto behaviours ------------------------------------------------------------------------------------


def test_1_a_cancelled_transaction_puts_a_copy_of_the_table_back(moto_server: str) -> None:
    """If moto rolled back in place, concurrent requests could not lose writes: the lock would only be for streams."""
    name, _ = _streamed_table(moto_server)
    _client(moto_server, "dynamodb").put_item(TableName=name, Item={"pk": {"S": "a"}})
    before = dynamodb_tables()[name]
    _cancelled_transaction(moto_server, name)
    assert dynamodb_tables()[name] is not before


def test_2_a_cancelled_transactions_writes_reach_the_stream_shard_it_was_applied_to(moto_server: str) -> None:
    """If this fails, moto no longer streams a cancelled transaction: the trial in the adapter can go."""
    name, stream = _streamed_table(moto_server)
    _client(moto_server, "dynamodb").put_item(TableName=name, Item={"pk": {"S": "a"}})
    iterator = _iterator(moto_server, stream)  # taken before the transaction, as a poller's may be
    _cancelled_transaction(moto_server, name)
    assert _records(moto_server, iterator) == [("INSERT", "a"), ("INSERT", "phantom")]
    assert "Item" not in _client(moto_server, "dynamodb").get_item(TableName=name, Key={"pk": {"S": "phantom"}})


def test_3_requests_use_the_backends_table_dict_and_a_stream_less_deep_copy_writes_no_records(moto_server: str) -> None:
    """The trial: a swapped-in deep copy takes the request's writes, the real table and its stream see none."""
    name, stream = _streamed_table(moto_server)
    ddb = _client(moto_server, "dynamodb")
    with trial_tables([name]):
        ddb.put_item(TableName=name, Item={"pk": {"S": "trial"}})
        assert ddb.get_item(TableName=name, Key={"pk": {"S": "trial"}})["Item"] == {"pk": {"S": "trial"}}
    assert "Item" not in ddb.get_item(TableName=name, Key={"pk": {"S": "trial"}})
    assert _records(moto_server, _iterator(moto_server, stream)) == []


def test_4_the_same_transaction_sent_twice_is_applied_twice(moto_server: str) -> None:
    """If moto honoured ``ClientRequestToken``, the adapter's second (real) send would be answered from the trial."""
    name, _ = _streamed_table(moto_server)
    token = uuid.uuid4().hex
    _add_one(moto_server, name, token)
    _add_one(moto_server, name, token)
    assert _counter(moto_server, name) == 2


def test_5_streams_fail_on_a_table_without_a_stream_shard(moto_server: str) -> None:
    """If moto handled it, a Streams request racing a trial would be harmless (the lock would still keep it out)."""
    name, stream = _streamed_table(moto_server)
    [shard] = _client(moto_server, "dynamodbstreams").describe_stream(StreamArn=stream)["StreamDescription"]["Shards"]
    streams = dynamodbstreams_backends[ACCOUNT][REGION]
    with trial_tables([name]):
        with pytest.raises(AttributeError, match="created_on"):
            streams.describe_stream(stream)
        with pytest.raises(AttributeError, match="'id'"):
            streams.get_shard_iterator(stream, shard["ShardId"], "TRIM_HORIZON")


def test_6_every_access_key_is_the_default_account(moto_server: str) -> None:
    """The functions' per-role keys and the sandbox's own key must see the same tables, in the sandbox's account."""
    name, stream = _streamed_table(moto_server)
    assert stream.startswith(f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}/stream/")
    assert name in _client(moto_server, "dynamodb", "ASIASANDBOX000000001").list_tables()["TableNames"]


def test_7_an_update_that_creates_its_item_streams_two_inserts(moto_server: str) -> None:
    """If moto streamed one, the adapter's ``one_insert_per_item`` would find nothing to drop and could go."""
    name, stream = _streamed_table(moto_server)
    _add_one(moto_server, name)
    _client(moto_server, "dynamodb").update_item(TableName=name, Key={"pk": {"S": "alone"}},
                                                 UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"N": "1"}})
    records = _client(moto_server, "dynamodbstreams").get_records(ShardIterator=_iterator(moto_server, stream))["Records"]
    assert [(r["eventName"], sorted(r["dynamodb"]["NewImage"])) for r in records] == [
        ("INSERT", ["pk"]), ("INSERT", ["n", "pk"]), ("INSERT", ["pk"]), ("INSERT", ["pk", "v"])]


# -- the adapter ----------------------------------------------------------------------------------------------


def test_a_cancelled_transaction_leaves_the_tables_and_their_streams_untouched(adapted_server: str) -> None:
    name, stream = _streamed_table(adapted_server)
    _client(adapted_server, "dynamodb").put_item(TableName=name, Item={"pk": {"S": "a"}})
    iterator = _iterator(adapted_server, stream)
    before = dynamodb_tables()[name]
    _cancelled_transaction(adapted_server, name)
    assert dynamodb_tables()[name] is before
    assert _records(adapted_server, iterator) == [("INSERT", "a")]
    assert "Item" not in _client(adapted_server, "dynamodb").get_item(TableName=name, Key={"pk": {"S": "phantom"}})


def test_a_committed_transaction_is_applied_once_and_streamed_once(adapted_server: str) -> None:
    name, stream = _streamed_table(adapted_server)
    _client(adapted_server, "dynamodb").put_item(TableName=name, Item={"pk": {"S": "counter"}, "n": {"N": "0"}})
    _add_one(adapted_server, name, uuid.uuid4().hex)
    assert _counter(adapted_server, name) == 1
    assert _records(adapted_server, _iterator(adapted_server, stream)) == [("INSERT", "counter"), ("MODIFY", "counter")]


def test_an_update_that_creates_its_item_is_streamed_as_one_insert_of_the_item(adapted_server: str) -> None:
    name, stream = _streamed_table(adapted_server)
    _add_one(adapted_server, name)  # in a transaction
    ddb = _client(adapted_server, "dynamodb")
    ddb.update_item(TableName=name, Key={"pk": {"S": "alone"}}, UpdateExpression="SET v = :v",
                    ExpressionAttributeValues={":v": {"N": "1"}})
    ddb.update_item(TableName=name, Key={"pk": {"S": "alone"}}, UpdateExpression="SET v = :v",
                    ExpressionAttributeValues={":v": {"N": "2"}})
    records = _client(adapted_server, "dynamodbstreams").get_records(
        ShardIterator=_iterator(adapted_server, stream))["Records"]
    assert [(r["eventName"], sorted(r["dynamodb"]["NewImage"])) for r in records] == [
        ("INSERT", ["n", "pk"]), ("INSERT", ["pk", "v"]), ("MODIFY", ["pk", "v"])]
    sequence = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert sequence == list(range(sequence[0], sequence[0] + 3))  # renumbered without gaps: iterators still work
    # reading after the first record (a poller's next iterator) finds the others
    streams = _client(adapted_server, "dynamodbstreams")
    [shard] = streams.describe_stream(StreamArn=stream)["StreamDescription"]["Shards"]
    after = streams.get_shard_iterator(StreamArn=stream, ShardId=shard["ShardId"], ShardIteratorType="AFTER_SEQUENCE_NUMBER",
                                       SequenceNumber=str(sequence[0]))["ShardIterator"]
    assert _records(adapted_server, after) == [("INSERT", "alone"), ("MODIFY", "alone")]


def test_a_transaction_moto_refuses_is_answered_without_being_applied(adapted_server: str) -> None:
    name, _ = _streamed_table(adapted_server)
    with pytest.raises(ClientError, match="ValidationException"):
        _client(adapted_server, "dynamodb").transact_write_items(TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": "x"}}}},
            {"Delete": {"TableName": name, "Key": {"pk": {"S": "x"}}}}])  # two actions on one item
    assert "Item" not in _client(adapted_server, "dynamodb").get_item(TableName=name, Key={"pk": {"S": "x"}})


def test_dynamodb_and_its_streams_share_the_lock_and_other_services_do_not() -> None:
    assert serialized({"HTTP_X_AMZ_TARGET": "DynamoDB_20120810.TransactWriteItems"})
    assert serialized({"HTTP_X_AMZ_TARGET": "DynamoDBStreams_20120810.GetShardIterator"})
    assert not serialized({"HTTP_X_AMZ_TARGET": "AmazonSQS.ReceiveMessage"})
    assert not serialized({})  # query protocol (SNS) and S3's REST requests
