"""State machines on the ASL interpreter: the context object per state and attempt, Retry and Catch, IAM."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from retrysafe_sandbox.functions import Invocation
from retrysafe_sandbox.guard import Guard, Role
from retrysafe_sandbox.iam import Policies
from retrysafe_sandbox.ledger import Ledger
from retrysafe_sandbox.stepfunctions import Machine, StepFunctions, node_modules, prepared

CONTEXT = {"execution.$": "$$.Execution.Id", "state.$": "$$.State.Name", "retryCount.$": "$$.State.RetryCount",
           "stateMachine.$": "$$.StateMachine.Id", "input.$": "$"}
FN = "arn:aws:lambda:eu-west-1:123456789012:function:"
DEFINITION = {"StartAt": "Flaky", "States": {
    "Flaky": {"Type": "Task", "Resource": f"{FN}flaky", "Parameters": CONTEXT, "ResultPath": "$.flaky",
              "Retry": [{"ErrorEquals": ["Lambda.Unknown"], "IntervalSeconds": 0, "MaxAttempts": 2}],
              "Next": "Invoke"},
    "Invoke": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
               "Parameters": {"FunctionName": f"{FN}declines", "Payload": CONTEXT},
               "Catch": [{"ErrorEquals": ["Declined"], "ResultPath": "$.error", "Next": "Named"}], "End": True},
    "Named": {"Type": "Pass", "Parameters": {"state.$": "$$.State.Name", "error.$": "$.error.Error"}, "End": True}}}
MACHINE_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:Demo"


def test_prepared_points_each_state_at_its_own_context_entry() -> None:
    definition, ids = prepared(DEFINITION)
    assert ids == {"Flaky": "s0", "Invoke": "s1", "Named": "s2"}
    assert definition["States"]["Flaky"]["Parameters"]["state.$"] == "$$.Sandbox.s0.Name"
    assert definition["States"]["Invoke"]["Parameters"]["Payload"]["retryCount.$"] == "$$.Sandbox.s1.RetryCount"
    assert definition["States"]["Flaky"]["Parameters"]["execution.$"] == "$$.Execution.Id"


@pytest.fixture
def runner() -> Iterator[tuple[StepFunctions, list[tuple[str, Any]], Ledger]]:
    """The interpreter with two fake functions: ``flaky`` dies twice, ``declines`` raises ``Declined``."""
    modules = node_modules()
    if modules is None:
        pytest.skip("npm ci installs the ASL interpreter")
    calls: list[tuple[str, Any]] = []
    lock = threading.Lock()

    def invoke(function: str, payload: Any) -> Invocation:
        with lock:
            calls.append((function, payload))
            attempts = sum(1 for f, _ in calls if f == function)
        if function == "flaky" and attempts <= 2:
            return Invocation(error={"errorType": "Sandbox.InjectedCrash", "errorMessage": "died"})
        if function == "declines":
            return Invocation(error={"errorType": "Declined", "errorMessage": "no"})
        return Invocation(result={"ok": attempts})

    ledger = Ledger()
    functions = StepFunctions(invoke, lambda function: FN + function, Guard(ledger), ledger, modules)
    yield functions, calls, ledger
    functions.stop()


def _machine(policies: Policies | None) -> Machine:
    role = Role("MachineRole", "arn:aws:iam::123456789012:role/Machine", "Demo", policies) if policies else None
    return Machine("Demo", "Demo", MACHINE_ARN, DEFINITION, role,
                   {"Flaky": {"function": "flaky", "integration": "direct"},
                    "Invoke": {"function": "declines", "integration": "invoke"}})


def test_context_object_retry_and_catch(runner: tuple[StepFunctions, list[tuple[str, Any]], Ledger]) -> None:
    functions, calls, ledger = runner
    allowed = Policies([{"Statement": [{"Effect": "Allow", "Action": "lambda:InvokeFunction",
                                        "Resource": [FN + "flaky", FN + "declines"]}]}])
    functions.add({"Demo": _machine(allowed)})
    execution = functions.run("Demo", {"order": 1}, "exec-1")
    assert execution.status == "SUCCEEDED"
    assert execution.output == {"state": "Named", "error": "Declined"}
    flaky = [payload for function, payload in calls if function == "flaky"]
    assert [p["retryCount"] for p in flaky] == [0, 1, 2]
    expected = {"execution": "arn:aws:states:eu-west-1:123456789012:execution:Demo:exec-1", "state": "Flaky",
                "stateMachine": MACHINE_ARN, "input": {"order": 1}}
    assert all({k: p[k] for k in expected} == expected for p in flaky)
    [declined] = [payload for function, payload in calls if function == "declines"]
    assert (declined["state"], declined["retryCount"]) == ("Invoke", 0)
    assert [h.get("error") for h in execution.history if h["type"] == "StateFailed"] == [
        "Lambda.Unknown", "Lambda.Unknown", "Declined"]
    assert ledger.executions == {"Demo: SUCCEEDED": 1} and ledger.iam == {"allowed": 4}


def test_a_denied_invoke_fails_the_task_as_lambda_would(
        runner: tuple[StepFunctions, list[tuple[str, Any]], Ledger]) -> None:
    functions, calls, ledger = runner
    only_flaky = Policies([{"Statement": [{"Effect": "Allow", "Action": "lambda:InvokeFunction",
                                           "Resource": FN + "flaky"}]}])
    functions.add({"Demo": _machine(only_flaky)})
    execution = functions.run("Demo", {}, "exec-2")
    assert (execution.status, execution.error) == ("FAILED", "Lambda.AWSLambdaException")
    assert "not authorized to perform: lambda:InvokeFunction" in str(execution.cause)
    assert [f for f, _ in calls] == ["flaky", "flaky", "flaky"]  # the denied function never ran
    assert ledger.denied == {f"MachineRole: lambda:InvokeFunction on {FN}declines": 1}
