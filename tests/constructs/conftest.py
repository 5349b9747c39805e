"""Synthesized apps, built once per test run and shared by pytest-xdist's workers (jsii start-up and bundling
cost seconds); the example app, ``example``, is in tests/conftest.py (the example tests share it).

- ``composed``: the constructs added to a stack that already owns a table, a queue and a bus,
  synthesized in-process with cdk-nag attached;
- ``snapstarted``: every integration in front of SnapStart functions, in-process with cdk-nag.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import Synthesized, synthesized_once


def _synth(app: Any) -> str:
    """Synthesize ``app`` in-process; no log."""
    app.synth()
    return ""


@pytest.fixture(scope="session")
def composed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    """The composition test app (see ``composition.py``), synthesized once."""
    from .composition import build

    yield synthesized_once(tmp_path_factory, "composed-cdk-out", lambda outdir: _synth(build(str(outdir))))


@pytest.fixture(scope="session")
def snapstarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    """The SnapStart test app (see ``snapstart_app.py``), synthesized once."""
    from .snapstart_app import build

    yield synthesized_once(tmp_path_factory, "snapstart-cdk-out", lambda outdir: _synth(build(str(outdir))))
