"""The claim of an ``@idempotent_function`` lasts as long as the invocation it runs in can.

Inside a retrysafe handler (or after ``register_lambda_context(context)`` in one retrysafe does not
wrap) the function's claim holds until the invocation's remaining time plus the lease margin, as a
handler's own claim does; ``lease_seconds=`` wins; without a known invocation the fixed
``RETRYSAFE_LEASE_SECONDS`` default applies. Each lease is read from the record on moto, and a
crashed call is taken over once that lease has lapsed, not before.
"""

from __future__ import annotations

import contextvars
import json
from typing import Any

import pytest
from retrysafe import (
    Engine,
    IdempotencyMiddleware,
    Transaction,
    idempotent,
    idempotent_function,
    idempotent_http,
    register_lambda_context,
)
from retrysafe._config import DEFAULT_LEASE_SECONDS
from retrysafe._record import PENDING, from_item
from retrysafe.errors import RequestInFlightError
from retrysafe.names import LEASE_MARGIN_SECONDS, RECORD_PREFIX
from retrysafe.testing import Boundary, Clock, DrillContext
from retrysafe.testing._events import rest_event

from tests.helpers import TABLE
from tests.runtime.generic.events import EVENTBRIDGE

START = 1_800_000_000.0


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def engine(store: Any, clock: Clock) -> Engine:
    return Engine(store, cache=None, clock=clock)


def pending(ddb: Any) -> list[Any]:
    """The claims held now (records ``pending``), read from the table."""
    records = [from_item(item) for item in ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
               if item["pk"]["S"].startswith(RECORD_PREFIX)]
    return [record for record in records if record.state == PENDING and record.lease_until_ms is not None]


class Charges:
    """A claim-first function (no ``txn``) that reads its own claim's lease while it runs."""

    def __init__(self, store: Any, engine: Engine, **options: Any) -> None:
        self.leases: list[float] = []
        self.calls = 0

        @idempotent_function(data_keyword_argument="order", key="order_id", subscriber="payments", engine=engine,
                             **options)
        def charge(order: dict[str, Any]) -> dict[str, Any]:
            self.calls += 1
            record_id = charge.idempotency.scope(charge.idempotency.argument_key(order)).record_id  # type: ignore[attr-defined]
            claim = store.get(record_id)
            self.leases.append(claim.lease_until_ms / 1000.0 - START)  # seconds of lease the claim was given
            return {"charged": order["order_id"]}

        self.charge = charge


def test_inside_a_retrysafe_handler_the_lease_is_the_invocations_remaining_time(ddb: Any, store: Any,
                                                                               engine: Engine) -> None:
    charges = Charges(store, engine)

    @idempotent(key="detail.order_id", subscriber="orders", engine=engine)
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> Any:
        return charges.charge(order=event["detail"])

    assert handler(EVENTBRIDGE, DrillContext(remaining_ms=600_000)) == {"charged": "o-42"}
    assert charges.leases == [600 + LEASE_MARGIN_SECONDS]


def test_a_registered_context_sizes_the_lease_and_lease_seconds_wins(ddb: Any, store: Any, engine: Engine) -> None:
    charges = Charges(store, engine)
    pinned = Charges(store, engine, lease_seconds=45.0, operation="pinned")

    def plain_handler(event: dict[str, Any], context: Any) -> Any:  # a handler retrysafe does not decorate
        register_lambda_context(context)
        return [charges.charge(order=event["detail"]), pinned.charge(order=event["detail"])]

    # the registration stays in this copied context, not in the test's own
    contextvars.copy_context().run(plain_handler, EVENTBRIDGE, DrillContext(remaining_ms=300_000))

    assert charges.leases == [300 + LEASE_MARGIN_SECONDS]
    assert pinned.leases == [45.0]


def test_without_a_known_invocation_the_lease_is_the_fixed_default(ddb: Any, store: Any, engine: Engine) -> None:
    charges = Charges(store, engine)
    charges.charge(order={"order_id": "o-1"})

    ended = Charges(store, engine, operation="after-the-invocation")

    def stale() -> None:
        register_lambda_context(DrillContext(remaining_ms=0))  # an invocation whose time is up
        ended.charge(order={"order_id": "o-1"})

    contextvars.copy_context().run(stale)
    assert charges.leases == ended.leases == [DEFAULT_LEASE_SECONDS]


def test_a_crashed_call_is_taken_over_only_once_the_invocations_lease_lapsed(ddb: Any, store: Any, engine: Engine,
                                                                            clock: Clock) -> None:
    charges = Charges(store, engine)

    @idempotent(key="detail.order_id", subscriber="orders", engine=engine)
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> Any:
        return charges.charge(order=event["detail"])

    lease = 120 + LEASE_MARGIN_SECONDS
    boundary = Boundary(store.client)
    try:
        boundary.crash("PutItem", when="after")  # the function's claim applied; the process died holding it
        with pytest.raises(BaseException, match="crash"):
            handler(EVENTBRIDGE, DrillContext(remaining_ms=120_000))
        boundary.revive()
        # Past the fixed default lease, but the crashed invocation could still be running: no takeover.
        clock.advance(lease - 1)
        with pytest.raises(RequestInFlightError):
            handler(EVENTBRIDGE, DrillContext(remaining_ms=120_000))
        clock.advance(2)  # now past it: the crashed invocation has certainly ended
        assert handler(EVENTBRIDGE, DrillContext(remaining_ms=120_000)) == {"charged": "o-42"}
    finally:
        boundary.close()
    assert charges.calls == 1


@pytest.mark.parametrize(("options", "lease"), [({}, 30 + LEASE_MARGIN_SECONDS), ({"lease_seconds": 5.0}, 5.0)])
def test_a_claim_first_http_handlers_lease_is_the_remaining_time_unless_lease_seconds(
        ddb: Any, store: Any, engine: Engine, options: dict[str, Any], lease: float) -> None:
    leases: list[float] = []

    @idempotent_http(operation="Pay", tenant=None, subscriber="shop", engine=engine, **options)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:  # no txn: claim-first
        (claim,) = pending(ddb)
        leases.append(claim.lease_until_ms / 1000.0 - START)
        return {"statusCode": 201, "body": json.dumps({"ok": True})}

    assert handler(rest_event({"amount": 1}, key="k-1"), DrillContext(remaining_ms=30_000))["statusCode"] == 201
    assert leases == [lease]


def test_a_middleware_routes_claim_takes_lease_seconds_and_its_functions_the_invocations_time(
        ddb: Any, store: Any, engine: Engine) -> None:
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types

    charges = Charges(store, engine)
    route_leases: list[float] = []
    app = APIGatewayRestResolver()
    middleware = IdempotencyMiddleware(mode="claim_first", lease_seconds=5.0, tenant=None, subscriber="shop",
                                       engine=engine)

    @app.post("/pay", middlewares=[middleware])
    def pay() -> Response[str]:
        route_leases.extend(claim.lease_until_ms / 1000.0 - START for claim in pending(ddb))
        charges.charge(order=app.current_event.json_body)
        return Response(201, content_types.APPLICATION_JSON, json.dumps({"ok": True}))

    answer = app.resolve(rest_event({"order_id": "o-1"}, key="k-1", resource="/pay"), DrillContext(remaining_ms=30_000))
    assert answer["statusCode"] == 201
    assert route_leases == [5.0]  # lease_seconds= wins for the route's own claim
    assert charges.leases == [30 + LEASE_MARGIN_SECONDS]  # the function called by the route: the invocation's time


def test_a_registration_in_one_test_is_gone_in_the_next_part_one(ddb: Any, store: Any, engine: Engine) -> None:
    register_lambda_context(DrillContext(remaining_ms=300_000))  # as a handler under test would, left registered
    charges = Charges(store, engine)
    charges.charge(order={"order_id": "o-1"})
    assert charges.leases == [300 + LEASE_MARGIN_SECONDS]


def test_a_registration_in_one_test_is_gone_in_the_next_part_two(ddb: Any, store: Any, engine: Engine) -> None:
    """Run after part one (pytest keeps the file's order): the plugin forgot its registration."""
    charges = Charges(store, engine)
    charges.charge(order={"order_id": "o-1"})
    assert charges.leases == [DEFAULT_LEASE_SECONDS]
