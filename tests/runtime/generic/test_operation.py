"""The operation of event, topic and stream consumers: the constructs name each deployed function
(``RETRYSAFE_OPERATION``), so two copies of one handler with one namespace do not share records."""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe import idempotent, idempotent_kinesis, names
from retrysafe._transaction import Transaction
from retrysafe.streams import KinesisMessage
from retrysafe.testing._events import DrillContext, kinesis_record

from tests.helpers import ORDERS

#: An EventBridge event as Lambda receives it from a rule (AWS's documented shape).
EVENT = {"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": "OrderPlaced",
         "source": "orders", "account": "111122223333", "time": "2026-12-01T12:00:00Z", "region": "eu-west-1",
         "resources": [], "detail": {"order_id": "o-1"}}


def _applied(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def _rule_target(effect: str) -> Any:
    """The same handler code (and so the same ``__name__``) behind a second rule: its own effect."""

    def handler(event: Any, context: Any, txn: Transaction) -> None:
        txn.update({"pk": effect}, "ADD n :one", values={":one": 1}, table=ORDERS)

    return handler


def _stream_consumer(effect: str) -> Any:
    def handler(message: KinesisMessage, txn: Transaction) -> None:
        txn.update({"pk": effect}, "ADD n :one", values={":one": 1}, table=ORDERS)

    return handler


def test_two_deployed_rule_targets_of_one_handler_each_run(store: Any, ddb: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.OPERATION_ENV, "Shipping")
    shipping = idempotent(namespace="orders", store=store)(_rule_target("shipping"))
    monkeypatch.setenv(names.OPERATION_ENV, "ShippingEu")
    copied = idempotent(namespace="orders", store=store)(_rule_target("shipping-eu"))
    shipping(EVENT, DrillContext())
    copied(EVENT, DrillContext())
    assert (_applied(ddb, "shipping"), _applied(ddb, "shipping-eu")) == (1, 1)


def test_without_the_variable_copies_of_one_rule_target_collide(store: Any, ddb: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """What the constructs' variable prevents: the second copy replays the first one's answer without running."""
    monkeypatch.delenv(names.OPERATION_ENV, raising=False)
    first = idempotent(namespace="orders", store=store)(_rule_target("first"))
    second = idempotent(namespace="orders", store=store)(_rule_target("second"))
    first(EVENT, DrillContext())
    second(EVENT, DrillContext())
    assert (_applied(ddb, "first"), _applied(ddb, "second")) == (1, 0)


def test_two_deployed_stream_consumers_of_one_handler_each_run(store: Any, ddb: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    batch = {"Records": [kinesis_record({"order_id": "o-1"}, sequence_number="1")]}
    monkeypatch.setenv(names.OPERATION_ENV, "Ledger")
    ledger = idempotent_kinesis(subscriber="ledger", store=store)(_stream_consumer("ledger"))
    monkeypatch.setenv(names.OPERATION_ENV, "LedgerEu")
    copied = idempotent_kinesis(subscriber="ledger", store=store)(_stream_consumer("ledger-eu"))
    assert ledger(batch, DrillContext()) == {"batchItemFailures": []}
    assert copied(batch, DrillContext()) == {"batchItemFailures": []}
    assert (_applied(ddb, "ledger"), _applied(ddb, "ledger-eu")) == (1, 1)


def test_an_explicit_operation_wins_over_the_variable(store: Any, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.OPERATION_ENV, "FromTheConstruct")
    pinned = idempotent(namespace="orders", operation="Ship", store=store)(_rule_target("pinned"))
    other = idempotent(namespace="orders", operation="Ship", store=store)(_rule_target("other"))
    pinned(EVENT, DrillContext())
    other(EVENT, DrillContext())
    assert (_applied(ddb, "pinned"), _applied(ddb, "other")) == (1, 0)
