"""The example app's cloud assembly for the sandbox tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Synthesized


@pytest.fixture(scope="session")
def example_assembly(example: Synthesized) -> Path:
    """The example app (orders + saga stacks): the cloud assembly of tests/conftest.py's ``example`` (read-only:
    a test that changes a template copies the folder first)."""
    return example.outdir
