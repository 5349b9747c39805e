"""Shared fixtures: moto-backed DynamoDB, the idempotency table, a DynamoDB call counter and a clock.

The helpers behind them live in ``retrysafe.testing`` (events, contexts, clocks) and ``tests/helpers.py``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from retrysafe import names
from retrysafe.testing import Clock

from tests.helpers import (
    ORDERS,
    ROOT,
    TABLE,
    CallCounter,
    Synthesized,
    create_business_table,
    create_idempotency_table,
    synthesized_once,
)

# No timing-based assertions: Hypothesis' per-example deadline (200 ms) fails tests on a loaded machine.
settings.register_profile("retrysafe", deadline=None)
settings.load_profile("retrysafe")

os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
os.environ.setdefault("AWS_REGION", "eu-west-1")
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ.pop("AWS_PROFILE", None)
os.environ[names.TABLE_ENV] = "idempotency"
os.environ["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "retrysafe-tests")

@pytest.fixture
def aws() -> Iterator[None]:
    """In-process moto for every AWS call made inside the test."""
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def ddb(aws: None) -> Any:
    """A DynamoDB client with the idempotency table and an ``orders`` business table."""
    import boto3

    client = boto3.client("dynamodb", region_name="eu-west-1")
    create_idempotency_table(client)
    create_business_table(client, ORDERS)
    return client


@pytest.fixture
def store(ddb: Any) -> Any:
    """A DynamoStore on the moto table, with its own client and DynamoDB's semantics (atomic calls, tokens)."""
    import boto3
    from retrysafe._store import DynamoStore
    from retrysafe.testing import DynamoSemantics

    client = boto3.client("dynamodb", region_name="eu-west-1")
    DynamoSemantics().install(client)
    return DynamoStore(TABLE, client=client)


@pytest.fixture
def calls(store: Any) -> CallCounter:
    """Counter of the DynamoDB calls the store makes."""
    return CallCounter(store.client)


@pytest.fixture
def clock() -> Clock:
    """A clock starting at a fixed instant."""
    import time

    return Clock(time.time())


@pytest.fixture(scope="session")
def example(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The example app (``app.py``) synthesized once per test run (shared by pytest-xdist's workers):
    ``python -v app.py`` from the repository root, the way ``cdk synth`` runs it (its import trace, the log,
    shows where ``constructs`` came from)."""
    import subprocess
    import sys

    def synthesize(outdir: Path) -> str:
        env = {**os.environ, "CDK_OUTDIR": str(outdir), "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
        done = subprocess.run([sys.executable, "-v", "app.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=240, check=False)
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stderr

    return synthesized_once(tmp_path_factory, "example-cdk-out", synthesize)
