"""Retry hints on SQS: a message received before (``ApproximateReceiveCount`` > 1) claims first in a cold container.

Round trips per path, counted at the transport's attempt seam (``calls``): a hinted replay
is one ``PutItem`` and no handler run; a hinted first delivery is the claim and the completing
transaction; an un-hinted first delivery stays one ``TransactWriteItems``; a warm container
answers from its record cache with none.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from retrysafe import Engine
from retrysafe._cache import RecordCache
from retrysafe._store import DynamoStore
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing import ALWAYS, Boundary, Clock, DynamoSemantics, instant_retries
from retrysafe.testing._boundary import completes_record
from retrysafe.testing._events import DrillContext, sqs_record

from tests.helpers import ORDERS, TABLE, CallCounter


class Consumer:
    """An atomic consumer whose effect is a non-idempotent ``ADD``; counts its runs."""

    def __init__(self, fail: int = 0) -> None:
        self.runs = 0
        self.fail = fail

    def __call__(self, message: Message, txn: Any) -> None:
        self.runs += 1
        if self.fail:
            self.fail -= 1
            raise ConnectionError("the ledger refused")
        txn.update({"pk": "ledger"}, "ADD n :one", values={":one": 1}, table=ORDERS)


def applied(ddb: Any) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "ledger"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def delivery(record: dict[str, Any], receive_count: int) -> dict[str, Any]:
    """The same message (id, body, attributes) as SQS delivers it the ``receive_count``-th time."""
    return {"Records": [{**record, "attributes": {**record["attributes"],
                                                   "ApproximateReceiveCount": str(receive_count)}}]}


@pytest.fixture
def message() -> dict[str, Any]:
    return sqs_record({"order": "o-1", "total": 42})


def test_hinted_replay_in_a_cold_container_is_one_put_and_no_handler_run(store, ddb, calls, message):
    first = Consumer()
    assert idempotent_sqs(first, subscriber="billing", store=store)(delivery(message, 1), DrillContext()) == {
        "batchItemFailures": []}
    assert calls.calls == {"TransactWriteItems": 1}  # un-hinted first delivery: atomic mode's one round trip
    calls.reset()
    cold = Consumer()  # another container: its store has no record cache
    handler = idempotent_sqs(cold, subscriber="billing", store=store)
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1}
    assert cold.runs == 0 and applied(ddb) == 1


def test_hinted_first_delivery_claims_then_commits(store, ddb, calls, message):
    """The first delivery's invocation died before it committed: the redelivery runs, in two round trips."""
    consumer = Consumer()
    handler = idempotent_sqs(consumer, subscriber="billing", store=store)
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1, "TransactWriteItems": 1}
    assert consumer.runs == 1 and applied(ddb) == 1
    calls.reset()
    assert handler(delivery(message, 3), DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1} and consumer.runs == 1 and applied(ddb) == 1


def test_warm_container_replays_a_hinted_redelivery_from_memory(ddb, message):
    client = boto3.client("dynamodb", region_name="eu-west-1")
    DynamoSemantics().install(client)
    store = DynamoStore(TABLE, client=client, cache=RecordCache())
    calls = CallCounter(client)
    consumer = Consumer()
    handler = idempotent_sqs(consumer, subscriber="billing", store=store)
    handler(delivery(message, 1), DrillContext())
    calls.reset()
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert calls.total == 0 and consumer.runs == 1 and applied(ddb) == 1


def test_retry_hints_false_keeps_one_transaction_and_runs_the_handler(store, ddb, calls, message):
    idempotent_sqs(Consumer(), subscriber="billing", store=store)(delivery(message, 1), DrillContext())
    calls.reset()
    consumer = Consumer()
    handler = idempotent_sqs(consumer, subscriber="billing", retry_hints=False, store=store)
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"TransactWriteItems": 1}  # the handler ran; its transaction met the record
    assert consumer.runs == 1 and applied(ddb) == 1


@pytest.mark.parametrize("count", ["1", "0", "", "two", "-3"])
def test_a_receive_count_that_is_no_redelivery_is_no_hint(store, calls, message, count):
    record = {**message, "attributes": {**message["attributes"], "ApproximateReceiveCount": count}}
    idempotent_sqs(Consumer(), subscriber="billing", store=store)({"Records": [record]}, DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}


def test_failed_hinted_run_frees_the_key_for_the_next_delivery(store, ddb, calls, message):
    """Atomic work has no foreign effects: a failure releases the claim (one DeleteItem), the next delivery runs."""
    consumer = Consumer(fail=1)
    handler = idempotent_sqs(consumer, subscriber="billing", store=store)
    failed = handler(delivery(message, 2), DrillContext())
    assert failed == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert calls.calls == {"PutItem": 1, "DeleteItem": 1} and applied(ddb) == 0
    assert handler(delivery(message, 3), DrillContext()) == {"batchItemFailures": []}
    assert consumer.runs == 2 and applied(ddb) == 1


def test_step_still_needs_claim_first_mode_on_the_hinted_route(store, message):
    """The hinted route changes the round trips, not atomic mode's rules: ``txn.step`` is refused."""
    def stepping(message: Message, txn: Any) -> None:
        txn.step("charge", lambda: "charged")

    handler = idempotent_sqs(stepping, subscriber="billing", store=store)
    for count in (1, 2):
        failed = handler(delivery(message, count), DrillContext())
        assert failed == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}


@pytest.fixture(params=[True, False], ids=["token-honoured", "token-ignored"])
def lost(request: pytest.FixtureRequest, ddb: Any) -> Iterator[Boundary]:
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 2}))
    instant_retries(client)
    if request.param:
        DynamoSemantics().install(client)
    boundary = Boundary(client)
    yield boundary
    boundary.close()


def test_lost_claim_response_on_the_hinted_route_is_the_invocations_own_claim(ddb, lost, message):
    consumer = Consumer()
    handler = idempotent_sqs(consumer, subscriber="billing", engine=Engine(DynamoStore(TABLE, client=lost.client)))
    lost.lose_response("PutItem")
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert [op for op, kind in lost.fired if kind == "lost response"] == ["PutItem"]
    assert consumer.runs == 1 and applied(ddb) == 1


def test_lost_commit_response_on_the_hinted_route_is_the_invocations_own_commit(ddb, lost, message):
    consumer = Consumer()
    handler = idempotent_sqs(consumer, subscriber="billing", engine=Engine(DynamoStore(TABLE, client=lost.client)))
    lost.lose_response("TransactWriteItems", match=completes_record)
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert [op for op, kind in lost.fired if kind == "lost response"] == ["TransactWriteItems"]
    assert consumer.runs == 1 and applied(ddb) == 1
    assert handler(delivery(message, 3), DrillContext()) == {"batchItemFailures": []}
    assert consumer.runs == 1 and applied(ddb) == 1


def test_hinted_redelivery_after_expiry_runs_as_a_new_intent(store, ddb, calls, message):
    clock = Clock(1_800_000_000.0)
    engine = Engine(store, clock=clock)
    consumer = Consumer()
    handler = idempotent_sqs(consumer, subscriber="billing", horizon_seconds=86_400, engine=engine)
    handler(delivery(message, 1), DrillContext())
    clock.advance(86_401)  # past the record's exp; TTL has not deleted it yet
    calls.reset()
    assert handler(delivery(message, 2), DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1, "TransactWriteItems": 1}  # the expired record is claimed over
    assert consumer.runs == 2 and applied(ddb) == 2


@pytest.mark.parametrize("receive_count", [3, 1], ids=["hinted", "un-hinted"])
def test_a_crashed_hinted_claim_is_taken_over_after_its_lease(ddb, message, receive_count):
    """The hinted invocation died holding its claim (its release failed too); once the lease (the
    visibility timeout) lapsed, the next delivery takes the claim over, hinted or not, and the effect
    commits once. Without the takeover an un-hinted delivery would meet the claim until it expires."""
    client = boto3.client("dynamodb", region_name="eu-west-1")
    instant_retries(client)
    DynamoSemantics().install(client)
    boundary = Boundary(client)
    clock = Clock(1_800_000_000.0)
    engine = Engine(DynamoStore(TABLE, client=client), clock=clock)
    try:
        dying = Consumer(fail=1)
        handler = idempotent_sqs(dying, subscriber="billing", lease_seconds=30, engine=engine)
        boundary.throttle("DeleteItem", times=ALWAYS)
        assert handler(delivery(message, 2), DrillContext())["batchItemFailures"]
        boundary.close()
        boundary = Boundary(client)
        assert handler(delivery(message, receive_count), DrillContext())["batchItemFailures"]  # lease still held
        assert dying.runs == (1 if receive_count > 1 else 2)  # un-hinted: it ran, its transaction met the claim
        clock.advance(31)
        consumer = Consumer()
        handler = idempotent_sqs(consumer, subscriber="billing", lease_seconds=30, engine=engine)
        assert handler(delivery(message, receive_count), DrillContext()) == {"batchItemFailures": []}
        # Un-hinted, the work ran in atomic mode; its transaction met the lapsed claim (nothing committed),
        # and that run was committed under the claim it took over: the handler ran once either way.
        assert consumer.runs == 1 and applied(ddb) == 1
        runs = consumer.runs
        assert handler(delivery(message, receive_count + 1), DrillContext()) == {"batchItemFailures": []}
        assert consumer.runs == runs and applied(ddb) == 1
    finally:
        boundary.close()
