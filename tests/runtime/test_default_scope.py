"""The default scope is the deployed function, on every adapter.

Powertools puts the Lambda function's name into every key; every Powertools handler is called
``lambda_handler``. Two functions deployed from the same code (SAM, Serverless Framework, Terraform:
no ``RETRYSAFE_SUBSCRIBER``) on one table must each run, on every adapter, unless the user names one
subscriber for both on purpose; ``RETRYSAFE_SUBSCRIBER`` (the constructs' stable name) wins over the
function's physical name, so a replaced function with a new generated name finds its records again;
and the configuration is read at the first call, not at import.

Each handler here comes from one factory, so both copies share ``module.qualname`` as two deployments
of one file do; each counts its own effect in the orders table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import (
    Transaction,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_function,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
    idempotent_task,
    names,
)
from retrysafe.testing._events import (
    DrillContext,
    dynamodb_stream_record,
    http_event,
    kinesis_record,
    sqs_record,
    task_payload,
)

from tests.helpers import ORDERS

EVENT = {"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": "OrderPlaced",
         "source": "orders", "account": "111122223333", "time": "2026-12-01T12:00:00Z", "region": "eu-west-1",
         "resources": [], "detail": {"order_id": "o-1"}}
SQS = {"Records": [sqs_record({"order_id": "o-1"}, message_id="m-1")]}
KINESIS = {"Records": [kinesis_record({"order_id": "o-1"}, sequence_number="1")]}
STREAM = {"Records": [dynamodb_stream_record("INSERT", {"pk": {"S": "o-1"}}, sequence_number="1",
                                             new_image={"pk": {"S": "o-1"}})]}


def _count(txn: Transaction, effect: str) -> None:
    txn.update({"pk": effect}, "ADD n :one", values={":one": 1}, table=ORDERS)


def _applied(ddb: Any, effect: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": effect}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


# One builder per adapter: (effect, options) -> a callable that delivers the same intent once.
def _event(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent(store=store, **options)
    def lambda_handler(event: Any, context: Any, txn: Transaction) -> None:
        _count(txn, effect)

    return lambda: lambda_handler(EVENT, DrillContext())


def _function(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent_function(data_keyword_argument="order", key="order_id", store=store, **options)
    def apply(order: dict[str, str], txn: Transaction) -> None:
        _count(txn, effect)

    return lambda: apply(order={"order_id": "o-1"})


def _sqs(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent_sqs(store=store, **options)
    def lambda_handler(message: Any, txn: Transaction) -> None:
        _count(txn, effect)

    return lambda: lambda_handler(SQS, DrillContext())


def _kinesis(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent_kinesis(store=store, **options)
    def lambda_handler(message: Any, txn: Transaction) -> None:
        _count(txn, effect)

    return lambda: lambda_handler(KINESIS, DrillContext())


def _dynamodb_stream(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent_dynamodb_stream(store=store, **options)
    def lambda_handler(change: Any, txn: Transaction) -> None:
        _count(txn, effect)

    return lambda: lambda_handler(STREAM, DrillContext())


def _http(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent_http(**{"operation": "CreateOrder", "store": store, **options})
    def lambda_handler(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        _count(txn, effect)
        return {"statusCode": 201, "body": json.dumps({"effect": effect})}

    return lambda: lambda_handler(http_event({"order": "o-1"}, key="k-1"), DrillContext())


def _task(effect: str, store: Any, **options: Any) -> Callable[[], Any]:
    @idempotent_task(store=store, **options)
    def lambda_handler(task_input: Any, context: Any, txn: Transaction) -> dict[str, str]:
        _count(txn, effect)
        return {"effect": effect}

    return lambda: lambda_handler(task_payload({"order": "o-1"}, execution="exec-1"), DrillContext())


ADAPTERS = {"event": _event, "function": _function, "sqs": _sqs, "kinesis": _kinesis,
            "dynamodb-stream": _dynamodb_stream, "http": _http, "task": _task}


@pytest.fixture(autouse=True)
def _no_deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.SUBSCRIBER_ENV, raising=False)
    monkeypatch.delenv(names.LAMBDA_FUNCTION_NAME_ENV, raising=False)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_two_deployed_functions_of_one_handler_each_run(adapter: str, store: Any, ddb: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a Powertools user gets from ``function_name`` in the key: two functions, two sets of records."""
    orders, orders_eu = ADAPTERS[adapter]("orders", store), ADAPTERS[adapter]("orders-eu", store)
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "orders-fn")
    orders()
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "orders-eu-fn")
    orders_eu()
    assert (_applied(ddb, "orders"), _applied(ddb, "orders-eu")) == (1, 1)
    orders_eu()  # and each still dedupes its own retries
    assert _applied(ddb, "orders-eu") == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_constructs_name_survives_a_new_physical_name(adapter: str, store: Any, ddb: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A function replaced with a new generated name keeps its records: ``RETRYSAFE_SUBSCRIBER`` wins."""
    before, after = ADAPTERS[adapter]("before", store), ADAPTERS[adapter]("after", store)
    monkeypatch.setenv(names.SUBSCRIBER_ENV, "Orders/Consumer")
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "Stack-OrdersConsumerA1B2-xyz")
    before()
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "Stack-OrdersConsumerC3D4-abc")
    after()  # the retry straddling the replacement: answered from the record
    assert (_applied(ddb, "before"), _applied(ddb, "after")) == (1, 0)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_one_named_subscriber_shares_records_on_purpose(adapter: str, store: Any, ddb: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two functions taking turns on one source (a migration) name one subscriber and operation."""
    options = {"subscriber": "billing", "operation": "Invoice"}
    old, new = ADAPTERS[adapter]("old", store, **options), ADAPTERS[adapter]("new", store, **options)
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "billing-v1")
    old()
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "billing-v2")
    new()
    assert (_applied(ddb, "old"), _applied(ddb, "new")) == (1, 0)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_subscriber_is_read_at_the_first_call_not_at_decoration(adapter: str, store: Any, ddb: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "decorated-under-this-name")
    first, second = ADAPTERS[adapter]("first", store), ADAPTERS[adapter]("second", store)
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "called-under-this-name")
    first()
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "another-function")
    second()
    assert (_applied(ddb, "first"), _applied(ddb, "second")) == (1, 1)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_blank_subscriber_is_refused_at_decoration(adapter: str, store: Any) -> None:
    from retrysafe.errors import ConfigurationError

    for blank in ("", " billing"):
        with pytest.raises(ConfigurationError, match="subscriber= must be a non-empty name"):
            ADAPTERS[adapter]("never", store, subscriber=blank)
