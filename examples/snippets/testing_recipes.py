"""Testing your handlers: Powertools' idempotency testing recipes, for retrysafe (docs/testing.md).

``tests/docs/test_testing_snippet.py`` imports the fixtures and tests below, so pytest runs them.
"""

# --8<-- [start:app]
# app.py
from typing import Any

from retrysafe import Transaction, idempotent, names


@idempotent(key="detail.order_id")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    shipment = txn.derive_key("shipment")
    txn.put({"pk": f"shipment#{shipment}", "order": event.get("detail", {}).get("order_id", "-")}, table="shipments")
    return {"message": "success", "statusCode": 200}
# --8<-- [end:app]


# --8<-- [start:moto]
# tests/conftest.py
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws


def create_table(client: Any, name: str) -> None:   # what IdempotencyTable deploys: a string key "pk"
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])


@pytest.fixture
def dynamodb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv(names.TABLE_ENV, "idempotency")      # RETRYSAFE_TABLE: read at the first call, not at import
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(client, "idempotency")
        create_table(client, "shipments")                   # the handler's own table
        yield client
# --8<-- [end:moto]


# --8<-- [start:disabled]
# tests/test_app.py
from retrysafe.testing import DrillContext


def test_handler_logic_without_idempotency(monkeypatch: pytest.MonkeyPatch, dynamodb: Any) -> None:
    monkeypatch.setenv(names.IDEMPOTENCY_DISABLED_ENV, "true")   # RETRYSAFE_IDEMPOTENCY_DISABLED
    assert handler({}, DrillContext()) == {"message": "success", "statusCode": 200}   # no key needed
    assert dynamodb.scan(TableName="shipments")["Count"] == 1                          # writes still commit
# --8<-- [end:disabled]


# --8<-- [start:replay]
def test_a_redelivery_replays(dynamodb: Any) -> None:
    event = {"id": "e-1", "detail-type": "OrderPlaced", "source": "shop", "detail": {"order_id": "o-1"}}
    first = handler(event, DrillContext())
    assert handler({**event, "id": "e-2"}, DrillContext()) == first   # the same order: replayed, not run
    assert dynamodb.scan(TableName="shipments")["Count"] == 1
# --8<-- [end:replay]


# --8<-- [start:use_store]
from retrysafe import DynamoStore
from retrysafe.testing import Boundary, use_store


def test_on_a_table_of_the_tests_own(dynamodb: Any) -> None:
    create_table(dynamodb, "test-idempotency")       # or a client on DynamoDB local (endpoint_url=...)
    event = {"id": "e-1", "detail-type": "OrderPlaced", "source": "shop", "detail": {"order_id": "o-2"}}
    with use_store(handler, DynamoStore("test-idempotency", client=dynamodb)) as engine:
        boundary = Boundary(engine.store.client)     # the ledger of what committed
        handler(event, DrillContext())
        handler(event, DrillContext())
        boundary.close()
    [commit] = boundary.effects()                     # one commit: the shipment with the completed record
    assert commit.completes and [table for table, _ in commit.writes] == ["shipments"]
    assert dynamodb.scan(TableName="test-idempotency")["Count"] == 1
    assert dynamodb.scan(TableName="idempotency")["Count"] == 0
# --8<-- [end:use_store]
