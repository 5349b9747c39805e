"""The order saga's failure drills: crashes before reporting, crashes between steps, compensations run twice."""

from __future__ import annotations

from typing import Any, cast

import pytest
from retrysafe import names
from retrysafe._keys import Scope
from retrysafe._record import Record
from retrysafe.errors import FencingError, TaskInProgress
from retrysafe.testing._events import DrillContext

from examples.saga.handlers import tasks
from tests.examples.conftest import Saga
from tests.helpers import EXECUTION, STATE_MACHINE, Frozen, payload

ORDER = {"orderId": "o-1", "sku": "sku-1", "quantity": 3, "amount": 4200}


def run(handler: Any, state: str, task_input: Any, **options: Any) -> Any:
    """One Lambda invocation of ``handler`` as Step Functions makes it."""
    return handler(payload(state, task_input, **options), DrillContext(remaining_ms=10_000))


def pending(store: Any, state: str) -> Record:
    """The pending claim of ``state`` in this execution."""
    record = store.get(Scope(STATE_MACHINE, state, EXECUTION, adapter=names.TASK_ADAPTER,
                           subscriber=names.LOCAL_SUBSCRIBER).record_id)
    assert record is not None and record.state == "pending" and record.lease_until_ms is not None
    return cast(Record, record)


def run_saga(order: dict[str, Any], execution: str = EXECUTION) -> dict[str, Any]:
    """The state machine, as the constructs define it: each step's ResultPath, and the Catch routes."""
    state: dict[str, Any] = dict(order)
    state["reservation"] = run(tasks.reserve_inventory, "ReserveInventory", state, execution=execution)
    try:
        state["payment"] = run(tasks.charge_payment, "ChargePayment", state, execution=execution)
    except tasks.PaymentDeclined:
        state["release"] = run(tasks.release_inventory, "ReleaseInventory", state, execution=execution)
        return state
    state["confirmation"] = run(tasks.confirm_order, "ConfirmOrder", state, execution=execution)
    return state


def test_happy_path_reserves_charges_once_and_confirms(saga: Saga) -> None:
    state = run_saga(ORDER)

    assert state["confirmation"]["status"] == "confirmed"
    assert saga.stock() == 7
    assert [c["chargeId"] for c in saga.provider.effects("capture")] == [state["payment"]["chargeId"]]
    assert saga.item("payment#o-1")["status"]["S"] == "captured"
    assert saga.item("order#o-1")["status"]["S"] == "confirmed"


def test_declined_payment_releases_the_inventory(saga: Saga) -> None:
    state = run_saga({**ORDER, "amount": 500_000})

    assert state["release"] == {"released": True, "quantity": 3}
    assert saga.stock() == 10
    assert saga.provider.effects("capture") == []


def test_reply_lost_after_completion_retry_replays_without_calling_the_provider(saga: Saga) -> None:
    state = {**ORDER, "reservation": run(tasks.reserve_inventory, "ReserveInventory", ORDER)}
    first = run(tasks.charge_payment, "ChargePayment", state)  # committed, but the reply never reached Step Functions
    calls = dict(saga.provider.calls)

    retried = run(tasks.charge_payment, "ChargePayment", state, retry=1)

    assert retried == first
    assert saga.provider.calls == calls
    assert len(saga.provider.effects("capture")) == 1


def test_crash_after_the_charge_before_reporting_retry_does_not_charge_again(saga: Saga, store: Any,
                                                                            clock: Any) -> None:
    state = {**ORDER, "reservation": run(tasks.reserve_inventory, "ReserveInventory", ORDER)}
    crashed = Frozen()
    saga.provider.freeze = ("after", "capture", crashed)  # the charge is made, then the Lambda dies
    crashed.run(lambda: run(tasks.charge_payment, "ChargePayment", state))

    with pytest.raises(TaskInProgress):  # Step Functions retries while the crashed claim's lease runs
        run(tasks.charge_payment, "ChargePayment", state, retry=1)
    claim = pending(store, "ChargePayment")
    assert claim.lease_remaining(clock.now) == pytest.approx(10 + 2, abs=1)  # the Lambda's remaining time + margin
    clock.advance(claim.lease_remaining(clock.now) + 1)
    result = run(tasks.charge_payment, "ChargePayment", state, retry=2)

    charges = saga.provider.effects("capture")
    assert [c["chargeId"] for c in charges] == [result["chargeId"]]
    assert saga.provider.calls == {"authorize": 1, "capture": 2}  # the takeover asked again, with the same key
    assert isinstance(crashed.resume(), FencingError)  # the zombie can no longer checkpoint or complete
    assert saga.item("payment#o-1")["chargeId"]["S"] == result["chargeId"]
    assert run(tasks.charge_payment, "ChargePayment", state, retry=3) == result


def test_crash_between_steps_resumes_after_the_first(saga: Saga, store: Any, clock: Any) -> None:
    state = {**ORDER, "reservation": run(tasks.reserve_inventory, "ReserveInventory", ORDER)}
    crashed = Frozen()
    saga.provider.freeze = ("before", "capture", crashed)  # authorized and checkpointed, then the Lambda dies
    crashed.run(lambda: run(tasks.charge_payment, "ChargePayment", state))
    claim = pending(store, "ChargePayment")
    assert list(claim.checkpoints) == ["authorize"]
    assert "Item" not in saga.ddb.get_item(TableName=tasks.ORDERS_TABLE, Key={"pk": {"S": "payment#o-1"}})
    # (the payment item is buffered after "authorize": it commits with the "capture" checkpoint)

    clock.advance(claim.lease_remaining(clock.now) + 1)
    result = run(tasks.charge_payment, "ChargePayment", state, retry=1)

    assert saga.provider.calls == {"authorize": 1, "capture": 1}
    assert len(saga.provider.effects("authorize")) == 1
    assert [c["chargeId"] for c in saga.provider.effects("capture")] == [result["chargeId"]]
    assert isinstance(crashed.resume(), FencingError)
    assert len(saga.provider.effects("capture")) == 1


def test_refund_run_twice_refunds_once(saga: Saga) -> None:
    state = run_saga(ORDER)

    first = run(tasks.refund_payment, "RefundPayment", state)
    retried = run(tasks.refund_payment, "RefundPayment", state, retry=1)
    # The same compensation reached through another state, and from an operator's new execution.
    other_state = run(tasks.refund_payment, "RefundAfterTimeout", state)
    other_execution = run(tasks.refund_payment, "RefundPayment", state, execution=EXECUTION + "-replay")

    assert first == retried == other_state == other_execution
    assert len(saga.provider.effects("refund")) == 1
    assert saga.item("payment#o-1")["status"]["S"] == "refunded"


def test_release_run_twice_restores_stock_once(saga: Saga) -> None:
    state = run_saga(ORDER)

    assert run(tasks.release_inventory, "ReleaseInventory", state) == {"released": True, "quantity": 3}
    assert run(tasks.release_inventory, "ReleaseInventory", state, retry=1) == {"released": True, "quantity": 3}
    assert run(tasks.release_inventory, "ReleaseInventory", state, execution=EXECUTION + "-replay") == {
        "released": False}
    assert saga.stock() == 10
