"""The drills run on the plugin's fixtures (retrysafe_table, retrysafe_clock, retrysafe_drills)."""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe._store import DynamoStore

from tests.drills.handlers import ORDERS
from tests.helpers import create_business_table


@pytest.fixture
def orders(retrysafe_table: DynamoStore) -> Any:
    """The business table of the drill handlers; returns a counter of its items by prefix."""
    import boto3

    # a client of moto's own (in-process), whatever the store's transport is (the fast one cannot create tables)
    client = boto3.client("dynamodb", region_name=retrysafe_table.region)
    create_business_table(client, ORDERS)

    def count(prefix: str) -> int:
        items = client.scan(TableName=ORDERS, ConsistentRead=True)["Items"]
        return sum(1 for item in items if item["pk"]["S"].startswith(prefix))

    return count
