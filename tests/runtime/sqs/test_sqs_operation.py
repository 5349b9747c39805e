"""The consumer's operation: the constructs name each deployed consumer, so copies do not share records."""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe import names
from retrysafe._transaction import Transaction
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, sqs_record

from tests.helpers import ORDERS


def deployed(effect: str) -> Any:
    """The same handler code (and so the same ``__name__``) deployed behind a second queue: its own effect."""

    def handler(message: Message, txn: Transaction) -> None:
        txn.update({"pk": effect}, "ADD n :one", values={":one": 1}, table=ORDERS)

    return handler


def _applied(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def _deliver(consumer: Any) -> None:
    # One outbox event fanned out to both queues (an EventBridge rule per queue): the same key and body.
    record = sqs_record({"event_id": "evt-1", "event_type": "OrderPlaced"})
    assert consumer({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}


def test_two_deployed_consumers_with_one_subscriber_each_run(store: Any, ddb: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.OPERATION_ENV, "Billing")
    billing = idempotent_sqs(deployed("billing"), subscriber="billing", store=store)
    monkeypatch.setenv(names.OPERATION_ENV, "BillingEu")
    copied = idempotent_sqs(deployed("billing-eu"), subscriber="billing", store=store)
    _deliver(billing)
    _deliver(copied)
    assert (_applied(ddb, "billing"), _applied(ddb, "billing-eu")) == (1, 1)


def test_without_the_variable_the_handler_name_is_the_operation_and_copies_collide(
        store: Any, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the constructs' variable prevents: outside them, the second copy acknowledges without running."""
    monkeypatch.delenv(names.OPERATION_ENV, raising=False)
    first = idempotent_sqs(deployed("first"), subscriber="billing", store=store)
    second = idempotent_sqs(deployed("second"), subscriber="billing", store=store)
    _deliver(first)
    _deliver(second)
    assert (_applied(ddb, "first"), _applied(ddb, "second")) == (1, 0)


def test_an_explicit_operation_wins_over_the_variable(store: Any, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.OPERATION_ENV, "FromTheConstruct")
    pinned = idempotent_sqs(deployed("pinned"), subscriber="billing", operation="invoices", store=store)
    other = idempotent_sqs(deployed("other"), subscriber="billing", operation="invoices", store=store)
    _deliver(pinned)
    _deliver(other)
    assert (_applied(ddb, "pinned"), _applied(ddb, "other")) == (1, 0)
