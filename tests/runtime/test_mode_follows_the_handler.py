"""The mode follows the handler, on every adapter whose handler signature tells.

A handler that takes the transaction runs atomic (its writes commit with its record: one round
trip); one that does not has its effects elsewhere (a payment provider, an e-mail), so it claims
first: claim, run, complete (two round trips for a first delivery), and a redelivery that meets the
completed record does not run it again, even in a container that never saw the key. ``mode=``
still wins. A Powertools handler ported by changing only its decorator (``def lambda_handler(event,
context)``) is therefore claim-first, as Powertools itself is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import (
    Engine,
    Mode,
    Transaction,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
)
from retrysafe.testing._events import (
    DrillContext,
    dynamodb_stream_record,
    http_event,
    kinesis_record,
    sqs_record,
)

from tests.runtime.test_default_scope import EVENT

SQS = {"Records": [sqs_record({"order_id": "o-1"}, message_id="m-1")]}
KINESIS = {"Records": [kinesis_record({"order_id": "o-1"}, sequence_number="1")]}
STREAM = {"Records": [dynamodb_stream_record("INSERT", {"pk": {"S": "o-1"}}, sequence_number="1",
                                             new_image={"pk": {"S": "o-1"}})]}


def _without_txn(adapter: str, calls: list[str], store: Any, **options: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The handler without a transaction (a foreign call) and how to deliver to it."""
    if adapter == "event":
        @idempotent(store=store, **options)
        def on_event(event: Any, context: Any) -> dict[str, str]:
            calls.append("provider")
            return {"charged": "o-1"}
        return on_event, lambda h: h(EVENT, DrillContext())
    if adapter == "http":
        @idempotent_http(operation="Charge", store=store, **options)
        def on_request(event: Any, context: Any) -> dict[str, Any]:
            calls.append("provider")
            return {"statusCode": 201, "body": json.dumps({"charged": "o-1"})}
        return on_request, lambda h: h(http_event({"order": "o-1"}, key="k-1"), DrillContext())
    if adapter == "sqs":
        @idempotent_sqs(store=store, **options)
        def on_message(message: Any) -> None:
            calls.append("provider")
        return on_message, lambda h: h(SQS, DrillContext())
    if adapter == "kinesis":
        @idempotent_kinesis(store=store, **options)
        def on_record(message: Any) -> None:
            calls.append("provider")
        return on_record, lambda h: h(KINESIS, DrillContext())

    @idempotent_dynamodb_stream(store=store, **options)
    def on_change(change: Any) -> None:
        calls.append("provider")
    return on_change, lambda h: h(STREAM, DrillContext())


def _with_txn(adapter: str, store: Any) -> Any:
    if adapter == "event":
        return idempotent(store=store)(lambda event, context, txn: None)
    if adapter == "http":
        return idempotent_http(lambda event, context, txn: {"statusCode": 200}, store=store)
    if adapter == "sqs":
        return idempotent_sqs(lambda message, txn: None, store=store)
    if adapter == "kinesis":
        return idempotent_kinesis(store=store)(lambda message, txn: None)
    return idempotent_dynamodb_stream(store=store)(lambda change, txn: None)


def _mode(handler: Any) -> Mode:
    for attribute in ("idempotency", "consumer"):
        if hasattr(handler, attribute):
            return getattr(handler, attribute).mode  # type: ignore[no-any-return]
    raise AssertionError(handler)


ADAPTERS = ["event", "http", "sqs", "kinesis", "dynamodb-stream"]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_handler_without_the_transaction_claims_first(adapter: str, store: Any, calls: Any) -> None:
    ran: list[str] = []
    handler, deliver = _without_txn(adapter, ran, store)
    assert _mode(handler) is Mode.CLAIM_FIRST
    calls.reset()
    deliver(handler)
    assert ran == ["provider"]
    assert calls.total == 2  # the claim, then the record-only completion


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_its_redelivery_in_a_cold_container_does_not_call_the_provider_again(adapter: str, store: Any) -> None:
    """Atomic would re-run the body (its transaction meets the record only after it ran)."""
    ran: list[str] = []
    first, deliver = _without_txn(adapter, ran, store)
    deliver(first)
    cold, _ = _without_txn(adapter, ran, store, engine=Engine(store, cache=None))
    deliver(cold)
    assert ran == ["provider"]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_handler_taking_the_transaction_runs_atomic_and_mode_wins(adapter: str, store: Any) -> None:
    assert _mode(_with_txn(adapter, store)) is Mode.ATOMIC
    forced, _ = _without_txn(adapter, [], store, mode="atomic")
    assert _mode(forced) is Mode.ATOMIC


def test_what_counts_as_taking_the_transaction() -> None:
    from retrysafe._adapter import takes_transaction

    class Consumer:
        def handle(self, message: Any, transaction: Transaction) -> None: ...

        def __call__(self, message: Any) -> None: ...

    assert takes_transaction(lambda message, txn: None, 2)
    assert takes_transaction(lambda message, *rest: None, 2)
    assert takes_transaction(lambda message, *, txn: None, 2)
    assert not takes_transaction(lambda message: None, 2)
    assert takes_transaction(Consumer().handle, 2) and not takes_transaction(Consumer().handle, 3)
    assert takes_transaction(Consumer(), 2)  # no code object to read: the documented form
