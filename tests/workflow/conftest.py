"""Fixtures for Step Functions tasks: payloads as the state machine sends them, the saga's tables, frozen invocations."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from retrysafe.engine import Engine
from retrysafe.testing.events import task_payload

from examples.saga.handlers import provider as provider_module
from examples.saga.handlers import tasks
from tests.helpers import create_business_table

STATE_MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:OrderSaga"
EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:OrderSaga:order-1"


def payload(state: str, task_input: Any, *, execution: str = EXECUTION, retry: int = 0,
            **extra: Any) -> dict[str, Any]:
    """The LambdaInvoke payload built from the context object (see retrysafe.stepfunctions), for the saga's machine."""
    return {**task_payload(task_input, execution=execution, state=state, state_machine=STATE_MACHINE, retry=retry),
            **extra}


class Frozen:
    """An invocation stopped mid-flight, like a Lambda that crashed or froze: its claim is never released.

    ``run`` starts the handler in a thread and returns once it reached the
    freeze point; ``resume`` lets the zombie continue and returns what it raised.
    """

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def point(self) -> None:
        """Called at the freeze point, from inside the handler."""
        self.reached.set()
        assert self.go.wait(30), "the frozen invocation was never resumed"

    def run(self, call: Callable[[], Any]) -> None:
        """Start ``call`` and wait until it freezes."""
        def target() -> None:
            try:
                call()
            except BaseException as error:  # noqa: BLE001 - the zombie's fate is inspected by the test
                self.error = error

        self._thread = threading.Thread(target=target, daemon=True)
        self._thread.start()
        assert self.reached.wait(10), f"the invocation never reached its freeze point ({self.error!r})"

    def resume(self) -> BaseException | None:
        """Let the zombie continue; returns its exception (None when it finished)."""
        self.go.set()
        assert self._thread is not None
        self._thread.join(30)
        return self.error


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
