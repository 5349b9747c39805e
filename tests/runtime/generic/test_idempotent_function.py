"""``@idempotent_function``: a plain function called inside any handler, claim-first or atomic with ``txn``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel
from retrysafe import Engine, Transaction, idempotent_function
from retrysafe.errors import (
    ConfigurationError,
    KeyNotFoundError,
    KeyReuseMismatchError,
    UnstorableResultError,
)
from retrysafe.names import RECORD_PREFIX

from tests.helpers import ORDERS, TABLE
from tests.runtime.generic import ledger_payments, ledger_refunds


@dataclass
class Order:
    order_id: str
    total: Decimal


@dataclass
class Receipt:
    charge: str
    amount: Decimal
    at: datetime


class Invoice(BaseModel):
    number: str
    amount: Decimal


class Provider:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def charge(self, key: str, amount: Decimal) -> Receipt:
        self.calls.append(key)
        return Receipt(f"ch_{len(self.calls)}", amount, datetime(2026, 12, 1, tzinfo=UTC))


@pytest.fixture
def engine(store: Any) -> Engine:
    return Engine(store, cache=None)


def test_a_claim_first_function_runs_once_and_replays_its_dataclass(ddb: Any, engine: Engine, calls: Any) -> None:
    provider = Provider()

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id", engine=engine)
    def charge(order: Order) -> Receipt:
        return provider.charge(order.order_id, order.total)

    calls.reset()
    first = charge(order=Order("o-1", Decimal("12.50")))
    assert calls.calls == {"PutItem": 2}  # claim-first: the claim, then its owner-conditioned completion
    calls.reset()
    again = charge(Order("o-1", Decimal("12.50")))  # positional works too
    assert calls.calls == {"PutItem": 1}
    assert again == first and type(again) is Receipt and type(again.amount) is Decimal
    assert len(provider.calls) == 1


def test_a_function_taking_txn_is_atomic_in_one_round_trip(ddb: Any, engine: Engine, calls: Any) -> None:
    @idempotent_function(data_keyword_argument="order", subscriber="billing", key="order_id", engine=engine)
    def invoice(order: dict[str, Any], txn: Transaction) -> Invoice:
        txn.update({"pk": f"invoice#{order['order_id']}"}, "ADD n :one", values={":one": 1}, table=ORDERS)
        return Invoice(number=f"inv-{order['order_id']}", amount=Decimal(order["total"]))

    calls.reset()
    first = invoice(order={"order_id": "o-1", "total": "12.50"})
    assert calls.calls == {"TransactWriteItems": 1}
    calls.reset()
    again = invoice(order={"order_id": "o-1", "total": "12.50"})
    assert calls.calls == {"TransactWriteItems": 1}
    assert again == first and isinstance(again, Invoice)
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "invoice#o-1"}})["Item"]
    assert item["n"]["N"] == "1"
    with pytest.raises(TypeError, match="do not pass txn="):
        invoice(order={"order_id": "o-2", "total": "1"}, txn=None)


def test_the_default_key_is_the_whole_argument(ddb: Any, engine: Engine) -> None:
    provider = Provider()

    @idempotent_function(data_keyword_argument="order", subscriber="payments", engine=engine)
    def charge(order: Order) -> Receipt:
        return provider.charge(order.order_id, order.total)

    charge(order=Order("o-1", Decimal(1)))
    charge(order=Order("o-1", Decimal(1)))
    charge(order=Order("o-1", Decimal(2)))  # another argument: another intent
    assert len(provider.calls) == 2


def test_the_default_key_of_an_sqs_record_leaves_out_what_a_redelivery_changes(ddb: Any, engine: Engine) -> None:
    """A record from a batch loop: a redelivery (new receipt handle, receive count up) is the same intent; a record
    with another body, or another message id, is another one. Hashed whole, each redelivery would run again."""
    from retrysafe.testing._events import sqs_record

    runs: list[str] = []

    @idempotent_function(data_keyword_argument="record", subscriber="payments", engine=engine)
    def apply(record: dict[str, Any]) -> int:
        runs.append(record["body"])
        return len(runs)

    record = sqs_record({"order": 1}, message_id="m-1")
    redelivered = {**record, "receiptHandle": "another-handle",
                   "attributes": {**record["attributes"], "ApproximateReceiveCount": "5"}}
    assert apply(record=record) == 1 and apply(record=redelivered) == 1
    assert apply(record={**record, "body": '{"order": 2}'}) == 2
    assert apply(record=sqs_record({"order": 1}, message_id="m-2")) == 3
    assert runs == ['{"order": 1}', '{"order": 2}', '{"order": 1}']


def test_same_key_other_argument_fails_and_a_change_outside_the_fingerprint_replays(ddb: Any, engine: Engine) -> None:
    provider = Provider()

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id", engine=engine)
    def charge(order: Order) -> Receipt:
        return provider.charge(order.order_id, order.total)

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id",
                         fingerprint="total", operation="charge_total", engine=engine)
    def charge_total(order: dict[str, Any]) -> Receipt:
        return provider.charge(order["order_id"], Decimal(order["total"]))

    charge(order=Order("o-1", Decimal(1)))
    with pytest.raises(KeyReuseMismatchError):
        charge(order=Order("o-1", Decimal(2)))
    charge_total(order={"order_id": "o-2", "total": "5", "sent_at": "2026-12-01T19:00:00Z"})
    resent = charge_total(order={"order_id": "o-2", "total": "5", "sent_at": "2026-12-01T19:05:00Z"})
    assert resent.charge == "ch_2"  # sent_at is outside the fingerprint: a replay
    assert len(provider.calls) == 2


def test_a_missing_argument_or_key_is_a_named_error_and_nothing_runs(ddb: Any, engine: Engine) -> None:
    provider = Provider()

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id", engine=engine)
    def charge(order: dict[str, Any] | None = None) -> Any:
        provider.charge("x", Decimal(1))

    with pytest.raises(TypeError, match="needs its 'order' argument"):
        charge()
    with pytest.raises(KeyNotFoundError):
        charge(order={"total": 1})
    assert provider.calls == []
    with pytest.raises(ConfigurationError, match="has no parameter 'data'"):
        idempotent_function(data_keyword_argument="data", subscriber="payments", engine=engine)(charge)


def test_an_unstorable_result_parks_the_claim_and_the_provider_is_called_once(ddb: Any, engine: Engine) -> None:
    provider = Provider()

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id", engine=engine)
    def charge(order: dict[str, Any]) -> Any:
        provider.charge(order["order_id"], Decimal(1))
        return provider  # not a value that can be stored

    for _ in range(3):
        with pytest.raises(UnstorableResultError):
            charge(order={"order_id": "o-1"})
    assert len(provider.calls) == 1
    records = [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(RECORD_PREFIX)]
    assert [r["st"]["S"] for r in records] == ["parked"]


def test_a_serializer_that_refuses_parks_too(ddb: Any, engine: Engine) -> None:
    class Refusing:
        def dump(self, result: Any, /) -> Any:
            raise ValueError("no")

        def load(self, stored: Any, /) -> Any:
            return stored

    runs: list[int] = []

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id",
                         serializer=Refusing(), engine=engine)
    def charge(order: dict[str, Any]) -> int:
        runs.append(1)
        return 1

    with pytest.raises(UnstorableResultError, match="the serializer refused the result: no"):
        charge(order={"order_id": "o-1"})
    with pytest.raises(UnstorableResultError, match="an earlier run of this intent"):
        charge(order={"order_id": "o-1"})
    assert runs == [1]


def test_a_dataclass_result_without_its_annotation_is_refused_rather_than_replayed_as_a_dict(
        ddb: Any, engine: Engine) -> None:
    @idempotent_function(data_keyword_argument="order", subscriber="billing", key="order_id", engine=engine)
    def invoice(order: dict[str, Any], txn: Transaction) -> Any:
        return Invoice(number="inv-1", amount=Decimal(1))

    with pytest.raises(UnstorableResultError, match="return annotation does not name that class"):
        invoice(order={"order_id": "o-1"})
    assert [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(RECORD_PREFIX)] == []



def test_two_functions_with_one_name_in_two_modules_keep_their_own_records(ddb: Any, engine: Engine,
                                                                           calls: Any) -> None:
    """``payments.apply`` and ``refunds.apply`` under one namespace: each runs and answers its own result."""
    payments = idempotent_function(data_keyword_argument="order", subscriber="ledger", key="order_id",
                                   engine=engine)(ledger_payments.apply)
    refunds = idempotent_function(data_keyword_argument="order", subscriber="ledger", key="order_id",
                                  engine=engine)(ledger_refunds.apply)
    assert payments.__qualname__ == refunds.__qualname__ == "apply"
    assert payments(order={"order_id": "o-1"}) == "payment#o-1"
    assert refunds(order={"order_id": "o-1"}) == "refund#o-1"
    for pk in ("payment#o-1", "refund#o-1"):
        item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": pk}}, ConsistentRead=True)["Item"]
        assert item["n"] == {"N": "1"}
    # Each replays its own record.
    calls.reset()
    assert payments(order={"order_id": "o-1"}) == "payment#o-1"
    assert refunds(order={"order_id": "o-1"}) == "refund#o-1"
