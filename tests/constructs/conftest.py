"""Synthesized apps, built once per test session (jsii start-up and bundling cost seconds).

- ``example``: ``python -v app.py`` run as a subprocess from the repository root, the way
  ``cdk synth`` runs it (its import trace also shows where ``constructs`` came from);
- ``composed``: the constructs added to a stack that already owns a table, a queue and a bus,
  synthesized in-process with cdk-nag attached;
- ``snapstarted``: every integration in front of SnapStart functions, in-process with cdk-nag.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Synthesized:
    """One synthesized app: its output folder, templates and cdk-nag report."""

    outdir: Path
    log: str = ""

    def template(self, stack: str) -> dict[str, Any]:
        """A stack's CloudFormation template."""
        result: dict[str, Any] = json.loads((self.outdir / f"{stack}.template.json").read_text())
        return result

    def validation_report(self) -> dict[str, Any]:
        """cdk-nag's validation report (written on every synth with a validation plugin)."""
        report: dict[str, Any] = json.loads((self.outdir / "validation-report.json").read_text())
        return report


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """``python -v app.py`` from the repo root, with its output in a temporary folder."""
    outdir = tmp_path_factory.mktemp("example-cdk-out")
    env = {**os.environ, "CDK_OUTDIR": str(outdir), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    done = subprocess.run([sys.executable, "-v", "app.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return Synthesized(outdir, done.stderr)


@pytest.fixture(scope="session")
def composed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    """The composition test app (see ``composition.py``), synthesized once."""
    from .composition import build

    outdir = tmp_path_factory.mktemp("composed-cdk-out")
    build(str(outdir)).synth()
    yield Synthesized(outdir)


@pytest.fixture(scope="session")
def snapstarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    """The SnapStart test app (see ``snapstart_app.py``), synthesized once."""
    from .snapstart_app import build

    outdir = tmp_path_factory.mktemp("snapstart-cdk-out")
    build(str(outdir)).synth()
    yield Synthesized(outdir)
