"""How retrysafe behaves inside a user's own test suite: plain ``mock_aws`` tests, no retrysafe fixture.

The most common way Lambda code is tested creates a fresh moto table per test under the same name,
in one process. The warm-container record cache must not outlive such a table (it is on by default
only in Lambda's execution environment), and ``RETRYSAFE_IDEMPOTENCY_DISABLED`` switches
deduplication off for tests that do not test idempotency, never inside Lambda.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from retrysafe import RecordCache, Transaction, idempotent_http, idempotent_task, names
from retrysafe import _store as store_module
from retrysafe._config import LAMBDA_ENVIRONMENT_MARKERS
from retrysafe._store import DynamoStore
from retrysafe.errors import IdempotencyDisabledError
from retrysafe.testing._events import DrillContext, http_event, task_payload
from retrysafe.testing._plugin import create_table

from tests.helpers import ORDERS, TABLE, CallCounter, create_business_table


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test process outside Lambda whose container state (the shared stores) starts empty."""
    monkeypatch.setattr(store_module, "_SHARED", {})
    for name in LAMBDA_ENVIRONMENT_MARKERS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(names.IDEMPOTENCY_DISABLED_ENV, raising=False)
    yield


def orders_handler(runs: list[int]) -> Any:
    """What a user's module defines: an ``@idempotent_http`` handler with no store (the deployed default)."""

    @idempotent_http(operation="CreateOrder")
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        runs.append(1)
        txn.put({"pk": f"order#{len(runs)}"}, table=ORDERS)
        return {"statusCode": 201, "body": json.dumps({"order": len(runs)})}

    return create


def user_test(handler: Any) -> dict[str, Any]:
    """One plain user test: ``mock_aws``, a fresh table, one request with the key ``order-1``."""
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(client, TABLE)
        create_business_table(client, ORDERS)
        response: dict[str, Any] = handler(http_event({"amount": 5}, key="order-1"), DrillContext())
        assert client.scan(TableName=TABLE)["Count"] >= 1  # this test's own record
        return response


def test_two_plain_mock_aws_tests_sharing_a_key_do_not_share_records(fresh_process: None) -> None:
    """Before the fix the second test answered 201 with Idempotent-Replayed and the FIRST test's body
    from the process-wide cache, though its own table held no record."""
    runs: list[int] = []
    handler = orders_handler(runs)
    first, second = user_test(handler), user_test(handler)
    assert (first["statusCode"], second["statusCode"]) == (201, 201)
    assert names.REPLAYED_HEADER not in second.get("headers", {})
    assert json.loads(second["body"]) == {"order": 2} and len(runs) == 2
    assert DynamoStore.from_env().cache is None


def test_in_lambdas_execution_environment_the_store_from_the_environment_caches(
        fresh_process: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    assert isinstance(DynamoStore.from_env().cache, RecordCache)


def test_the_disabled_switch_runs_every_request_as_a_new_intent_and_still_commits_its_writes(
        fresh_process: None, monkeypatch: pytest.MonkeyPatch, ddb: Any) -> None:
    monkeypatch.setenv(names.IDEMPOTENCY_DISABLED_ENV, "true")
    runs: list[int] = []
    handler = orders_handler(runs)
    calls = CallCounter(DynamoStore.from_env().client)
    answers = [handler(http_event({"amount": 5}, key="order-1"), DrillContext()) for _ in range(2)]
    assert [a["statusCode"] for a in answers] == [201, 201] and len(runs) == 2
    assert all(names.REPLAYED_HEADER not in a.get("headers", {}) for a in answers)
    assert calls.calls == {"TransactWriteItems": 2}  # the handler's writes, no record read or written
    assert ddb.scan(TableName=ORDERS)["Count"] == 2
    assert not [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]

    @idempotent_task(tenant="shop")
    def charge(state: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": "before-step"}, table=ORDERS)
        charged = txn.step("charge", lambda: {"charge": "ch_1"})
        return {"charged": charged["charge"]}

    payload = task_payload({"amount": 5}, execution="exec-1")
    assert charge(payload, DrillContext()) == charge(payload, DrillContext()) == {"charged": "ch_1"}
    assert ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "before-step"}}).get("Item") is not None


@pytest.mark.parametrize("marker", LAMBDA_ENVIRONMENT_MARKERS)
def test_the_disabled_switch_fails_the_cold_start_inside_lambda(fresh_process: None, monkeypatch: pytest.MonkeyPatch,
                                                               marker: str) -> None:
    monkeypatch.setenv(names.IDEMPOTENCY_DISABLED_ENV, "true")
    monkeypatch.setenv(marker, "127.0.0.1:9001" if marker == "AWS_LAMBDA_RUNTIME_API" else "/var/task")
    with pytest.raises(IdempotencyDisabledError, match=names.IDEMPOTENCY_DISABLED_ENV):
        orders_handler([])  # decorating is the cold start: the function never answers a request
