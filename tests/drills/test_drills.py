"""The nine drills on every path, written with the retrysafe pytest plugin.

Drill numbers are those of the contract page (docs/contract.md): 1 lost response, 2 race, 3 key reuse,
4 consumer crash before the ack, 5 replay with the same id, 6 outbox published
twice, 7 crash after the foreign call, 8 late replay after expiry, 9 replays
equivalent (asserted inside every drill). Each runs on botocore's client and on the fast transport.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from retrysafe import names
from retrysafe._crt import CrtTransport, selected_transport
from retrysafe._store import DynamoStore
from retrysafe.testing import ALWAYS, Clock, DrillFailed, Drills, DynamoSemantics, publish_twice

from tests.drills import handlers
from tests.drills.handlers import (
    bill,
    capture,
    charge_card,
    charge_event,
    create_order,
    invoice,
    notify,
    pay_order,
    provider,
    quote_order,
    receiver,
    ship,
)


@pytest.fixture(scope="module")
def crt_client() -> Iterator[CrtTransport]:
    """The fast transport as ``RETRYSAFE_TRANSPORT=crt`` selects it, to moto's server on 127.0.0.1 (which
    serves the plugin's in-process tables); one per module, as a warm container keeps its client."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    made = selected_transport("eu-west-1", {names.TRANSPORT_ENV: "crt", "AWS_CONFIG_FILE": os.devnull,
                                            "AWS_ENDPOINT_URL_DYNAMODB": f"http://{host}:{port}"})
    assert made is not None
    yield made
    made.close()
    server.stop()


@pytest.fixture(autouse=True, params=["botocore", "crt"])
def transport(request: pytest.FixtureRequest, retrysafe_table: DynamoStore, retrysafe_clock: Clock,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every drill runs on the store's botocore client and on the fast transport. The handlers keep the
    store from the environment (one per table, shared by the tests): on ``crt`` its client is swapped."""
    if request.param != "crt":
        yield "botocore"
        return
    client = request.getfixturevalue("crt_client")
    monkeypatch.setattr(retrysafe_table, "_client", client)
    semantics = DynamoSemantics(retrysafe_clock).install(client)
    yield "crt"
    semantics.uninstall(client)


def test_the_store_runs_on_the_transport_the_drill_names(transport: str, retrysafe_table: Any) -> None:
    assert isinstance(retrysafe_table.client, CrtTransport) == (transport == "crt")


DRILLS = ["response_lost", "race", "key_reuse", "redelivery", "crash_after_foreign_call", "late_replay"]


def amount(variant: int) -> dict[str, Any]:
    return {"amount": 10 + variant}


def order_event(variant: int) -> dict[str, Any]:
    return {"order": "o-1", "amount": 10 + variant}


PATHS = {
    "http-atomic": (lambda: create_order, amount, lambda orders, table: lambda: orders("order#")),
    # Its only effect is the stored answer (one PutItem, no transaction): one completed record per intent.
    "http-atomic-record-only": (lambda: quote_order, amount, lambda orders, table: lambda: completed_records(table)),
    "http-claim-first": (lambda: pay_order, amount, lambda orders, table: provider.charges),
    "sqs-atomic": (lambda: bill, order_event, None),
    "sqs-claim-first": (lambda: notify, order_event, lambda orders, table: provider.charges),
    "webhook": (lambda: receiver, order_event, None),
    "webhook-standard": (lambda: handlers.standard_receiver, order_event, None),
    "workflow-task": (lambda: capture, order_event, lambda orders, table: provider.charges),
    "event-atomic": (lambda: ship, amount, lambda orders, table: lambda: orders("order#")),
    "event-claim-first": (lambda: charge_event, amount, lambda orders, table: provider.charges),
    "function-atomic": (lambda: invoice, amount, lambda orders, table: lambda: orders("order#")),
    "function-claim-first": (lambda: charge_card, amount, lambda orders, table: provider.charges),
    # async def handlers and functions (handlers.py): the same drills, the same effects
    "http-async-claim-first": (lambda: handlers.pay_order_async, amount, lambda orders, table: provider.charges),
    "sqs-async-atomic": (lambda: handlers.bill_async, order_event, None),
    "workflow-task-async": (lambda: handlers.capture_async, order_event, lambda orders, table: provider.charges),
    "event-async-atomic": (lambda: handlers.ship_async, amount, lambda orders, table: lambda: orders("order#")),
    "event-async-claim-first": (lambda: handlers.charge_event_async, amount,
                                lambda orders, table: provider.charges),
    "function-async-atomic": (lambda: handlers.invoice_async, amount, lambda orders, table: lambda: orders("order#")),
    "function-async-claim-first": (lambda: handlers.charge_card_async, amount,
                                   lambda orders, table: provider.charges),
}


def completed_records(table: Any) -> int:
    """Completed idempotency records in the table."""
    items = table.client.scan(TableName=table.table_name, ConsistentRead=True)["Items"]
    return sum(1 for item in items if item["pk"]["S"].startswith(names.RECORD_PREFIX)
               and item.get("st", {}).get("S") == "completed")


@pytest.fixture(params=sorted(PATHS))
def drills(request: pytest.FixtureRequest, orders: Any, retrysafe_table: Any, retrysafe_drills: Any) -> Drills:
    handler, payload, effects = PATHS[request.param]
    return retrysafe_drills(handler(), payload, effects=effects(orders, retrysafe_table) if effects else None)


@pytest.mark.parametrize("drill", DRILLS)
def test_drill(drills: Drills, drill: str) -> None:
    report = getattr(drills, drill)()
    assert report.effects == 1, report.story()


def test_claim_first_crash_holds_the_lease_then_takes_over(orders: Any, retrysafe_drills: Any) -> None:
    report = retrysafe_drills(pay_order, amount, effects=provider.charges).crash_after_foreign_call()
    story = report.story()
    assert "lease still holds: in_flight (409)" in story and "lease has lapsed" in story, story


def test_workflow_task_takeover_resumes_after_its_recovery_point(orders: Any, retrysafe_drills: Any) -> None:
    drills = retrysafe_drills(capture, order_event, effects=provider.charges)
    # The charge's checkpoint committed, then the task died before completing: the takeover must not charge again.
    report = drills.crash_after_foreign_call(after_checkpoint=True)
    story = report.story()
    assert "crash after its recovery point committed: crashed" in story and "lease has lapsed" in story, story


@pytest.mark.parametrize("producer", ["http", "webhook"])
def test_drill_6_outbox_published_twice_is_applied_once(orders: Any, retrysafe_drills: Any,
                                                        retrysafe_table: Any, producer: str) -> None:
    if producer == "http":
        retrysafe_drills(create_order, amount).redelivery()
        consumer = bill
    else:
        retrysafe_drills(receiver, order_event).redelivery()
        consumer = handlers.bill
    report = publish_twice(retrysafe_table, consumer, effects=lambda: orders("invoice#"))
    assert report.effects == 1


def test_a_broken_handler_fails_the_drill_in_plain_words(orders: Any, retrysafe_drills: Any) -> None:
    """A handler that writes outside the transaction repeats its effect: the drill says so."""
    from retrysafe import idempotent_http

    @idempotent_http(operation="Leaky", mode="claim_first")
    def leaky(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        provider.charge(f"random-{len(provider.ledger)}", 1)  # no derived key: a new charge every run
        return {"statusCode": 200, "body": "{}"}

    drills = retrysafe_drills(leaky, amount, effects=provider.charges)
    with pytest.raises(DrillFailed) as failure:
        drills.crash_after_foreign_call()
    message = str(failure.value)
    assert "effects counter grew by 2; expected 1" in message and "Leaky" not in message
    assert "1. first invocation, crash before the completing transaction: crashed" in message
    assert "lease has lapsed" in message


@pytest.mark.parametrize("times", [1, ALWAYS], ids=["once", "until-retries-run-out"])
def test_lost_response_drill(drills: Drills, times: int) -> None:
    report = drills.lost_response(times=times)
    assert "its calls: " in report.story()
