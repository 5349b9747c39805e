"""A record past its expiry is absent with everything its intent left; unkeyed requests each get their own scope."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import Engine, Mode, Transaction, idempotent_http, names
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import ORDERS, outbox_items

HORIZON = 7 * 86400


class Crash(BaseException):
    """The invocation dies (nothing in the engine or handler catches it); its claim stays pending."""


def test_claiming_an_expired_record_clears_the_old_intents_checkpoints(ddb, store, clock):
    """Issue scenario: a 5 charge checkpointed and died; after expiry a 500 charge must not inherit its result."""
    from retrysafe.testing import Boundary, SimulatedCrash

    boundary = Boundary(store.client)
    provider: list[int] = []
    attempts: list[int] = []

    def charge(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        amount = json.loads(event["body"])["amount"]
        attempts.append(amount)
        if attempts == [5, 500]:
            die()  # the new intent dies before its first step
        result = txn.step("charge", lambda: (provider.append(amount), {"charged": amount})[1])
        if amount == 5:
            die()  # dies after its checkpoint: the record stays pending with cp
        return {"statusCode": 201, "body": json.dumps(result)}

    def die() -> None:
        # The process is gone: nothing it would still send (its release) reaches DynamoDB.
        for operation in ("DeleteItem", "UpdateItem"):
            boundary.crash(operation, when="before")
        raise Crash()

    handler = idempotent_http(charge, mode=Mode.CLAIM_FIRST, engine=Engine(store, clock=clock))
    with pytest.raises(SimulatedCrash):
        handler(rest_event({"amount": 5}), DrillContext(remaining_ms=5_000))
    boundary.revive()
    clock.advance(HORIZON + 60)  # expired, still in the table (TTL lags)
    with pytest.raises(SimulatedCrash):
        handler(rest_event({"amount": 500}), DrillContext(remaining_ms=5_000))
    boundary.revive()
    clock.advance(60)  # the new intent's lease lapses, and its retry takes over
    response = handler(rest_event({"amount": 500}), DrillContext(remaining_ms=5_000))
    assert response["statusCode"] == 201
    assert json.loads(response["body"]) == {"charged": 500}
    assert provider == [5, 500]
    boundary.close()


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_new_intent_after_expiry_appends_events_without_conflict(ddb, store, clock, mode):
    """The previous intent's outbox items linger; the new execution's events get new ids and commit."""

    def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        eid = txn.append_event("OrderPlaced", json.loads(event["body"]), aggregate_type="Order", aggregate_id="o-1")
        return {"statusCode": 201, "body": json.dumps({"event": eid})}

    handler = idempotent_http(api, mode=mode, engine=Engine(store, clock=clock))
    first = handler(rest_event({"amount": 1}), DrillContext())
    clock.advance(HORIZON + 1)
    late = handler(rest_event({"amount": 2}), DrillContext())
    assert late["statusCode"] == 201, late["body"]
    assert json.loads(late["body"])["event"] != json.loads(first["body"])["event"]
    assert len(outbox_items(ddb)) == 2


def test_a_takeover_reuses_the_event_ids_of_the_intent_it_resumes(ddb, store, clock):
    """Event ids are stable for one intent instance: the takeover appends the ids the crashed run appended."""
    runs: list[list[str]] = []

    def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        ids = [txn.append_event("Requested", {}, aggregate_type="Charge", aggregate_id="c")]
        txn.step("charge", lambda: "ch_1")
        ids.append(txn.append_event("Charged", {}, aggregate_type="Charge", aggregate_id="c"))
        runs.append(ids)
        if len(runs) == 1:
            raise Crash()
        return {"statusCode": 201, "body": "{}"}

    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=Engine(store, clock=clock))
    with pytest.raises(Crash):
        handler(rest_event({"amount": 1}), DrillContext(remaining_ms=5_000))
    clock.advance(60)
    assert handler(rest_event({"amount": 1}), DrillContext(remaining_ms=5_000))["statusCode"] == 201
    assert runs[0] == runs[1]
    assert sorted(i["eid"]["S"] for i in outbox_items(ddb)) == sorted(runs[0])


@pytest.mark.parametrize("make_event", [rest_event, http_event])
@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_unkeyed_requests_each_get_their_own_scope_and_run_every_time(ddb, store, make_event, mode):
    """key_required=False: two requests without a key are two intents (own derived keys and event ids)."""

    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        order_id = txn.derive_key("order")
        txn.put({"pk": f"order#{order_id}"}, table=ORDERS, condition="attribute_not_exists(pk)")
        eid = txn.append_event("OrderPlaced", {"id": order_id}, aggregate_type="Order", aggregate_id=order_id)
        return {"statusCode": 201, "body": json.dumps({"id": order_id, "event": eid})}

    handler = idempotent_http(create, mode=mode, key_required=False, engine=Engine(store))
    first = handler(make_event({"amount": 1}, key=None), DrillContext())
    second = handler(make_event({"amount": 1}, key=None), DrillContext())
    assert first["statusCode"] == second["statusCode"] == 201, second["body"]
    a, b = json.loads(first["body"]), json.loads(second["body"])
    assert a["id"] != b["id"] and a["event"] != b["event"]
    assert len(ddb.scan(TableName=ORDERS)["Items"]) == 2 and len(outbox_items(ddb)) == 2
    assert names.REPLAYED_HEADER not in second.get("headers", {})
