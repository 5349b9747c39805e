"""Zombies, takeovers, size limits, DynamoDB failures and configuration errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import Engine, Mode, Transaction, idempotent_http, metrics, names
from retrysafe._config import Retention
from retrysafe._engine import Completion, Intent
from retrysafe._keys import Scope
from retrysafe._record import item_size
from retrysafe._store import DynamoStore
from retrysafe.errors import (
    ConfigurationError,
    FencingError,
    ResponseTooLargeError,
    StoreUnavailableError,
    TransactionTooLargeError,
)
from retrysafe.testing import ALWAYS, Boundary
from retrysafe.testing._events import DrillContext, rest_event

from tests.helpers import ORDERS, TABLE

SCOPE = Scope("tenant-a", "Charge", "key-1", adapter=names.HTTP_ADAPTER)


def intent(**overrides: Any) -> Intent:
    options: dict[str, Any] = {"scope": SCOPE, "fingerprint": "fp-1", "mode": Mode.CLAIM_FIRST, "lease_seconds": 5.0}
    options.update(overrides)
    return Intent(**options)


def record(ddb: Any) -> dict[str, Any]:
    return ddb.get_item(TableName=TABLE, Key={"pk": {"S": SCOPE.record_id}})["Item"]


def test_zombie_cannot_complete_or_release_after_takeover(ddb, store, calls, clock):
    """A's lease lapses, B takes over and completes; A's late completion and release are both rejected."""
    engine = Engine(store, clock=clock)
    b_result: list[Any] = []

    def b_work(txn: Transaction) -> Completion:
        txn.put({"pk": "order#b", "by": "B"}, table=ORDERS)
        return Completion({"charged_by": "B", "key": txn.derive_key("charge")})

    def a_work(txn: Transaction) -> Completion:
        a_key = txn.derive_key("charge")
        clock.advance(6)  # A stalls past its lease...
        b_result.append(engine.execute(intent(), b_work))  # ...and B takes over and completes
        txn.put({"pk": "order#a", "by": "A"}, table=ORDERS)
        return Completion({"charged_by": "A", "key": a_key})

    outcome = engine.execute(intent(), a_work)
    # A's completion was fenced off: it answers with B's stored result, and its writes were discarded.
    assert outcome.replayed and outcome.result["charged_by"] == "B"
    assert b_result[0].result["key"] == outcome.result["key"]  # derived downstream key is stable across takeover
    assert [i["pk"]["S"] for i in ddb.scan(TableName=ORDERS)["Items"]] == ["order#b"]
    stored = record(ddb)
    assert stored["st"]["S"] == "completed" and json.loads(stored["r"]["S"])["charged_by"] == "B"


def test_zombie_release_is_rejected_and_new_owners_claim_survives(ddb, store, clock):
    engine = Engine(store, clock=clock)

    def a_work(txn: Transaction) -> Completion:
        clock.advance(6)
        with pytest.raises(RuntimeError):
            engine.execute(intent(), b_crashes_later)  # B takes over, then fails: B releases its own claim
        engine_b_claim()
        raise ConnectionError("A's provider call failed late")

    def b_crashes_later(txn: Transaction) -> Completion:
        raise RuntimeError("B failed")

    claims: list[str] = []

    def engine_b_claim() -> None:
        # C takes the key and is still working when A's release arrives.
        from retrysafe._record import PENDING, Record

        now = clock()
        store.claim(Record(SCOPE.record_id, PENDING, "fp-1", int(now) + 86400, int(now * 1000), "Charge",
                           owner="owner-C", lease_until_ms=int((now + 30) * 1000)), now)
        claims.append("C")

    with pytest.raises(ConnectionError):
        engine.execute(intent(), a_work)
    stored = record(ddb)
    assert stored["st"]["S"] == "pending" and stored["ow"]["S"] == "owner-C"  # A's release did not delete C's claim


def test_zombie_completion_rejected_while_new_owner_still_pending(ddb, store, clock):
    engine = Engine(store, clock=clock)

    def a_work(txn: Transaction) -> Completion:
        clock.advance(6)
        now = clock()
        from retrysafe._record import PENDING, Record

        store.claim(Record(SCOPE.record_id, PENDING, "fp-1", int(now) + 86400, int(now * 1000), "Charge",
                           owner="owner-B", lease_until_ms=int((now + 30) * 1000)), now)
        txn.put({"pk": "order#a"}, table=ORDERS)
        return Completion({"by": "A"})

    with pytest.raises(FencingError):
        engine.execute(intent(), a_work)
    assert ddb.scan(TableName=ORDERS)["Items"] == []
    assert record(ddb)["ow"]["S"] == "owner-B"


def test_takeover_keeps_checkpoints_of_the_lapsed_claim(ddb, store, clock):
    from retrysafe._record import PENDING, Record

    now = clock()
    store.claim(Record(SCOPE.record_id, PENDING, "fp-1", int(now) + 86400, int(now * 1000), "Charge",
                       owner="dead", lease_until_ms=int((now + 1) * 1000)), now)
    ddb.update_item(TableName=TABLE, Key={"pk": {"S": SCOPE.record_id}}, UpdateExpression="SET cp = :cp",
                    ExpressionAttributeValues={":cp": {"M": {"charge": {"S": '{"id":"ch_1"}'}}}})
    clock.advance(2)
    seen: list[dict[str, Any]] = []
    Engine(store, clock=clock).execute(intent(), lambda txn: (seen.append(txn.checkpoints), Completion("ok"))[1])
    assert seen == [{"charge": {"id": "ch_1"}}]


def test_lease_comes_from_the_lambdas_remaining_time(ddb, store, clock):
    engine = Engine(store, clock=clock)
    leases: list[int] = []

    def work(txn: Transaction) -> Completion:
        leases.append(int(record(ddb)["le"]["N"]))
        return Completion("ok")

    engine.execute(intent(lease_seconds=None), work, remaining_ms=lambda: 30_000)
    assert leases[0] == pytest.approx((clock() + 30 + 2) * 1000, abs=5)


def test_large_responses_are_compressed_and_fit_small_items(ddb, store):
    body = json.dumps({"items": [{"sku": f"SKU-{i:05d}", "qty": 1, "price": "9.99"} for i in range(200)]})
    assert len(body) > 8000
    handler = idempotent_http(lambda e, c, t: {"statusCode": 200, "body": body}, engine=Engine(store))
    handler(rest_event({"a": 1}), DrillContext())
    [item] = [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]
    assert "rz" in item and item_size(item) < len(body) / 4
    assert handler(rest_event({"a": 1}), DrillContext())["body"] == body


def test_4kib_json_response_record_fits_one_write_unit(ddb, store):
    body = json.dumps({"order": {"id": "o-1", "lines": [{"sku": f"SKU-{i}", "qty": i % 5, "price": "12.50",
                                                          "name": "Widget"} for i in range(60)]}})
    assert 3500 < len(body) <= 4096
    handler = idempotent_http(lambda e, c, t: {"statusCode": 201, "headers": {"Content-Type": "application/json"},
                                               "body": body}, engine=Engine(store))
    handler(rest_event({"a": 1}), DrillContext())
    [item] = [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]
    assert item_size(item) <= 1024


def test_response_too_large_for_an_item_is_a_clear_error_and_nothing_is_stored(ddb, store, calls):
    import base64
    import os

    noise = base64.b64encode(os.urandom(600 * 1024)).decode()  # ~800 KB, compresses to ~600 KB
    handler = idempotent_http(lambda e, c, t: {"statusCode": 200, "body": noise}, engine=Engine(store))
    response = handler(rest_event({"a": 1}), DrillContext())
    assert response["statusCode"] == 500
    assert "400 KB" in json.loads(response["body"])["detail"]
    assert calls.total == 0 and ddb.scan(TableName=TABLE)["Items"] == []
    with pytest.raises(ResponseTooLargeError):
        Engine(store).execute(intent(mode=Mode.ATOMIC), lambda txn: Completion(noise))


def test_more_than_100_actions_is_refused_before_anything_is_written(ddb, store, calls):
    def work(txn: Transaction) -> Completion:
        for i in range(100):
            txn.put({"pk": f"line#{i}"}, table=ORDERS)
        return Completion("ok")

    for mode in (Mode.ATOMIC, Mode.CLAIM_FIRST):
        with pytest.raises(TransactionTooLargeError, match="100"):
            Engine(store).execute(intent(mode=mode), work)
    assert ddb.scan(TableName=ORDERS)["Items"] == [] and ddb.scan(TableName=TABLE)["Items"] == []


def test_throttling_after_botocore_retries_is_a_503_with_retry_after(ddb):
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 2}))
    boundary = Boundary(client)  # at the transport's attempt seam, under botocore's retries
    for operation in ("PutItem", "TransactWriteItems"):
        boundary.throttle(operation, code="ThrottlingException", times=ALWAYS)
    store = DynamoStore(TABLE, client=client)
    handler = idempotent_http(lambda e, c, t: {"statusCode": 201, "body": "{}"}, engine=Engine(store))
    response = handler(rest_event({"a": 1}), DrillContext())
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"] == "1"
    assert boundary.fired == [("PutItem", "error")] * 3  # botocore retried twice (max_attempts counts retries)
    assert ddb.scan(TableName=TABLE)["Items"] == []  # throttled: nothing applied
    with pytest.raises(StoreUnavailableError):
        Engine(store).execute(intent(), lambda txn: Completion("x"))


def test_missing_table_is_a_configuration_error(aws):
    import boto3

    store = DynamoStore("no-such-table", client=boto3.client("dynamodb", region_name="eu-west-1"))
    with pytest.raises(ConfigurationError, match="no-such-table"):
        Engine(store).execute(intent(), lambda txn: Completion("x"))


@pytest.mark.parametrize("in_lambda", [True, False])
def test_missing_table_env_fails_the_cold_start_in_lambda_and_the_first_call_elsewhere(monkeypatch, in_lambda):
    """Inside Lambda the environment is the deployment's: read at decoration. Elsewhere (a test suite that
    sets it after importing the handler) at the first call."""
    monkeypatch.delenv(names.TABLE_ENV)
    for name in ("AWS_LAMBDA_RUNTIME_API", "AWS_LAMBDA_INITIALIZATION_TYPE"):
        monkeypatch.delenv(name, raising=False)
    if in_lambda:
        monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    else:
        monkeypatch.delenv("LAMBDA_TASK_ROOT", raising=False)
    with pytest.raises(ConfigurationError, match=names.TABLE_ENV):
        handler = idempotent_http(lambda e, c, t: None)
        handler(rest_event({"n": 1}), DrillContext())


@pytest.mark.parametrize("horizon", ["3600", "soon"])
def test_bad_horizon_fails_the_cold_start_in_lambda(monkeypatch, horizon):
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.setenv(names.HORIZON_ENV, horizon)
    with pytest.raises(ConfigurationError, match="RETRY_HORIZON"):
        idempotent_http(lambda e, c, t: None)


def test_bad_mode_fails_at_decoration_time():
    with pytest.raises(ConfigurationError, match="claim_first"):
        idempotent_http(lambda e, c, t: None, mode="optimistic")


def test_horizon_sets_the_ttl_attribute(ddb, store, clock):
    Engine(store, clock=clock).execute(intent(retention=Retention(horizon_seconds=3 * 86400)), lambda t: Completion(1))
    assert int(record(ddb)["exp"]["N"]) == int(clock()) + 3 * 86400


def test_raw_keys_are_never_logged(ddb, store, capsys, caplog):
    import logging

    secret_key = "customer-4711-secret-intent"
    handler = idempotent_http(lambda e, c, t: {"statusCode": 201, "body": "{}"}, engine=Engine(store))
    with caplog.at_level(logging.DEBUG, logger="retrysafe"):
        handler(rest_event({"a": 1}, key=secret_key), DrillContext())
        handler(rest_event({"a": 1}, key=secret_key), DrillContext())
        handler(rest_event({"a": 2}, key=secret_key), DrillContext())
    output = capsys.readouterr()
    assert metrics.KEY_MISMATCH in output.out + output.err + caplog.text
    assert secret_key not in output.out + output.err + caplog.text
    assert secret_key not in json.dumps(ddb.scan(TableName=TABLE)["Items"], default=str)


def test_business_item_over_400kb_is_refused_whole(ddb, store):
    def work(txn: Transaction) -> Completion:
        txn.put({"pk": "order#big", "blob": "x" * (401 * 1024)}, table=ORDERS)
        return Completion("ok")

    with pytest.raises(TransactionTooLargeError, match="too large"):
        Engine(store).execute(intent(mode=Mode.ATOMIC), work)
    assert ddb.scan(TableName=ORDERS)["Items"] == [] and ddb.scan(TableName=TABLE)["Items"] == []


def test_table_verification_at_cold_start_is_opt_in(aws, monkeypatch):
    import boto3
    from retrysafe import _store as store_module

    monkeypatch.setattr(store_module, "_SHARED", {})
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")  # Lambda's cold start: the store is made at decoration
    monkeypatch.setenv(names.TABLE_ENV, "missing-table")
    idempotent_http(lambda e, c, t: None)  # off by default: no DynamoDB call at decoration
    monkeypatch.setattr(store_module, "_SHARED", {})
    monkeypatch.setenv(names.VERIFY_ENV, "true")
    with pytest.raises(ConfigurationError, match="missing-table"):
        idempotent_http(lambda e, c, t: None)
    client = boto3.client("dynamodb", region_name="eu-west-1")
    client.create_table(TableName="wrong-keys", AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
    monkeypatch.setenv(names.TABLE_ENV, "wrong-keys")
    with pytest.raises(ConfigurationError, match="'pk'"):
        idempotent_http(lambda e, c, t: None)
    from tests.helpers import create_idempotency_table

    create_idempotency_table(client, "good-table")
    monkeypatch.setenv(names.TABLE_ENV, "good-table")
    assert idempotent_http(lambda e, c, t: None).idempotency.engine.store.table_name == "good-table"
