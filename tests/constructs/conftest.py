"""Synthesized apps, built once per test session (jsii start-up and bundling cost seconds); the example app,
``example``, is in tests/conftest.py (the example tests share it).

- ``composed``: the constructs added to a stack that already owns a table, a queue and a bus,
  synthesized in-process with cdk-nag attached;
- ``snapstarted``: every integration in front of SnapStart functions, in-process with cdk-nag.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import Synthesized


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
