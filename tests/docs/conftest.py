"""Fixtures of the documentation's snippet tests."""

from __future__ import annotations

import os

import pytest
from retrysafe import names


@pytest.fixture
def lambda_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """The snippets run as deployed: in Lambda's execution environment (the record cache on), a new container."""
    from retrysafe._store import _SHARED

    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.delitem(_SHARED, os.environ[names.TABLE_ENV], raising=False)
