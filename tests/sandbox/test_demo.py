"""The example's demo scenarios end to end on the sandbox (embedded AWS, real HTTP, worker processes)."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path

from retrysafe import metrics
from retrysafe_sandbox import Options, Sandbox, run_scenarios
from retrysafe_sandbox.__main__ import credentials

from examples.orders import scenario as orders
from examples.saga import scenario as saga_scenario
from tests.helpers import ROOT


def test_every_intent_applies_exactly_once(example_assembly: Path, tmp_path: Path) -> None:
    notices: list[str] = []
    with Sandbox(Options(assembly=example_assembly, visibility_timeout=2, log_dir=tmp_path),
                 notices.append) as sandbox:
        report = run_scenarios(sandbox, [functools.partial(orders.run, settle_seconds=90), saga_scenario.run])
        ledger = sandbox.ledger
        # what `make sandbox` prints for the Lambda TOKEN authorizer, made by the app's authorization hook
        [api] = sandbox.apis
        printed = "\n".join(credentials(sandbox, api, "acme", orders.authorization))
        assert f"-H 'Authorization: {orders.authorization(sandbox, 'acme')}'" in printed
        assert "Authorization: Bearer acme." in printed
        assert "Authorization:" not in "\n".join(credentials(sandbox, api, "acme"))
    assert report.violations == [], "\n".join(report.steps)
    assert not [step for step in report.steps if step.startswith("skip")], report.steps
    assert report.effects["orders"] == 3 and report.effects["units reserved"] == 6
    # the EventBridge rule target (shipping) and the DynamoDB Streams consumer (notices): one effect per order
    assert report.effects["shipments"] == 3 and report.effects["shipping notices"] == 3
    assert report.effects["dead-lettered"] == 0
    assert ledger.outcomes[metrics.REPLAYED] >= 5 and ledger.outcomes[metrics.KEY_MISMATCH] == 1
    # both queue consumers, the rule target, the stream consumer and the outbox publisher (after PutEvents),
    # then the saga's payment task right after its provider call
    crashed = {k.partition(":")[0] for k, n in ledger.errors.items() if "InjectedCrash" in k for _ in range(n)}
    assert sum(n for k, n in ledger.errors.items() if "InjectedCrash" in k) == 6, ledger.errors
    assert {"ShipOrderFunctionE83CA20D", "NotifyShippedFunction0FB4C89A", "OutboxPublisherFunction6E06D74D"} <= crashed
    # the publisher's re-read batch put its events on the bus again: shipping got more deliveries than orders
    assert ledger.events["RetrysafeOrders-ShipOrdersRuleB4997FB8 -> ShipOrderFunctionE83CA20D: delivered"] > 3
    assert ledger.messages["consumed"] >= 4
    # every call the functions and their pollers made was evaluated against the template's IAM, none denied
    assert ledger.iam["allowed"] > 100 and not ledger.denied
    # the Lambda TOKEN authorizer from the template: 401 without a token, then once per token, then cached
    assert ledger.authorizers["AuthorizerToken0E024415: 401 (no identity)"] == 1
    assert ledger.authorizers["AuthorizerToken0E024415: invoked"] == 2
    assert ledger.authorizers["AuthorizerToken0E024415: cached"] >= 8
    # the order saga on the ASL interpreter: happy path, declined + compensation, crash after the provider call
    saga = "RetrysafeSaga-OrderSagaStateMachine15260A25"
    assert ledger.executions == {f"{saga}: SUCCEEDED": 2, f"{saga}: FAILED": 1}
    assert report.effects["saga charges"] == 2 and report.effects["saga refunds"] == 0


def _without_grant(assembly: Path, destination: Path, role_policy: str, action: str) -> Path:
    """A copy of the assembly whose ``role_policy`` no longer grants ``action``."""
    shutil.copytree(assembly, destination)
    template_file = destination / "RetrysafeOrders.template.json"
    template = json.loads(template_file.read_text())
    [policy] = [r for lid, r in template["Resources"].items()
                if r["Type"] == "AWS::IAM::Policy" and lid.startswith(role_policy)]
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        statement["Action"] = [a for a in actions if a != action]
    template_file.write_text(json.dumps(template))
    return destination


def _without_resource(assembly: Path, prefix: str) -> None:
    """Remove the resource whose logical id starts with ``prefix`` from the orders template."""
    template_file = assembly / "RetrysafeOrders.template.json"
    template = json.loads(template_file.read_text())
    [found] = [lid for lid in template["Resources"] if lid.startswith(prefix)]
    del template["Resources"][found]
    template_file.write_text(json.dumps(template))


def test_demo_names_a_missing_permission(example_assembly: Path, tmp_path: Path) -> None:
    # CreateOrder commits the order with TransactWriteItems: IAM checks PutItem on each item's table
    broken = _without_grant(example_assembly, tmp_path / "cdk.out", "CreateOrderRoleDefaultPolicy", "dynamodb:PutItem")
    # and API Gateway may no longer invoke the webhook receiver (its AWS::Lambda::Permission for the stage)
    _without_resource(broken, "ApiwebhooksgithubPOSTApiPermissionRetrysafe")
    # its own process, as `make demo` runs it (moto's backends are per process), with the scenarios cdk.json names
    demo = subprocess.run([sys.executable, "-m", "retrysafe_sandbox", "demo", "--assembly", str(broken),
                           "--stack", "RetrysafeOrders", "--logs", str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    out = demo.stdout
    assert demo.returncode == 1, out + demo.stderr
    assert "skip   saga: no running state machine has the task states" in out  # its stack was not selected
    assert "IAM DENIED" in out and "CreateOrderRole207E4039: dynamodb:PutItem on arn:aws:dynamodb:" in out
    assert "FAILED first order: 502" in out
    assert ("apigateway.amazonaws.com for arn:aws:execute-api:eu-west-1:123456789012:ApiCD79AAA0/prod/POST/webhooks/"
            "github: lambda:InvokeFunction on arn:aws:lambda:eu-west-1:123456789012:function:RetrysafeOrders-"
            "GitHubReceiverFunction") in out
    assert "FAILED webhook delivered twice: [500, 500]" in out
    log = (tmp_path / "logs" / "CreateOrderFunction4D4A6308.log").read_text()
    assert "AccessDeniedException" in log and "is not authorized to perform: dynamodb:PutItem" in log
