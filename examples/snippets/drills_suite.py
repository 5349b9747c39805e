"""The failure drills against the documentation's own handlers, as a user adds them to a suite.

``tests/docs/test_snippets.py`` imports the fixtures and tests below, so pytest runs them.
"""

# --8<-- [start:suite]
# tests/test_drills.py
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import DynamoStore
from retrysafe.testing import Drills

from .http_atomic import handler as create_order
from .http_claim_first import handler as charge_card
from .payments import payments  # your provider's client, faked in tests


@pytest.fixture
def orders_table(retrysafe_table: DynamoStore) -> None:   # moto + the idempotency table; RETRYSAFE_TABLE is set
    retrysafe_table.client.create_table(
        TableName="orders", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])


def order(variant: int) -> dict[str, Any]:          # variant 0: the intent's request; 1: another request
    return {"id": "o-1", "amount": 42 + variant}


@pytest.mark.parametrize("drill", ["response_lost", "race", "key_reuse", "redelivery",
                                   "crash_after_foreign_call", "late_replay"])
def test_create_order_survives(drill: str, orders_table: None,
                               retrysafe_drills: Callable[..., Drills]) -> None:
    getattr(retrysafe_drills(create_order, order), drill)()


def test_charge_card_survives_everything(orders_table: None, retrysafe_drills: Callable[..., Drills]) -> None:
    retrysafe_drills(charge_card, order, effects=payments.charge_count).all()
# --8<-- [end:suite]


# --8<-- [start:boundary]
from retrysafe.testing import Boundary, DrillContext, SimulatedCrash, api_event, engine_of


def test_retry_after_a_lost_response(orders_table: None) -> None:
    event = api_event('{"id": "o-2", "amount": 42}', headers={"Idempotency-Key": "charge-o-2"})
    boundary = Boundary(engine_of(charge_card).store.client)
    boundary.crash("TransactWriteItems", when="after")  # or crash_after_commit() / crash_before_commit()
    with pytest.raises(SimulatedCrash):
        charge_card(event, DrillContext())          # committed, then the invocation died
    boundary.revive()                               # the next invocation
    retry = charge_card(event, DrillContext())
    assert retry["headers"]["Idempotent-Replayed"] == "true"
    assert len(boundary.effects()) == 1
    boundary.close()
# --8<-- [end:boundary]
