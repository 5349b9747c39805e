"""A user's test suite: the retrysafe pytest plugin's failure drills against the user's handler."""

from collections.abc import Callable
from typing import Any

import pytest
from handlers.greetings import handler
from retrysafe import DynamoStore
from retrysafe.testing import Drills


@pytest.fixture
def greetings_table(retrysafe_table: DynamoStore) -> None:   # moto + the idempotency table; RETRYSAFE_TABLE is set
    retrysafe_table.client.create_table(
        TableName="greetings", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])


def greeting(variant: int) -> dict[str, Any]:
    return {"name": f"ada-{variant}"}


@pytest.mark.usefixtures("greetings_table")
@pytest.mark.parametrize("drill", ["response_lost", "race", "key_reuse", "redelivery", "late_replay"])
def test_create_greeting_survives(drill: str, retrysafe_drills: Callable[..., Drills]) -> None:
    getattr(retrysafe_drills(handler, greeting), drill)()
