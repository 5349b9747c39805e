"""``retrysafe.workflow`` is the former name of ``retrysafe.stepfunctions``: every old import still works."""

from __future__ import annotations

import importlib
from typing import Any

from retrysafe.testing._events import DrillContext

from tests.helpers import CallCounter, payload

#: The public names ``retrysafe.workflow`` had before the rename.
OLD_NAMES = ["NON_RETRIABLE_ERRORS", "RETRIABLE_ERRORS", "TaskFunction", "TaskHandler", "TaskIdempotency",
             "TaskInProgress", "TaskKeyMismatch", "TaskPayloadError", "TaskRequest", "idempotent_task"]


def test_the_alias_keeps_every_old_name_as_the_same_object() -> None:
    workflow = importlib.import_module("retrysafe.workflow")
    stepfunctions = importlib.import_module("retrysafe.stepfunctions")
    errors = importlib.import_module("retrysafe.errors")
    assert sorted(workflow.__all__) == OLD_NAMES
    for name in OLD_NAMES:
        home = errors if name.startswith("Task") and name.endswith(("Progress", "Mismatch", "Error")) \
            else stepfunctions
        assert getattr(workflow, name) is getattr(home, name), name


def test_a_task_written_against_the_old_module_runs_and_replays(store: Any, calls: CallCounter) -> None:
    from retrysafe.workflow import idempotent_task

    runs: list[Any] = []

    @idempotent_task(store=store)
    def reserve(order: Any, context: Any, txn: Any) -> dict[str, Any]:
        runs.append(order)
        return {"reserved": order["sku"]}

    event = payload("Reserve", {"sku": "sku-1"})
    assert reserve(event, DrillContext()) == {"reserved": "sku-1"}
    assert calls.total == 2  # claim-first: claim, complete
    calls.reset()
    assert reserve(event, DrillContext()) == {"reserved": "sku-1"}
    assert calls.total == 1  # the retry of the state replays
    assert len(runs) == 1
