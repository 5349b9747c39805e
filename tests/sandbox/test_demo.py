"""The demo scenario end to end on the sandbox (embedded AWS, real HTTP, worker processes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from retrysafe_cdk.sandbox import Options, Sandbox, scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example app synthesized once into a temporary cloud assembly."""
    sys.path.insert(0, str(ROOT))
    import app

    outdir = tmp_path_factory.mktemp("cdk.out")
    app.build(str(outdir)).synth()
    return outdir


def test_every_intent_applies_exactly_once(assembly: Path, tmp_path: Path) -> None:
    notices: list[str] = []
    with Sandbox(Options(assembly=assembly, visibility_timeout=2, log_dir=tmp_path), notices.append) as sandbox:
        report = scenario.run(sandbox, settle_seconds=40)
        ledger = sandbox.ledger
    assert report.violations == [], "\n".join(report.steps)
    assert report.effects["orders"] == 3 and report.effects["units reserved"] == 6
    assert ledger.outcomes["Replayed"] >= 5 and ledger.outcomes["KeyMismatch"] == 1
    assert sum(n for k, n in ledger.errors.items() if "InjectedCrash" in k) == 2
    assert ledger.messages["consumed"] >= 4
