"""Fixtures of the documentation's snippet tests."""

from __future__ import annotations

import os

import pytest
from retrysafe import DynamoStore, names


@pytest.fixture
def lambda_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """The snippets run as deployed: in Lambda's execution environment (the record cache on), a new container."""
    from retrysafe._store import _SHARED

    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.delitem(_SHARED, os.environ[names.TABLE_ENV], raising=False)


#: The table Powertools' documentation examples name (``DynamoDBPersistenceLayer(table_name=...)``).
POWERTOOLS_TABLE = "IdempotencyTable"


@pytest.fixture
def powertools_table(lambda_container: None, retrysafe_table: DynamoStore) -> DynamoStore:
    """Powertools' examples' table beside retrysafe's, on moto (for the snippets run side by side)."""
    retrysafe_table.client.create_table(
        TableName=POWERTOOLS_TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    return retrysafe_table

