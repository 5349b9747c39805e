"""The snippets of docs/events-and-functions.md, run against moto as the page describes them."""

from __future__ import annotations

import contextvars
import copy
import time
from decimal import Decimal
from typing import Any

import pytest
from retrysafe import DynamoStore
from retrysafe.errors import KeyNotFoundError, KeyReuseMismatchError
from retrysafe.names import LEASE_MARGIN_SECONDS
from retrysafe.testing import engine_of
from retrysafe.testing._events import DrillContext, sqs_record

from tests.docs.test_snippets import fresh, items
from tests.helpers import CallCounter, create_business_table
from tests.runtime.generic.events import EVENTBRIDGE, S3, event


@pytest.fixture
def tables(lambda_container: None, retrysafe_table: DynamoStore) -> DynamoStore:
    for name in ("orders", "invoices"):
        create_business_table(retrysafe_table.client, name)
    return retrysafe_table


def shipment_event(**detail: Any) -> dict[str, Any]:
    return event(EVENTBRIDGE, detail={"order_id": "o-42", "weight_kg": 2.5, **detail})


def test_an_eventbridge_handler_runs_once_per_order_and_replays_its_dataclass(tables: DynamoStore) -> None:
    snippet = fresh("events_and_functions")
    engine_of(snippet.ship_order).cache = None
    calls = CallCounter(engine_of(snippet.ship_order).store.client)
    first = snippet.ship_order(shipment_event(), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    republished = shipment_event()
    republished.update(id="7bf73129-1428-4cd3-a780-95db273d1602", time="2017-12-22T19:00:00Z")
    calls.reset()
    replay = snippet.ship_order(republished, DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    assert replay == first == snippet.Shipment("o-42", Decimal("2.5")) and isinstance(replay, snippet.Shipment)
    assert len(items(tables, "orders")) == 1
    with pytest.raises(KeyReuseMismatchError):
        snippet.ship_order(shipment_event(weight_kg=3), DrillContext())


def test_an_s3_handler_uses_the_natural_key(tables: DynamoStore) -> None:
    snippet = fresh("events_and_functions")
    assert snippet.make_thumbnail(S3, DrillContext()) == snippet.make_thumbnail(copy.deepcopy(S3), DrillContext())
    assert [i["pk"]["S"] for i in items(tables, "orders")] == ["thumbnail#test/key"]


def test_a_direct_invoke_needs_its_key_and_fingerprints_only_the_selected_fields(tables: DynamoStore) -> None:
    snippet = fresh("events_and_functions")
    first = snippet.build_report({"report_id": "r-1", "month": "2026-11", "requested_at": "09:00"}, DrillContext())
    again = snippet.build_report({"report_id": "r-1", "month": "2026-11", "requested_at": "09:05"}, DrillContext())
    assert first == again == {"report": "r-1"}
    with pytest.raises(KeyReuseMismatchError):
        snippet.build_report({"report_id": "r-1", "month": "2026-12"}, DrillContext())
    with pytest.raises(KeyNotFoundError):
        snippet.build_report({"month": "2026-11"}, DrillContext())
    assert len(items(tables, "orders")) == 1


def test_plain_functions_inside_a_consumer_charge_and_invoice_once(tables: DynamoStore) -> None:
    snippet = fresh("events_and_functions")
    from examples.snippets.payments import payments

    before = payments.charge_count()
    record = sqs_record({"order_id": "o-7", "total": 1250})
    for _ in range(2):  # the message, delivered twice
        assert snippet.checkout({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    order = snippet.Order("o-7", 1250)
    assert snippet.charge(order=order) == snippet.Receipt(payments.charges["order-o-7"].id, Decimal("12.5"))
    assert payments.charge_count() == before + 1
    assert [i["pk"]["S"] for i in items(tables, "invoices")] == ["invoice#o-7"]


def test_a_serializer_of_your_own_stores_cents_and_replays_the_decimal(tables: DynamoStore) -> None:
    snippet = fresh("events_and_functions")
    order = snippet.Order("o-8", 399)
    assert snippet.refund(order=order) == snippet.refund(order=order) == Decimal("3.99")
    stored = [i for i in items(tables, tables.table_name) if i.get("op", {}).get("S") == "refund"]
    assert [i["r"]["S"] for i in stored] == ["399"]


def test_async_handlers_and_functions_run_once_like_their_sync_twins(tables: DynamoStore) -> None:
    import asyncio

    snippet = fresh("events_and_functions")
    from examples.snippets.payments import payments

    engine_of(snippet.ship_order_async).cache = None
    calls = CallCounter(engine_of(snippet.ship_order_async).store.client)
    first = snippet.ship_order_async(shipment_event(order_id="o-43"), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}  # atomic, as ship_order: its signature takes txn
    assert snippet.ship_order_async(shipment_event(order_id="o-43"), DrillContext()) == first
    assert first == snippet.Shipment("o-43", Decimal("2.5"))
    before = payments.charge_count()
    order = snippet.Order("o-9", 700)
    charged = [asyncio.run(snippet.checkout_async(order)) for _ in range(2)]
    assert charged[0] == charged[1] == payments.charges["order-o-9"].id
    assert payments.charge_count() == before + 1


def test_a_registered_context_gives_the_functions_claim_the_invocations_time(tables: DynamoStore,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    snippet = fresh("events_and_functions")
    claims: list[int] = []
    real_charge = snippet.payments.charge

    def charge_reading_the_claim(**arguments: Any) -> Any:  # the provider call runs while the claim holds
        claims.extend(int(i["le"]["N"]) for i in items(tables, tables.table_name)
                      if i.get("op", {}).get("S", "").endswith(".charge") and "le" in i)
        return real_charge(**arguments)

    monkeypatch.setattr(snippet.payments, "charge", charge_reading_the_claim)
    before = time.time()
    # in a copy of the context: the registration is this invocation's, not the test session's
    answer = contextvars.copy_context().run(snippet.lambda_handler, {"order_id": "o-9", "total": 100},
                                            DrillContext(remaining_ms=600_000))
    after = time.time()
    assert answer == {"charge": snippet.payments.charges["order-o-9"].id}
    (lease_until_ms,) = claims  # the remaining time plus the margin, not RETRYSAFE_LEASE_SECONDS' 60 s
    assert (before + 600 + LEASE_MARGIN_SECONDS) * 1000 - 1 <= lease_until_ms
    assert lease_until_ms <= (after + 600 + LEASE_MARGIN_SECONDS) * 1000
