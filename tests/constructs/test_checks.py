"""Every synthesized template passes cfn-lint (errors) and cdk-nag AwsSolutions with no unacknowledged finding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Synthesized

pytestmark = pytest.mark.synth


def _violations(app: Synthesized) -> list[str]:
    report = app.validation_report()
    return [f"{v['ruleName']}: {[c['constructPath'] for c in v['violatingConstructs']]}"
            for plugin in report["pluginReports"] for v in plugin["violations"]]


@pytest.mark.parametrize("name", ["example", "composed", "snapstarted"])
def test_cdk_nag_reports_no_unacknowledged_finding(name: str, request: pytest.FixtureRequest) -> None:
    app: Synthesized = request.getfixturevalue(name)
    report = app.validation_report()
    assert [p["pluginName"] for p in report["pluginReports"]] == ["AwsSolutions"]
    assert _violations(app) == []


@pytest.mark.parametrize("name", ["example", "composed", "snapstarted"])
def test_cfn_lint_finds_no_error(name: str, request: pytest.FixtureRequest) -> None:
    app: Synthesized = request.getfixturevalue(name)
    templates = sorted(str(p) for p in app.outdir.glob("*.template.json"))
    assert templates
    done = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable", *templates],
                          capture_output=True, text=True, timeout=120, check=False)
    # parseable: file:line:column:end-line:end-column:RULE:message
    rules = [line.split(":")[5] for line in done.stdout.splitlines() if line.strip()]
    assert [rule for rule in rules if rule != "W3005"] == [], done.stdout
    assert done.returncode in (0, 4), done.stderr  # 4: warnings only (W3005, redundant DependsOn from CDK)
