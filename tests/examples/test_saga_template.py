"""The order saga stack (``RetrysafeSaga`` in app.py): payload, retries, compensation wiring, grants, checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from retrysafe.errors import (
    BusinessConditionFailedError,
    FencingError,
    StoreUnavailableError,
    TaskInProgress,
    TaskKeyMismatch,
    TaskPayloadError,
    TransactionRaced,
)
from retrysafe.names import HORIZON_ENV, SUBSCRIBER_ENV, TABLE_ENV

from tests.helpers import Synthesized

pytestmark = pytest.mark.synth
STACK = "RetrysafeSaga"
DAY = 86_400
PAYLOAD = {"execution.$": "$$.Execution.Id", "state.$": "$$.State.Name", "stateMachine.$": "$$.StateMachine.Id",
           "retryCount.$": "$$.State.RetryCount", "input.$": "$"}
TASKS = {  # state -> (handler, result path)
    "ReserveInventory": ("reserve_inventory", "$.reservation"),
    "ChargePayment": ("charge_payment", "$.payment"),
    "ConfirmOrder": ("confirm_order", "$.confirmation"),
    "RefundPayment": ("refund_payment", "$.refund"),
    "ReleaseInventory": ("release_inventory", "$.release"),
}
TRANSIENT = ["Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException", "Lambda.AWSLambdaException",
             "Lambda.SdkClientException", "Lambda.TooManyRequestsException", "Lambda.Unknown",
             *(error.__name__ for error in (StoreUnavailableError, TransactionRaced, BusinessConditionFailedError,
                                            FencingError))]
# client 1 d + webhook 3 d + settlement 1 d + operator replay = 14 d redrive window + the 1 h execution timeout.
EXPECTED_HORIZON = 5 * DAY + 14 * DAY + 3600


@pytest.fixture(scope="module")
def raw(example: Synthesized) -> dict[str, Any]:
    return example.template(STACK)


def _of_type(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in raw["Resources"].items() if v["Type"] == kind}


@pytest.fixture(scope="module")
def definition(raw: dict[str, Any]) -> dict[str, Any]:
    """The DefinitionString with each ``Fn::GetAtt`` replaced by ``<LogicalId>``."""
    (machine,) = _of_type(raw, "AWS::StepFunctions::StateMachine").values()
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else f"<{p['Fn::GetAtt'][0]}>" for p in parts)
    result: dict[str, Any] = json.loads(text)
    return result


@pytest.fixture(scope="module")
def functions(raw: dict[str, Any], definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """State name -> the Lambda function resource it invokes."""
    lambdas = _of_type(raw, "AWS::Lambda::Function")
    return {name: lambdas[definition["States"][name]["Resource"].strip("<>")] for name in TASKS}


def test_every_task_sends_the_context_object_payload_and_gets_its_handler(definition: dict[str, Any],
                                                                          functions: dict[str, Any]) -> None:
    for name, (handler, result_path) in TASKS.items():
        state = definition["States"][name]
        assert state["Type"] == "Task" and state["Parameters"] == PAYLOAD  # payloadResponseOnly: ARN as Resource
        assert state["ResultPath"] == result_path
        props = functions[name]["Properties"]
        assert props["Handler"] == f"handlers.tasks.{handler}"
        env = props["Environment"]["Variables"]
        assert set(env) == {TABLE_ENV, HORIZON_ENV, SUBSCRIBER_ENV, "SAGA_ORDERS_TABLE",
                            "PROVIDER_LEDGER_TABLE"}
        assert env[HORIZON_ENV] == str(EXPECTED_HORIZON)
        assert state["TimeoutSeconds"] >= props["Timeout"]


def test_retry_policy_order_and_values(definition: dict[str, Any], functions: dict[str, Any]) -> None:
    for name in TASKS:
        retriers = definition["States"][name]["Retry"]
        assert retriers[0] == {"ErrorEquals": [TaskKeyMismatch.__name__, TaskPayloadError.__name__, "PaymentDeclined",
                                               "OutOfStock"], "MaxAttempts": 0}
        in_progress = retriers[1]
        assert in_progress["ErrorEquals"] == [TaskInProgress.__name__] and "JitterStrategy" not in in_progress
        delays = [in_progress["IntervalSeconds"] * in_progress["BackoffRate"] ** n
                  for n in range(in_progress["MaxAttempts"])]
        lease = functions[name]["Properties"]["Timeout"] + 2  # remaining time at the claim + 2 s margin
        assert sum(delays) > lease >= sum(delays[:-1])  # outlasts the lease, with the fewest attempts
        assert retriers[2] == {"ErrorEquals": TRANSIENT, "IntervalSeconds": 2, "MaxAttempts": 6, "BackoffRate": 2}
        assert len(retriers) == 3 and all("States.ALL" not in r["ErrorEquals"] for r in retriers)


def _path(definition: dict[str, Any], start: str) -> list[str]:
    """The states visited from ``start`` by following ``Next`` to the end."""
    visited = [start]
    while "Next" in definition["States"][visited[-1]]:
        visited.append(definition["States"][visited[-1]]["Next"])
    return visited


def test_forward_chain_and_compensations(definition: dict[str, Any]) -> None:
    states = definition["States"]
    assert definition["StartAt"] == "ReserveInventory"
    assert _path(definition, "ReserveInventory") == ["ReserveInventory", "ChargePayment", "ConfirmOrder", "Succeeded"]
    catches = {name: states[name]["Catch"] for name in ("ReserveInventory", "ChargePayment", "ConfirmOrder")}
    assert catches == {
        "ReserveInventory": [{"ErrorEquals": ["OutOfStock"], "ResultPath": "$.error", "Next": "Failed"}],
        "ChargePayment": [{"ErrorEquals": ["PaymentDeclined"], "ResultPath": "$.error", "Next": "ReleaseInventory"}],
        "ConfirmOrder": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RefundPayment"}],
    }
    assert _path(definition, "ReleaseInventory") == ["ReleaseInventory", "Failed"]
    assert _path(definition, "RefundPayment") == ["RefundPayment", "ReleaseInventory", "Failed"]
    assert "Catch" not in states["RefundPayment"] and "Catch" not in states["ReleaseInventory"]
    assert states["Failed"] == {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
    assert states["Succeeded"] == {"Type": "Succeed"}
    assert definition["TimeoutSeconds"] == 3600


def _statements(raw: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    policies = [p for k, p in _of_type(raw, "AWS::IAM::Policy").items() if k.startswith(role_prefix)]
    assert len(policies) == 1, role_prefix
    result: list[dict[str, Any]] = policies[0]["Properties"]["PolicyDocument"]["Statement"]
    return result


def _grants(raw: dict[str, Any], role_prefix: str) -> dict[str, set[str]]:
    """Logical id of the resource -> actions allowed on it."""
    grants: dict[str, set[str]] = {}
    for statement in _statements(raw, role_prefix):
        assert statement["Effect"] == "Allow" and statement["Resource"] != "*"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        grants.setdefault(statement["Resource"]["Fn::GetAtt"][0], set()).update(actions)
    return grants


def test_task_grants_are_what_each_handler_calls(raw: dict[str, Any]) -> None:
    records = {f"dynamodb:{a}" for a in ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem")}
    tables = {k.rstrip("0123456789ABCDEF"): k for k in _of_type(raw, "AWS::DynamoDB::Table")}
    expected = {
        "Reserve": {"Orders": {"GetItem", "UpdateItem", "PutItem"}},
        "Charge": {"Orders": {"PutItem", "UpdateItem"}, "ProviderLedger": {"PutItem"}},
        "Confirm": {"Orders": {"PutItem"}},
        "Refund": {"Orders": {"UpdateItem"}, "ProviderLedger": {"PutItem"}},
        "Release": {"Orders": {"GetItem", "UpdateItem"}},
    }
    for task, business in expected.items():
        grants = _grants(raw, f"{task}RoleDefaultPolicy")
        assert grants.pop(tables["IdempotencyTable"]) == records
        assert grants.pop(next(k for k in grants if k.startswith(f"{task}Logs"))) == {"logs:CreateLogStream",
                                                                                      "logs:PutLogEvents"}
        assert grants == {tables[t]: {f"dynamodb:{a}" for a in actions} for t, actions in business.items()}


def test_state_machine_invokes_only_the_task_functions_and_logs_all_with_tracing(
        raw: dict[str, Any], definition: dict[str, Any]) -> None:
    (machine,) = _of_type(raw, "AWS::StepFunctions::StateMachine").values()
    props = machine["Properties"]
    assert props["StateMachineType"] == "STANDARD" and props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    (log_group,) = props["LoggingConfiguration"]["Destinations"]
    assert raw["Resources"][log_group["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]]["Properties"] == {
        "RetentionInDays": 30}
    role = props["RoleArn"]["Fn::GetAtt"][0]
    (invoke,) = [s for s in _statements(raw, role.rstrip("0123456789ABCDEF") + "DefaultPolicy")
                 if s["Action"] == "lambda:InvokeFunction"]
    task_functions = {definition["States"][name]["Resource"].strip("<>") for name in TASKS}
    invoked = {r["Fn::GetAtt"][0] if "Fn::GetAtt" in r else r["Fn::Join"][1][0]["Fn::GetAtt"][0]
               for r in invoke["Resource"]}
    assert invoked == task_functions


def test_cdk_nag_and_cfn_lint_pass_for_the_saga_stack(example: Synthesized) -> None:
    findings = [(v["ruleName"], c["constructPath"]) for plugin in example.validation_report()["pluginReports"]
                for v in plugin["violations"] for c in v["violatingConstructs"]
                if c["constructPath"].startswith(f"{STACK}/")]
    assert findings == []
    template = str(example.outdir / f"{STACK}.template.json")
    done = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable", template],
                          capture_output=True, text=True, timeout=120, check=False)
    rules = [line.split(":")[5] for line in done.stdout.splitlines() if line.strip()]
    assert [rule for rule in rules if rule != "W3005"] == [], done.stdout


def test_code_asset_holds_the_handlers_and_they_resolve(example: Synthesized, functions: dict[str, Any]) -> None:
    keys = {f["Properties"]["Code"]["S3Key"] for f in functions.values()}
    (key,) = keys
    asset = example.outdir / ("asset." + key.removesuffix(".zip"))
    assert (asset / "handlers" / "tasks.py").is_file() and (asset / "handlers" / "provider.py").is_file()
    assert not (asset / "stack.py").exists()
    assert not [p for p in asset.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]
    # Lambda imports "handlers.tasks" from the asset root, with the function's environment, and calls the function.
    names = [handler for handler, _ in TASKS.values()]
    check = f"import handlers.tasks as t; assert all(callable(getattr(t, n)) for n in {names!r})"
    variables = functions["ChargePayment"]["Properties"]["Environment"]["Variables"]
    env = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "eu-west-1",
           **{name: value if isinstance(value, str) else "resolved-at-deploy" for name, value in variables.items()}}
    done = subprocess.run([sys.executable, "-B", "-c", check], cwd=asset, capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr
