"""The order saga's sandbox scenario: its state machine on the ASL interpreter, then its effects checked.

``python -m retrysafe_sandbox demo`` runs it after :mod:`examples.orders.scenario` (``cdk.json``
names both in its ``retrysafe_sandbox`` context).

Three executions run side by side: a happy path; a declined payment (the interpreter catches
``PaymentDeclined`` and runs the inventory compensation); and one whose payment task crashes
right after its first provider call (the interpreter retries ``Lambda.Unknown``, then
``TaskInProgress`` until the dead attempt's lease lapses; the retry takes over and finishes).
Then the provider's ledger must show one authorization per order and exactly one charge per
paid order, and the stock must hold what the paid orders took.

It knows this example: the task states ``ReserveInventory`` and ``ChargePayment`` and the tables
in their functions' environment. It is skipped when no running state machine has those states (the
saga stack not selected, or the ASL interpreter not installed).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable

from retrysafe_sandbox import Sandbox
from retrysafe_sandbox.scenarios import Report
from retrysafe_sandbox.stepfunctions import Execution

SKU, STOCK = "saga-widget", 10
TASKS = ("ReserveInventory", "ChargePayment")
#: The provider's own write (its ledger table), not the task's claim (also a PutItem, on the idempotency table).
PROVIDER_CALL = "dynamodb:PutItem@{table}"


def run(sandbox: Sandbox, report: Report) -> None:
    """Drive the saga's executions in ``sandbox``; record every check in ``report``."""
    stepfunctions = sandbox.stepfunctions
    running = stepfunctions.machines.values() if stepfunctions is not None else []
    machine = next((m for m in running if all(state in m.tasks for state in TASKS)), None)
    if stepfunctions is None or machine is None:
        report.skip(f"saga: no running state machine has the task states {', '.join(TASKS)}")
        return
    reserve, charge = (sandbox.pools[machine.tasks[state]["function"]] for state in TASKS)
    orders = reserve.spec.environment["SAGA_ORDERS_TABLE"]
    provider = charge.spec.environment["PROVIDER_LEDGER_TABLE"]
    ddb = sandbox.client("dynamodb")
    ddb.put_item(TableName=orders, Item={"pk": {"S": f"stock#{SKU}"}, "available": {"N": str(STOCK)}})
    run_id = uuid.uuid4().hex[:8]
    orders_in = {"happy": 4200, "declined": 250_000, "crashed": 4300}
    # the first invocation to reach the provider dies right after the provider recorded its call
    charge.crash_once_after(PROVIDER_CALL.format(table=provider))
    results: dict[str, Execution] = {}

    def execute(kind: str, amount: int) -> None:
        payload = {"orderId": f"{run_id}-{kind}", "sku": SKU, "quantity": 1, "amount": amount}
        results[kind] = stepfunctions.run(machine.name, payload, f"{run_id}-{kind}")

    # the crashing one runs first: the armed crash must hit its payment task; the others start once it has
    threads = {kind: threading.Thread(target=execute, args=(kind, amount)) for kind, amount in orders_in.items()}
    threads["crashed"].start()
    _wait_for(lambda: any(k.startswith(f"{charge.spec.logical_id}: Sandbox.InjectedCrash")
                          for k in sandbox.ledger.errors))
    for kind in ("happy", "declined"):
        threads[kind].start()
    for thread in threads.values():
        thread.join()
    happy, declined, crashed = results["happy"], results["declined"], results["crashed"]
    report.check(happy.status == "SUCCEEDED", f"saga happy path: {happy.status}")
    compensated = [h.get("state") for h in declined.history if h["type"] == "StateExited"]
    report.check(declined.status == "FAILED" and declined.error == "PaymentDeclined"
                 and "ReleaseInventory" in compensated,
                 f"saga declined payment: {declined.status} {declined.error}, compensation ran: "
                 f"{'ReleaseInventory' in compensated}")
    retried = [h.get("error") for h in crashed.history if h["type"] == "StateFailed"]
    report.check(crashed.status == "SUCCEEDED" and "Lambda.Unknown" in retried,
                 f"saga task crashed after its provider call, retried by the interpreter: {crashed.status}, "
                 f"failed attempts {retried}")
    ledger = [(item["op"]["S"], json.loads(item["response"]["S"]))
              for item in ddb.scan(TableName=provider)["Items"]]
    captures = sorted(response["chargeId"] for op, response in ledger if op == "capture")
    paid = sorted(str((e.output or {}).get("payment", {}).get("chargeId")) for e in (happy, crashed))
    authorizations = sum(1 for op, _ in ledger if op == "authorize")
    report.check(captures == paid and authorizations == len(orders_in),
                 f"provider ledger: {authorizations} authorizations for {len(orders_in)} orders, "
                 f"{len(captures)} charges for {len(paid)} paid orders (one each)")
    stock = ddb.get_item(TableName=orders, Key={"pk": {"S": f"stock#{SKU}"}})["Item"]["available"]["N"]
    report.check(int(stock) == STOCK - 2, f"saga stock: {stock} left of {STOCK} after 2 paid orders")
    report.effects |= {"saga charges": len(captures), "saga refunds": sum(1 for op, _ in ledger if op == "refund")}


def _wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    """Return once ``condition()`` holds (or after ``timeout`` seconds; the checks then report what happened)."""
    stop = threading.Event()
    for _ in range(int(timeout / 0.1)):
        if condition() or stop.wait(0.1):
            return
