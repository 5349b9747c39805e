"""The DynamoDB semantics layer in front of moto, and the faults at the boto3 boundary.

Each test states a DynamoDB guarantee (or a botocore behaviour under a fault)
and checks it through a real boto3 client on moto.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ReadTimeoutError
from retrysafe.testing import (
    ALWAYS,
    Boundary,
    Clock,
    DynamoSemantics,
    GlobalTables,
    SimulatedCrash,
    instant_retries,
    ttl_sweep,
)

from tests.helpers import create_business_table

TABLE = "semantics"
STANDARD = Config(retries={"mode": "standard", "max_attempts": 4})


def make_client(**options: Any) -> Any:
    client = boto3.client("dynamodb", region_name="eu-west-1", config=STANDARD, **options)
    instant_retries(client)
    return client


def create(client: Any) -> None:
    create_business_table(client, TABLE)


@pytest.fixture
def clock() -> Clock:
    return Clock(1_800_000_000.0)


@pytest.fixture
def client(aws: None, clock: Clock) -> Iterator[Any]:
    made = make_client()
    create(made)
    semantics = DynamoSemantics(clock).install(made)
    yield made
    semantics.uninstall(made)


def counter(client: Any, pk: str = "c") -> int:
    item = client.get_item(TableName=TABLE, Key={"pk": {"S": pk}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item and "n" in item else 0


def increment(pk: str = "c", condition: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {"TableName": TABLE, "Key": {"pk": {"S": pk}}, "UpdateExpression": "ADD #n :one",
                              "ExpressionAttributeNames": {"#n": "n"},
                              "ExpressionAttributeValues": {":one": {"N": "1"}}}
    if condition:
        update["ConditionExpression"] = condition
    return update


def in_threads(count: int, work: Any) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        try:
            work(index)
        except BaseException as error:  # noqa: BLE001 - collected and inspected by the test
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


# -- each request atomic; transactions all-or-nothing ------------------------------------------------
def test_a_conditional_claim_under_threads_is_won_exactly_once(client: Any) -> None:
    def claim(index: int) -> None:
        client.update_item(TableName=TABLE, Key={"pk": {"S": "claim"}}, UpdateExpression="SET #ow = :me",
                           ConditionExpression="attribute_not_exists(pk)", ExpressionAttributeNames={"#ow": "ow"},
                           ExpressionAttributeValues={":me": {"S": f"owner-{index}"}})

    errors = in_threads(16, claim)
    assert len(errors) == 15
    assert all(isinstance(e, ClientError) and e.response["Error"]["Code"] == "ConditionalCheckFailedException"
               for e in errors)
    item = client.get_item(TableName=TABLE, Key={"pk": {"S": "claim"}}, ConsistentRead=True)["Item"]
    assert item["ow"]["S"].startswith("owner-")  # never the bare item moto stores mid-update


def test_a_cancelled_transaction_never_loses_a_concurrent_write(client: Any) -> None:
    client.put_item(TableName=TABLE, Item={"pk": {"S": "guard"}})
    rounds = 15

    def work(index: int) -> None:
        for _ in range(rounds):
            if index % 2:
                client.update_item(**increment())
            else:
                with pytest.raises(ClientError, match="TransactionCanceledException"):
                    client.transact_write_items(TransactItems=[
                        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": f"other-{index}"}}}},
                        {"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": "guard"}},
                                            "ConditionExpression": "attribute_not_exists(pk)"}}])

    assert in_threads(8, work) == []
    assert counter(client) == 4 * rounds  # every increment survived every rollback
    assert "Item" not in client.get_item(TableName=TABLE, Key={"pk": {"S": "other-0"}})  # all-or-nothing


def test_cancellation_reasons_carry_the_old_item_with_return_values_on_condition_check_failure(client: Any) -> None:
    client.put_item(TableName=TABLE, Item={"pk": {"S": "r"}, "v": {"S": "old"}})
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "new"}}}},
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "r"}, "v": {"S": "new"}},
                     "ConditionExpression": "attribute_not_exists(pk)",
                     "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}])
    reasons = cancelled.value.response["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
    assert reasons[1]["Item"] == {"pk": {"S": "r"}, "v": {"S": "old"}}


# -- ClientRequestToken --------------------------------------------------------------------------
def transact(client: Any, token: str, pk: str = "c", condition: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = client.transact_write_items(ClientRequestToken=token,
                                                         TransactItems=[{"Update": increment(pk, condition)}])
    return result


def test_the_same_token_and_parameters_answer_the_first_success_without_applying_again(client: Any) -> None:
    transact(client, "t-1")
    transact(client, "t-1")
    assert counter(client) == 1
    assert DynamoSemantics.of(client) is not None and DynamoSemantics.of(client).token_replays == 1  # type: ignore[union-attr]


def test_the_same_token_with_other_parameters_is_an_idempotent_parameter_mismatch(client: Any) -> None:
    transact(client, "t-1")
    with pytest.raises(ClientError) as mismatch:
        transact(client, "t-1", pk="other")
    assert mismatch.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert counter(client, "other") == 0


def test_a_token_is_remembered_for_ten_minutes_by_the_layers_clock(client: Any, clock: Clock) -> None:
    transact(client, "t-1")
    clock.advance(600)
    transact(client, "t-1")
    assert counter(client) == 1
    clock.advance(1)
    transact(client, "t-1")  # a new request after the window
    assert counter(client) == 2


def test_a_token_whose_first_request_was_cancelled_runs_as_new(client: Any) -> None:
    with pytest.raises(ClientError, match="TransactionCanceledException"):
        transact(client, "t-1", condition="attribute_exists(pk)")
    client.put_item(TableName=TABLE, Item={"pk": {"S": "c"}})
    transact(client, "t-1", condition="attribute_exists(pk)")
    assert counter(client) == 1


def test_botocore_gives_every_transaction_a_token_and_resends_it(client: Any) -> None:
    boundary = Boundary(client)
    boundary.lose_response("TransactWriteItems")
    response = client.transact_write_items(TransactItems=[{"Update": increment()}])  # no token passed
    boundary.close()
    assert response["ResponseMetadata"]["RetryAttempts"] == 1
    assert boundary.fired == [("TransactWriteItems", "lost response")]
    assert counter(client) == 1
    assert len(boundary.commits) == 1  # the ledger holds what was applied, not the replay


# -- faults ------------------------------------------------------------------------------------------
def test_a_lost_response_without_a_token_is_resent_and_applied_again(client: Any) -> None:
    boundary = Boundary(client)
    boundary.lose_response("UpdateItem")
    client.update_item(**increment())
    assert counter(client) == 2  # a plain resend: DynamoDB applies it again
    boundary.lose_response("UpdateItem")
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        client.update_item(**increment("d", "attribute_not_exists(pk)"))  # the resend meets its own write
    boundary.close()
    assert counter(client, "d") == 1


def test_a_response_lost_until_retries_run_out_raises_the_timeout_after_applying(client: Any) -> None:
    boundary = Boundary(client)
    boundary.lose_response("TransactWriteItems", times=ALWAYS)
    with pytest.raises(ReadTimeoutError):
        transact(client, "t-1")
    boundary.close()
    assert [op for op, _ in boundary.sent] == ["TransactWriteItems"] * 5  # max_attempts=4 retries
    assert counter(client) == 1  # the retries carried the same token


def test_throttling_is_retried_by_botocore_and_applied_once(client: Any) -> None:
    boundary = Boundary(client)
    boundary.throttle("UpdateItem", code="ProvisionedThroughputExceededException")
    client.update_item(**increment())
    assert counter(client) == 1
    boundary.throttle("UpdateItem", times=ALWAYS)
    with pytest.raises(ClientError) as throttled:
        client.update_item(**increment())
    boundary.close()
    assert throttled.value.response["Error"]["Code"] == "ThrottlingException"
    assert counter(client) == 1


@pytest.mark.parametrize("reasons, codes", [
    (("ThrottlingError",), ["ThrottlingError", "None"]),
    ((None, "TransactionConflict"), ["None", "TransactionConflict"]),
    (("ProvisionedThroughputExceeded",), ["ProvisionedThroughputExceeded", "None"]),
])
def test_cancellation_reasons_are_injected_without_applying(client: Any, reasons: Any, codes: list[str]) -> None:
    boundary = Boundary(client)
    boundary.cancel(reasons)
    with pytest.raises(ClientError) as cancelled:
        client.transact_write_items(TransactItems=[{"Update": increment()}, {"Update": increment("d")}])
    boundary.close()
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled.value.response["CancellationReasons"]] == codes
    assert counter(client) == 0 and boundary.commits == []


def test_a_predicate_on_the_parameters_picks_the_call(client: Any) -> None:
    boundary = Boundary(client)
    boundary.crash("UpdateItem", when="before", match=lambda op, params: params["Key"]["pk"]["S"] == "d")
    client.update_item(**increment("c"))
    with pytest.raises(SimulatedCrash):
        client.update_item(**increment("d"))
    with pytest.raises(SimulatedCrash, match="already dead"):
        client.update_item(**increment("c"))
    boundary.revive()
    client.update_item(**increment("c"))
    boundary.close()
    assert (counter(client, "c"), counter(client, "d")) == (2, 0)


def test_a_crash_after_the_call_dies_once_it_was_applied(client: Any) -> None:
    boundary = Boundary(client)
    boundary.crash("UpdateItem", when="after")
    with pytest.raises(SimulatedCrash):
        client.update_item(**increment())
    boundary.close()
    assert counter(client) == 1 and boundary.crashes == [("UpdateItem", "after")]


def test_ttl_sweep_deletes_only_what_has_expired(client: Any) -> None:
    for pk, exp in (("old", 100), ("new", 300), ("none", None)):
        item = {"pk": {"S": pk}, **({"exp": {"N": str(exp)}} if exp else {})}
        client.put_item(TableName=TABLE, Item=item)
    assert ttl_sweep(client, TABLE, 200) == ["old"]
    keys = {i["pk"]["S"] for i in client.scan(TableName=TABLE)["Items"]}
    assert keys == {"new", "none"}


def test_the_seam_gives_the_client_back_to_moto_when_unplugged(client: Any) -> None:
    from retrysafe.testing._boundary import _BotocoreSeam

    semantics = DynamoSemantics.of(client)
    assert semantics is not None and _BotocoreSeam.ATTRIBUTE in client.__dict__
    semantics.uninstall(client)
    assert _BotocoreSeam.ATTRIBUTE not in client.__dict__
    client.update_item(**increment())  # moto's own hook serves it again
    assert counter(client) == 1
    semantics.install(client)


def test_the_layer_works_in_front_of_motos_server() -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        remote = make_client(endpoint_url=f"http://{host}:{port}", aws_access_key_id="testing",
                             aws_secret_access_key="testing")
        create(remote)
        DynamoSemantics().install(remote)
        boundary = Boundary(remote)
        boundary.lose_response("TransactWriteItems")
        transact(remote, "t-1")
        transact(remote, "t-1")
        boundary.close()
        assert counter(remote) == 1 and boundary.fired == [("TransactWriteItems", "lost response")]
    finally:
        server.stop()


def test_a_retry_meeting_its_transaction_in_progress_is_retried_by_botocore(client: Any) -> None:
    """DynamoDB answers TransactionInProgressException to a token whose first request is still running."""
    boundary = Boundary(client)
    boundary.lose_response("TransactWriteItems")
    boundary.fail("TransactWriteItems", 400, "TransactionInProgressException", nth=2)  # the resend, while it runs
    response = transact(client, "t-1")
    boundary.close()
    assert response["ResponseMetadata"]["RetryAttempts"] == 2
    assert counter(client) == 1


# -- global tables (multi-Region eventual consistency) ---------------------------------------------

EAST = "us-east-1"


@pytest.fixture
def replicas(aws: None, clock: Clock) -> Iterator[tuple[GlobalTables, Any, Any]]:
    """The same table in two regions, replicated by hand (:meth:`GlobalTables.replicate`)."""
    west = make_client()
    east = boto3.client("dynamodb", region_name=EAST, config=STANDARD)
    instant_retries(east)
    for made in (west, east):
        create(made)
    tables = GlobalTables(("eu-west-1", EAST), (TABLE,), clock)
    tables.install(west).install(east)
    yield tables, west, east
    for made in (west, east):
        DynamoSemantics.of(made).uninstall(made)  # type: ignore[union-attr]


def claim(client: Any, owner: str) -> bool:
    try:
        client.put_item(TableName=TABLE, Item={"pk": {"S": "k"}, "ow": {"S": owner}},
                        ConditionExpression="attribute_not_exists(pk)")
        return True
    except client.exceptions.ConditionalCheckFailedException:
        return False


def owner(client: Any) -> str | None:
    item = client.get_item(TableName=TABLE, Key={"pk": {"S": "k"}}, ConsistentRead=True).get("Item")
    return str(item["ow"]["S"]) if item else None


def test_a_write_reaches_the_other_region_only_when_replication_runs(replicas: tuple[GlobalTables, Any, Any]) -> None:
    tables, west, east = replicas
    assert claim(west, "w")
    assert owner(east) is None and tables.pending == 1  # the lag: a strongly consistent read there is stale
    assert tables.replicate() == 1
    assert owner(east) == "w" and tables.pending == 0
    assert not claim(east, "e")  # now the condition sees the replicated item


def test_conditions_are_evaluated_against_the_local_replica_and_the_last_writer_wins(
        replicas: tuple[GlobalTables, Any, Any]) -> None:
    """Both regions win the same conditional claim within the lag; replication keeps the later write everywhere."""
    tables, west, east = replicas
    assert claim(west, "w") and claim(east, "e")
    tables.replicate()
    assert owner(west) == owner(east) == "e"
    assert tables.local_writes[(TABLE, "k")] == 2  # both writes happened, whatever replication kept


def test_a_transaction_is_atomic_in_its_region_only(replicas: tuple[GlobalTables, Any, Any]) -> None:
    tables, west, east = replicas
    west.transact_write_items(TransactItems=[
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Update": {"TableName": TABLE, "Key": {"pk": {"S": "c"}}, "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}}])
    east.transact_write_items(TransactItems=[
        {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "a"}}, "ConditionExpression": "attribute_not_exists(pk)"}},
        {"Update": {"TableName": TABLE, "Key": {"pk": {"S": "c"}}, "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}}}}])
    tables.replicate()
    assert counter(west) == counter(east) == 1  # last writer wins on the counter item...
    assert tables.local_writes[(TABLE, "c")] == 2  # ...but both regions' transactions committed


def test_a_delete_replicates_and_a_later_local_write_is_kept(replicas: tuple[GlobalTables, Any, Any]) -> None:
    tables, west, east = replicas
    assert claim(west, "w")
    tables.replicate()
    west.delete_item(TableName=TABLE, Key={"pk": {"S": "k"}})
    east.put_item(TableName=TABLE, Item={"pk": {"S": "k"}, "ow": {"S": "e"}})  # later than the delete
    tables.replicate()
    assert owner(west) == owner(east) == "e"
    tables.forget()
    assert tables.pending == 0 and not tables.local_writes
