"""The order saga's handlers on moto: its tables, one engine and clock, a provider that can freeze an invocation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from retrysafe._engine import Engine

from examples.saga.handlers import provider as provider_module
from examples.saga.handlers import tasks
from tests.helpers import Frozen, create_business_table


class FreezingProvider(provider_module.FakePaymentProvider):
    """The fake provider, able to freeze the calling invocation just before or just after one operation."""

    def __init__(self, client: Any) -> None:
        super().__init__("provider-ledger", client=client)
        self.freeze: tuple[str, str, Frozen] | None = None

    def _once(self, operation: str, key: str, request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        freeze = self.freeze
        if freeze is not None and freeze[1] == operation:
            self.freeze = None  # only the first invocation to get here freezes
            if freeze[0] == "before":
                freeze[2].point()
        result = super()._once(operation, key, request, response)
        if freeze is not None and freeze[1] == operation and freeze[0] == "after":
            freeze[2].point()
        return result


class Saga:
    """The saga's handlers on moto, with a controllable clock and the provider's ledger."""

    def __init__(self, ddb: Any, provider: FreezingProvider) -> None:
        self.ddb = ddb
        self.provider = provider

    def stock(self, sku: str = "sku-1") -> int:
        """Units of ``sku`` available."""
        return int(self.item(f"stock#{sku}")["available"]["N"])

    def item(self, pk: str) -> dict[str, Any]:
        """A business item of the saga's table."""
        item: dict[str, Any] = self.ddb.get_item(TableName=tasks.ORDERS_TABLE, Key={"pk": {"S": pk}})["Item"]
        return item


@pytest.fixture
def saga(ddb: Any, store: Any, clock: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Saga]:
    """Tables ``saga-orders`` (10 units of sku-1) and ``provider-ledger``; every task on one engine and clock."""
    for table in (tasks.ORDERS_TABLE, "provider-ledger"):
        create_business_table(ddb, table)
    ddb.put_item(TableName=tasks.ORDERS_TABLE, Item={"pk": {"S": "stock#sku-1"}, "available": {"N": "10"}})
    engine = Engine(store, clock=clock)
    for handler in (tasks.reserve_inventory, tasks.charge_payment, tasks.confirm_order, tasks.refund_payment,
                    tasks.release_inventory):
        monkeypatch.setattr(handler.task, "engine", engine)
    fake = FreezingProvider(ddb)
    monkeypatch.setattr(tasks, "provider", fake)
    tasks.dynamodb.cache_clear()
    yield Saga(ddb, fake)
    tasks.dynamodb.cache_clear()
