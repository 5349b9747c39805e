"""``@idempotent_task``: keys from the execution and state, replays, refusals, and recovery points."""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe import Engine, Mode, Transaction, idempotent_task, names
from retrysafe._engine import Completion, Intent
from retrysafe._keys import Scope
from retrysafe.errors import ConfigurationError, TaskInProgress, TaskKeyMismatch, TaskPayloadError
from retrysafe.testing._events import DrillContext

from tests.helpers import EXECUTION, ORDERS, STATE_MACHINE, TABLE, payload


class Task:
    """A task handler that counts its runs and writes one item per run."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, task_input: Any, context: Any, txn: Transaction) -> Any:
        self.runs += 1
        txn.put({"pk": f"run#{txn.derive_key('item')[:8]}#{self.runs}"}, table=ORDERS)
        return {"echo": task_input, "run": self.runs}


@pytest.fixture
def engine(store: Any, clock: Any) -> Engine:
    return Engine(store, clock=clock)


def items(ddb: Any, table: str = ORDERS) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ddb.scan(TableName=table)["Items"]
    return found


def test_a_retry_of_the_state_replays_the_stored_result(ddb: Any, engine: Engine) -> None:
    body = Task()
    handler = idempotent_task(body, engine=engine)

    first = handler(payload("Charge", {"amount": 1}), DrillContext())
    retried = handler(payload("Charge", {"amount": 1}, retry=2), DrillContext())  # RetryCount is not in the key

    assert first == retried == {"echo": {"amount": 1}, "run": 1}
    assert body.runs == 1
    assert len(items(ddb)) == 1


def test_each_state_execution_and_map_item_is_its_own_intent(ddb: Any, engine: Engine) -> None:
    body = Task()
    handler = idempotent_task(body, engine=engine)

    handler(payload("Charge", {}), None)
    handler(payload("Refund", {}), None)
    handler(payload("Charge", {}, execution=EXECUTION + "-2"), None)
    handler(payload("Charge", {}, iteration=0), None)
    handler(payload("Charge", {}, iteration=1), None)
    handler(payload("Charge", {}, iteration=1), None)

    assert body.runs == 5


def test_tenant_defaults_to_the_state_machine_and_operation_to_the_state(store: Any, engine: Engine) -> None:
    idempotent_task(Task(), engine=engine)(payload("Charge", {}), None)
    idempotent_task(Task(), engine=engine, tenant="shop", operation="charge-v2")(payload("Charge", {}), None)

    assert store.get(Scope(STATE_MACHINE, "Charge", EXECUTION, adapter=names.TASK_ADAPTER, subscriber=names.LOCAL_SUBSCRIBER).record_id) is not None
    assert store.get(Scope("shop", "charge-v2", EXECUTION, adapter=names.TASK_ADAPTER, subscriber=names.LOCAL_SUBSCRIBER).record_id) is not None


def test_same_execution_and_state_with_another_input_fails_without_running(ddb: Any, engine: Engine) -> None:
    body = Task()
    handler = idempotent_task(body, engine=engine)
    handler(payload("Charge", {"amount": 1}), None)

    with pytest.raises(TaskKeyMismatch) as refused:
        handler(payload("Charge", {"amount": 2}), None)

    assert type(refused.value) is TaskKeyMismatch  # its __name__ is the Lambda errorType Step Functions matches
    assert body.runs == 1
    assert len(items(ddb)) == 1


def test_an_in_flight_duplicate_raises_a_retryable_named_error(ddb: Any, engine: Engine) -> None:
    seen: list[TaskInProgress] = []

    def body(task_input: Any, context: Any, txn: Transaction) -> str:
        try:  # Step Functions' retry arriving while this invocation still runs
            handler(payload("Charge", {}), DrillContext(remaining_ms=30_000))
        except TaskInProgress as error:
            seen.append(error)
        return "done"

    handler = idempotent_task(body, engine=engine)

    assert handler(payload("Charge", {}), DrillContext(remaining_ms=30_000)) == "done"
    assert type(seen[0]) is TaskInProgress
    assert 30 <= seen[0].retry_after_seconds <= 33  # the lease: the Lambda's remaining time plus a margin


@pytest.mark.parametrize("bad", [
    {"state": "Charge", "stateMachine": STATE_MACHINE, "input": {}},
    {"execution": EXECUTION, "stateMachine": STATE_MACHINE, "input": {}},
    {"execution": EXECUTION, "state": "Charge", "input": {}},  # no stateMachine and no configured tenant
    ["not", "an", "object"],
])
def test_a_payload_without_its_identity_is_refused(ddb: Any, engine: Engine, bad: Any) -> None:
    body = Task()

    with pytest.raises(TaskPayloadError):
        idempotent_task(body, engine=engine)(bad, None)

    assert body.runs == 0


def test_a_failed_task_before_any_step_frees_the_key(ddb: Any, store: Any, engine: Engine) -> None:
    attempts: list[int] = []

    @idempotent_task(engine=engine)
    def flaky(task_input: Any, context: Any, txn: Transaction) -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("downstream timeout")
        return len(attempts)

    with pytest.raises(RuntimeError):
        flaky(payload("Charge", {}), None)
    assert store.get(Scope(STATE_MACHINE, "Charge", EXECUTION, adapter=names.TASK_ADAPTER, subscriber=names.LOCAL_SUBSCRIBER).record_id) is None
    assert flaky(payload("Charge", {}, retry=1), None) == 2


class TwoSteps:
    """Two foreign calls; the second fails once. Local writes and an event are buffered before each step."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail_second = True

    def __call__(self, task_input: Any, context: Any, txn: Transaction) -> Any:
        txn.put({"pk": "first"}, table=ORDERS, condition="attribute_not_exists(pk)")
        txn.append_event("FirstDone", {}, aggregate_type="Order", aggregate_id="o-1")
        first = txn.step("first", lambda: self.call("first", (txn.derive_key("first"), 1)))
        txn.put({"pk": "second"}, table=ORDERS, condition="attribute_not_exists(pk)")
        second = txn.step("second", lambda: self.call("second", txn.derive_key("second")))
        txn.append_event("Done", {}, aggregate_type="Order", aggregate_id="o-1")
        return {"first": first, "second": second}

    def call(self, name: str, value: Any) -> Any:
        self.calls.append(name)
        if name == "second" and self.fail_second:
            self.fail_second = False
            raise ConnectionError("provider unreachable")
        return value


def test_a_failure_between_steps_resumes_after_the_last_checkpoint(ddb: Any, store: Any, engine: Engine) -> None:
    body = TwoSteps()
    handler = idempotent_task(body, engine=engine)

    with pytest.raises(ConnectionError):
        handler(payload("Charge", {}), DrillContext())
    kept = store.get(Scope(STATE_MACHINE, "Charge", EXECUTION, adapter=names.TASK_ADAPTER, subscriber=names.LOCAL_SUBSCRIBER).record_id)
    assert kept.state == "pending" and list(kept.checkpoints) == ["first"]  # the lease ended, checkpoints kept
    assert [i["pk"]["S"] for i in items(ddb)] == ["first"]  # committed with the "first" checkpoint

    result = handler(payload("Charge", {}, retry=1), DrillContext())  # Step Functions' immediate retry

    assert body.calls == ["first", "second", "second"]
    scope = Scope(STATE_MACHINE, "Charge", EXECUTION, adapter=names.TASK_ADAPTER, subscriber=names.LOCAL_SUBSCRIBER)
    assert result == {"first": [scope.derive_key("first"), 1], "second": scope.derive_key("second")}
    assert sorted(i["pk"]["S"] for i in items(ddb)) == ["first", "second"]
    outbox = sorted(i["etype"]["S"] for i in items(ddb, TABLE) if i["pk"]["S"].startswith(names.OUTBOX_PREFIX))
    assert outbox == ["Done", "FirstDone"]  # the first step's event committed once, with its step


def test_checkpoint_and_completion_round_trips(ddb: Any, engine: Engine, calls: Any) -> None:
    body = TwoSteps()
    body.fail_second = False
    handler = idempotent_task(body, engine=engine)

    handler(payload("Charge", {}), None)
    assert dict(calls.calls) == {"PutItem": 1, "TransactWriteItems": 3}  # claim, 2 checkpoints, completion
    calls.reset()
    handler(payload("Charge", {}, retry=1), None)
    assert dict(calls.calls) == {"PutItem": 1}  # the refused claim returns the stored result


def test_step_needs_claim_first_mode(ddb: Any, engine: Engine) -> None:
    intent = Intent(Scope("t", "op", "k", adapter=names.TASK_ADAPTER), "fp", Mode.ATOMIC)

    with pytest.raises(ConfigurationError):
        engine.execute(intent, lambda txn: Completion(txn.step("call", lambda: 1)))
