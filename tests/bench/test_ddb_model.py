"""The benchmark's in-memory DynamoDB answers what moto answers, for every request shape the libraries send.

The same script of requests runs through a botocore client answered by ``benchmarks.ddb_model`` and
through one answered by moto (in-process); the parsed responses and errors must be the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from retrysafe import names
from retrysafe._record import item_size as retrysafe_item_size

from benchmarks.ddb_model import DynamoModel, Table, item_size
from tests.helpers import create_business_table

NOW = {":now": {"N": "1000"}}


def _script(client: Any) -> list[Any]:
    record = {"pk": {"S": "idem#1"}, "st": {"S": "completed"}, "exp": {"N": "2000"}, "rz": {"B": b"\x00\x01z"}}
    put_record = {"TableName": "t", "Item": record, "ConditionExpression": "attribute_not_exists(pk) OR #exp < :now",
                  "ExpressionAttributeNames": {"#exp": "exp"}, "ExpressionAttributeValues": NOW,
                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    order = {"Put": {"TableName": "t", "Item": {"pk": {"S": "order#1"}, "n": {"N": "42"}},
                     "ConditionExpression": "attribute_not_exists(pk)"}}
    steps: list[Any] = [
        lambda: client.transact_write_items(TransactItems=[{"Put": put_record}, order]),
        lambda: client.transact_write_items(TransactItems=[{"Put": put_record}, order]),  # replay: cancelled, ALL_OLD
        lambda: client.put_item(**put_record),  # conditional failure with the old item
        lambda: client.put_item(TableName="t", Item={"pk": {"S": "idem#2"}, "st": {"S": "INPROGRESS"},
                                                    "exp": {"N": "500"}},
                                ConditionExpression="attribute_not_exists(#id) OR #expiry < :now OR "
                                                    "(#status = :inprogress AND attribute_exists(#ipe) AND #ipe < :ms)",
                                ExpressionAttributeNames={"#id": "pk", "#expiry": "exp", "#status": "st", "#ipe": "ipe"},
                                ExpressionAttributeValues={**NOW, ":inprogress": {"S": "INPROGRESS"}, ":ms": {"N": "5"}},
                                ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        lambda: client.update_item(TableName="t", Key={"pk": {"S": "idem#2"}},
                                   UpdateExpression="SET #st = :st, #ow = :ow REMOVE #gone",
                                   ConditionExpression="#st = :old AND NOT attribute_exists(#ow)",
                                   ExpressionAttributeNames={"#st": "st", "#ow": "ow", "#gone": "exp"},
                                   ExpressionAttributeValues={":st": {"S": "pending"}, ":ow": {"S": "me"},
                                                              ":old": {"S": "INPROGRESS"}},
                                   ReturnValues="ALL_OLD"),
        lambda: client.update_item(TableName="t", Key={"pk": {"S": "idem#2"}}, UpdateExpression="SET #le = :z",
                                   ConditionExpression="#ow = :other", ExpressionAttributeNames={"#le": "le", "#ow": "ow"},
                                   ExpressionAttributeValues={":z": {"N": "0"}, ":other": {"S": "you"}},
                                   ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        lambda: client.get_item(TableName="t", Key={"pk": {"S": "idem#2"}}, ConsistentRead=True),
        lambda: client.delete_item(TableName="t", Key={"pk": {"S": "idem#2"}}, ConditionExpression="#ow = :ow",
                                   ExpressionAttributeNames={"#ow": "ow"}, ExpressionAttributeValues={":ow": {"S": "me"}}),
        lambda: client.get_item(TableName="t", Key={"pk": {"S": "idem#2"}}),
        lambda: client.transact_write_items(TransactItems=[
            {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "order#1"}}, "ConditionExpression": "#n > :n",
                                "ExpressionAttributeNames": {"#n": "n"}, "ExpressionAttributeValues": {":n": {"N": "100"}},
                                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
            {"Delete": {"TableName": "t", "Key": {"pk": {"S": "idem#1"}}}}]),
    ]
    results: list[Any] = []
    for step in steps:
        try:
            response = step()
            response.pop("ResponseMetadata", None)
            for unrequested in ("ConsumedCapacity", "ItemCollectionMetrics"):  # moto adds them unasked
                response.pop(unrequested, None)
            results.append(("ok", response))
        except ClientError as error:
            body = {k: v for k, v in error.response.items() if k in ("Item", "CancellationReasons")}
            for reason in body.get("CancellationReasons", []):
                reason.pop("Message", None)
            results.append((error.response["Error"]["Code"], body))
    return results


def _table(client: Any) -> None:
    create_business_table(client, "t")


def test_the_model_answers_as_moto_does() -> None:
    from moto import mock_aws

    model = DynamoModel({"t": Table("pk")})
    ours = _script(model.install(boto3.client("dynamodb", region_name="eu-west-1")))
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        _table(client)
        theirs = _script(client)
    assert ours == theirs
    assert [code for code, _ in ours] == ["ok", "TransactionCanceledException", "ConditionalCheckFailedException",
                                          "ok", "ok", "ConditionalCheckFailedException", "ok", "ok", "ok",
                                          "TransactionCanceledException"]


def test_unsupported_expressions_fail_loudly() -> None:
    model = DynamoModel({"t": Table("pk")})
    client = model.install(boto3.client("dynamodb", region_name="eu-west-1"))
    with pytest.raises(NotImplementedError):
        client.update_item(TableName="t", Key={"pk": {"S": "a"}}, UpdateExpression="SET n = n + :one",
                           ExpressionAttributeValues={":one": {"N": "1"}})


@pytest.mark.parametrize("item", [
    {"pk": {"S": "idem#é"}, "n": {"N": "-12.5"}, "b": {"B": b"\x00" * 10}, "ok": {"BOOL": True}},
    {"pk": {"S": "x"}, "m": {"M": {"a": {"L": [{"S": "x"}, {"NULL": True}]}}}, "ss": {"SS": ["a", "bc"]}},
])
def test_item_sizes_follow_dynamodbs_rules_as_retrysafe_computes_them(item: dict[str, Any]) -> None:
    assert item_size(item) == retrysafe_item_size(item)


def test_transactional_writes_cost_double_and_the_index_one_more() -> None:
    model = DynamoModel({"t": Table("pk", {names.OUTBOX_INDEX: (names.UNPUBLISHED_ATTRIBUTE, "at")})})
    client = model.install(boto3.client("dynamodb", region_name="eu-west-1"))
    event = {"pk": {"S": "outbox#1"}, names.UNPUBLISHED_ATTRIBUTE: {"S": "u1"}, "at": {"S": "2026-01-01"}, "payload": {"S": "x" * 1500}}
    client.transact_write_items(TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}},
                                               {"Put": {"TableName": "t", "Item": event}}])
    usage = model.reset_usage().as_dict()
    assert (usage["table_wcu"], usage["gsi_wcu"]) == (2 * 1 + 2 * 2, 2)  # 1 KiB + 2 KiB items, doubled; 1.6 KiB entry


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """:mod:`benchmarks.bench` with its environment for this test only (importing it sets its variables)."""
    saved = dict(os.environ)
    from benchmarks import bench as module

    os.environ.clear()
    os.environ.update(saved)
    for name, value in module.ENV.items():
        monkeypatch.setenv(name, value)
    yield module


def test_the_socket_variant_makes_the_same_calls_and_pays_the_same_units(bench: Any) -> None:
    """``make bench``'s socket variant: the model served on 127.0.0.1 by another process, both libraries'
    clients pointed at it, answers every request kind as the in-process model does."""
    from benchmarks.ddb_server import ModelServer

    here = bench.round_trips_and_units()
    with ModelServer() as server:
        assert server.endpoint.startswith("http://127.0.0.1:")
        there = bench.round_trips_and_units(server)
        assert server.usage()["calls"] == []  # each read of the usage starts a new count
    for side in bench.SIDES:
        for kind in ("first", "replay", "replay_other_container"):
            assert there[side][kind] == here[side][kind], (side, kind)
    assert here["retrysafe_atomic"]["first"]["calls"] == ["TransactWriteItems"]


def test_a_first_request_writing_only_its_record_is_one_put_of_one_unit(bench: Any) -> None:
    units = bench.record_only_units()
    assert units["retrysafe_atomic"]["first"]["calls"] == ["PutItem"]
    assert units["retrysafe_atomic"]["first"]["wcu"] == 1  # not doubled: no transaction
    assert units["retrysafe_atomic"]["replay_other_container"]["calls"] == ["PutItem"]
    assert units["powertools"]["first"]["calls"] == ["PutItem", "UpdateItem"]
    # Claim-first: the claim, then its completion as a PutItem conditioned on the owner token: 2 units, not 3.
    assert units["retrysafe_claim_first"]["first"]["calls"] == ["PutItem", "PutItem"]
    assert units["retrysafe_claim_first"]["first"]["wcu"] == 2
    assert units["retrysafe_claim_first"]["replay_other_container"]["calls"] == ["PutItem"]


def test_the_cutover_costs_one_get_item_on_first_requests_only_while_open(bench: Any) -> None:
    units = bench.cutover_units()
    atomic, claim_first = units["retrysafe_atomic"], units["retrysafe_claim_first"]
    assert atomic["first"]["calls"] == ["GetItem", "TransactWriteItems"]  # + the one lookup
    assert atomic["retry_of_a_powertools_request"]["calls"] == ["GetItem", "PutItem"]  # answered, then recorded
    assert claim_first["first"]["calls"] == ["PutItem", "GetItem", "TransactWriteItems"]
    # retrysafe's record answers the claim: no second lookup in Powertools' table
    assert claim_first["that_retry_in_another_container"]["calls"] == ["PutItem"]
    # atomic mode learns of its record only when it writes: a container without it in its cache looks up again
    assert atomic["that_retry_in_another_container"]["calls"] == ["GetItem", "PutItem"]
