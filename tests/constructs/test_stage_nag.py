"""cdk-nag findings in the stacks of a ``cdk.Stage`` fail the synthesis the docs and ``make synth`` run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.synth
CDK = ROOT / "node_modules" / ".bin" / "cdk"


def _synth(tmp_path: Path, *selectors: str) -> subprocess.CompletedProcess[str]:
    app = f"{sys.executable} -m tests.constructs.stage_app"
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    return subprocess.run([str(CDK), "synth", "--quiet", *selectors, "--app", app, "-o", str(tmp_path / "out")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_a_finding_inside_a_stage_fails_synth_of_every_stack(tmp_path: Path) -> None:
    everything = _synth(tmp_path, "**")
    assert everything.returncode != 0
    assert "Prod/Service/Unguarded/Resource" in everything.stderr + everything.stdout
    assert "AwsSolutions-SQS4" in everything.stderr + everything.stdout


def test_the_plain_cli_synth_passes_over_it_which_is_why_the_recipe_selects_every_stack(tmp_path: Path) -> None:
    """CDK's behaviour the docs warn about: without a selector only top-level stacks' findings fail."""
    plain = _synth(tmp_path)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert "AwsSolutions-SQS4" in (tmp_path / "out" / "validation-report.json").read_text()


def test_make_synth_selects_every_stack() -> None:
    recipe = (ROOT / "Makefile").read_text().split("\nsynth: install\n", 1)[1].split("\n", 1)[0]
    assert recipe.strip() == "cdk synth --quiet '**'"
