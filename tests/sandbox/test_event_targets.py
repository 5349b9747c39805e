"""EventBridge rules with function targets and a DynamoDB Streams consumer, on the sandbox, from the example's template.

The orders stack's ``ShipOrders`` rule (an ``IdempotentEventRule``) invokes the shipping function with the
``OrderPlaced`` events put on its bus; the shipments table's stream feeds the notices consumer (an
``IdempotentStreamConsumer``: partial batch responses, bisection on failure). Events are put on the bus as
the outbox publisher puts them (the envelope as the detail), so a republished event is the same detail
with a new EventBridge id.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from retrysafe import metrics
from retrysafe_sandbox import Options, Sandbox
from retrysafe_sandbox.streams import StreamPoller

from examples.orders.scenario import _environment

#: Generous: a loaded 2-CPU box; every wait below polls and returns as soon as its condition holds.
BOUND_SECONDS = 90.0


@pytest.fixture(scope="module")
def sandbox(example_assembly: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    with Sandbox(Options(assembly=example_assembly, stacks=["RetrysafeOrders"], visibility_timeout=2,
                         log_dir=tmp_path_factory.mktemp("logs")), lambda _: None) as running:
        inventory = _environment(running, "/orders", "INVENTORY_TABLE")
        running.client("dynamodb").put_item(TableName=inventory, Item={"pk": {"S": "sku#widget"},
                                                                     "available": {"N": "1000"}})
        yield running


def _until(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + BOUND_SECONDS
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {BOUND_SECONDS}s: {what}")


def _bus(sandbox: Sandbox) -> str:
    [done] = sandbox.provisioned
    [bus] = done.stack.of_type("AWS::Events::EventBus")
    return str(done.intrinsics.ref(bus.logical_id))


def _put(sandbox: Sandbox, detail: dict[str, Any]) -> None:
    """Put one ``OrderPlaced`` event on the orders bus, as the outbox publisher does."""
    answer = sandbox.client("events").put_events(Entries=[{
        "EventBusName": _bus(sandbox), "Source": "orders", "DetailType": "OrderPlaced", "Detail": json.dumps(detail)}])
    assert answer["FailedEntryCount"] == 0, answer


def _envelope(order_id: str) -> dict[str, Any]:
    return {"event_id": f"evt-{order_id}", "event_type": "OrderPlaced", "aggregate_type": "Order",
            "aggregate_id": order_id, "sequence": 1, "occurred_at": "2026-12-01T10:00:00+00:00",
            "payload": {"order_id": order_id, "tenant": "acme", "total": "9.90",
                        "lines": [{"sku": "widget", "quantity": 1, "price": "9.90"}]}}


def _pool(sandbox: Sandbox, handler: str) -> Any:
    return next(p.pool for p in sandbox.pollers if p.pool.spec.handler == handler)


def _item(sandbox: Sandbox, pk: str) -> dict[str, Any]:
    table = _environment(sandbox, "/orders", "SHIPMENTS_TABLE")
    item: dict[str, Any] = sandbox.client("dynamodb").get_item(TableName=table, Key={"pk": {"S": pk}},
                                                               ConsistentRead=True).get("Item", {})
    return item


def _events(sandbox: Sandbox, suffix: str) -> int:
    return sum(n for k, n in sandbox.ledger.events.items() if k.endswith(suffix))


def test_a_republished_event_and_a_reread_stream_batch_have_one_effect(sandbox: Sandbox) -> None:
    order_id = uuid.uuid4().hex
    # shipping dies right after its transaction committed (Lambda retries the invocation); so does the notices
    # consumer (Lambda reads its stream batch again)
    _pool(sandbox, "shipping.handler").crash_once_after("dynamodb:TransactWriteItems")
    _pool(sandbox, "notifications.handler").crash_once_after("dynamodb:TransactWriteItems")
    replayed, delivered = sandbox.ledger.outcomes[metrics.REPLAYED], _events(sandbox, ": delivered")
    _put(sandbox, _envelope(order_id))
    _put(sandbox, _envelope(order_id))  # the outbox publishing again: the same detail, a new EventBridge id
    _until(lambda: _events(sandbox, ": delivered") >= delivered + 2, "both events delivered to shipping")
    _until(lambda: _item(sandbox, f"notice#{order_id}"), "the shipment's notice")
    assert sandbox.settle(BOUND_SECONDS)
    assert _item(sandbox, f"shipment#{order_id}")["shipped"] == {"N": "1"}
    assert _item(sandbox, f"notice#{order_id}")["notices"] == {"N": "1"}
    errors = sandbox.ledger.errors
    assert errors["ShipOrderFunctionE83CA20D: Sandbox.InjectedCrash"] >= 1, errors
    # the crashed invocation's retry and the republished event (shipping), the re-read batch (notices)
    assert sandbox.ledger.outcomes[metrics.REPLAYED] >= replayed + 3
    assert sandbox.ledger.records["filtered out"] >= 1  # the notice#s the consumer writes to its own table


def test_a_failing_target_is_retried_then_dead_lettered_with_lambdas_record(sandbox: Sandbox) -> None:
    [target] = [t for done in sandbox.provisioned for t in done.event_targets]
    [dlq] = [url for url in sandbox.dead_letter_queues() if url.endswith(target.dead_letter.rpartition(":")[2])]
    failed = _events(sandbox, "to the on-failure destination")
    detail = {"event_type": "OrderPlaced", "payload": {"note": "no order id"}}  # key= finds nothing: it raises
    _put(sandbox, detail)
    _until(lambda: _events(sandbox, "to the on-failure destination") > failed, "the event given up on")
    sqs = sandbox.client("sqs")
    messages = _until(lambda: sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=1).get("Messages"),
                      "the invocation record in the rule's dead-letter queue")
    record = json.loads(messages[0]["Body"])
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3  # the first attempt and Lambda's 2 retries
    assert record["requestPayload"]["detail"] == detail and record["requestPayload"]["detail-type"] == "OrderPlaced"
    assert record["responsePayload"]["errorType"] == "KeyNotFoundError"
    assert sandbox.ledger.errors["ShipOrderFunctionE83CA20D: KeyNotFoundError"] == 3
    # sent by the function's role (its EventInvokeConfig destination grant), evaluated and allowed
    assert not sandbox.ledger.denied


def test_a_failing_record_mid_batch_is_bisected_out_and_the_rest_of_its_batch_applies_once(sandbox: Sandbox) -> None:
    [notices] = [p for p in sandbox.pollers
                 if isinstance(p, StreamPoller) and p.pool.spec.handler == "notifications.handler"]
    [failures] = [url for url in sandbox.dead_letter_queues() if url.endswith(str(notices.on_failure).rpartition(":")[2])]
    run = uuid.uuid4().hex[:8]
    ids = [f"{run}-a", f"{run}-poison", f"{run}-c"]
    # one transaction: its three INSERTs reach the stream together, so the consumer gets them in one batch
    table = _environment(sandbox, "/orders", "SHIPMENTS_TABLE")
    sandbox.client("dynamodb").transact_write_items(TransactItems=[
        {"Put": {"TableName": table, "Item": {"pk": {"S": f"shipment#{i}"},
                                              **({} if "poison" in i else {"order_id": {"S": i}})}}} for i in ids])
    sqs = sandbox.client("sqs")
    messages = _until(lambda: sqs.receive_message(QueueUrl=failures, WaitTimeSeconds=1).get("Messages"),
                      "the poison record's batch info in the on-failure queue")
    info = json.loads(messages[0]["Body"])
    assert info["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert info["DDBStreamBatchInfo"]["batchSize"] == 1  # bisected down to the poison record alone
    assert sandbox.settle(BOUND_SECONDS)
    # the record before the poison one ran once (not again when the batch was retried from the failure),
    # the one after it once (bisected into its own batch), the poison one never
    assert _item(sandbox, f"notice#{ids[0]}")["notices"] == {"N": "1"}
    assert _item(sandbox, f"notice#{ids[2]}")["notices"] == {"N": "1"}
    assert _item(sandbox, f"notice#{ids[1]}") == {}
