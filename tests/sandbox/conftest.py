"""The example app, synthesized once per session for the sandbox tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example app (orders + saga stacks) synthesized into a temporary cloud assembly."""
    sys.path.insert(0, str(ROOT))
    import app

    outdir = tmp_path_factory.mktemp("cdk.out")
    app.build(str(outdir)).synth()
    return outdir
