"""Every Python snippet of the documentation site runs here, against moto, and shows what the page says.

The snippets live in ``examples/snippets/`` (mypy checks them; the pages include them with
``--8<--``). Each test imports a snippet's module as a user would and asserts the behaviour the
page describes next to it, DynamoDB round trips included.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import boto3
import pytest
from retrysafe import DynamoStore, names
from retrysafe.outbox._targets import SqsTarget
from retrysafe.outbox.publisher import Publisher
from retrysafe.outbox.publisher import handler as publish
from retrysafe.testing import engine_of, outbox_stream_event, publish_twice
from retrysafe.testing._events import DrillContext, api_event, sqs_record, task_payload

from tests.helpers import ROOT, CallCounter, create_business_table

SNIPPETS = ROOT / "examples" / "snippets"


def fresh(name: str) -> ModuleType:
    """The snippet module, imported anew (a cold start: its engine binds to this test's moto)."""
    module_name = f"examples.snippets.{name}"
    return importlib.reload(importlib.import_module(module_name))


def items(store: DynamoStore, table: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = store.client.scan(TableName=table, ConsistentRead=True)["Items"]
    return result


def outbox(store: DynamoStore) -> list[str]:
    return sorted(i["etype"]["S"] for i in items(store, store.table_name) if i.get("kind", {}).get("S") == "outbox")


@pytest.fixture
def tables(lambda_container: None, retrysafe_table: DynamoStore) -> DynamoStore:
    """moto with the idempotency table (the pytest plugin's fixture) and the snippets' business tables."""
    for name in ("orders", "invoices", "pull-requests"):
        create_business_table(retrysafe_table.client, name)
    return retrysafe_table


def order_request(key: str, amount: int = 42, **fields: Any) -> dict[str, Any]:
    return api_event(json.dumps({"amount": amount, **fields}), headers={names.IDEMPOTENCY_KEY_HEADER: key,
                                                                       "Content-Type": "application/json"})


def test_atomic_handler_commits_once_and_replays_in_one_round_trip(tables: DynamoStore) -> None:
    snippet = fresh("http_atomic")
    calls = CallCounter(engine_of(snippet.handler).store.client)
    first = snippet.handler(order_request("order-1"), DrillContext())
    assert first["statusCode"] == 201 and calls.calls == {"TransactWriteItems": 1}
    calls.reset()
    warm = snippet.handler(order_request("order-1"), DrillContext())  # this container's record cache answers
    assert calls.total == 0 and warm["body"] == first["body"] and warm["headers"][names.REPLAYED_HEADER] == "true"
    engine_of(snippet.handler).cache.clear()                           # a container that has not seen the key
    replay = snippet.handler(order_request("order-1"), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    assert replay["statusCode"] == 201 and replay["body"] == first["body"]
    assert replay["headers"][names.REPLAYED_HEADER] == "true"
    assert replay["headers"]["Location"] == first["headers"]["Location"]
    assert [i["status"]["S"] for i in items(tables, "orders")] == ["placed"]
    assert outbox(tables) == ["OrderPlaced"]
    reused = snippet.handler(order_request("order-1", amount=43), DrillContext())
    assert reused["statusCode"] == 422
    assert reused["headers"]["Content-Type"] == "application/problem+json"
    assert len(items(tables, "orders")) == 1


def test_claim_first_handler_charges_once_and_replays_without_running(tables: DynamoStore) -> None:
    from examples.snippets.payments import payments

    snippet = fresh("http_claim_first")
    calls = CallCounter(engine_of(snippet.handler).store.client)
    before = payments.charge_count()
    first = snippet.handler(order_request("charge-1", id="o-1"), DrillContext())
    assert first["statusCode"] == 200 and calls.total == 2          # claim + completing transaction
    calls.reset()
    engine_of(snippet.handler).cache.clear()                           # a replay on another container
    replay = snippet.handler(order_request("charge-1", id="o-1"), DrillContext())
    assert calls.total == 1 and replay["body"] == first["body"]
    assert replay["headers"][names.REPLAYED_HEADER] == "true"
    assert payments.charge_count() == before + 1
    (order,) = items(tables, "orders")
    assert order["status"]["S"] == "paid" and order["charge_id"]["S"] == json.loads(first["body"])["charge"]
    assert outbox(tables) == ["PaymentCaptured"]


def test_middleware_route_replays_with_the_stored_location(tables: DynamoStore) -> None:
    snippet = fresh("http_middleware")

    def post(key: str) -> dict[str, Any]:
        event = api_event(json.dumps({"amount": 7}), headers={names.IDEMPOTENCY_KEY_HEADER: key,
                                                              "Content-Type": "application/json"}, version="1.0")
        result: dict[str, Any] = snippet.handler(event, DrillContext())
        # A REST resolver answers with multiValueHeaders.
        result["headers"] = {k: v[0] for k, v in result.get("multiValueHeaders", {}).items()}
        return result

    first, replay = post("mw-1"), post("mw-1")
    assert first["statusCode"] == replay["statusCode"] == 201
    assert json.loads(replay["body"]) == json.loads(first["body"])
    assert replay["headers"][names.REPLAYED_HEADER] == "true"
    assert replay["headers"]["Location"] == first["headers"]["Location"]
    assert len(items(tables, "orders")) == 1


def test_consumer_applies_an_event_published_twice_once(tables: DynamoStore) -> None:
    fresh("http_atomic").handler(order_request("order-2"), DrillContext())
    consumer = fresh("sqs_consumer")
    report = publish_twice(tables, consumer.handler)                 # drill 6, through the real publisher
    assert report.effects == 1
    (invoice,) = items(tables, "invoices")
    assert invoice["amount"]["N"] == "42"
    assert outbox(tables) == ["InvoiceCreated", "OrderPlaced"]


def test_consumer_redelivery_is_one_round_trip_and_no_effect(tables: DynamoStore) -> None:
    consumer = fresh("sqs_consumer")
    calls = CallCounter(engine_of(consumer.handler).store.client)
    body = json.loads((SNIPPETS / "outbox_envelope.json").read_text())
    for receive_count in (1, 2):                                     # a crash before the ack: redelivered
        record = sqs_record(body, message_id="m-1", receive_count=receive_count)
        engine_of(consumer.handler).cache.clear()                      # redelivered to another container
        assert consumer.handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    # The first delivery commits in one transaction; the redelivery (receive count 2, a retry hint) is one
    # PutItem answered with the stored record: the handler does not run.
    assert calls.calls == {"TransactWriteItems": 1, "PutItem": 1}
    assert len(items(tables, "invoices")) == 1


def test_outbox_envelope_page_matches_what_the_publisher_sends(tables: DynamoStore) -> None:
    fresh("http_atomic").handler(order_request("order-3"), DrillContext())
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="envelopes")["QueueUrl"]
    publish(outbox_stream_event(tables), None, publisher=Publisher(SqsTarget(url, client=sqs), tables))
    (message,) = sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    sent = json.loads(message["Body"])
    documented = json.loads((SNIPPETS / "outbox_envelope.json").read_text())
    assert sorted(sent) == sorted(documented)
    assert sorted(sent["payload"]) == sorted(documented["payload"])
    assert sent["event_type"] == documented["event_type"] and sent["sequence"] == documented["sequence"]
    assert message["MessageAttributes"][names.KEY_MESSAGE_ATTRIBUTE]["StringValue"] == sent["event_id"]


@pytest.fixture
def github_secret(tables: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[bytes]:
    from aws_lambda_powertools.utilities import parameters

    secret = b"it's a secret to everybody"
    arn = boto3.client("secretsmanager").create_secret(Name="github", SecretString=secret.decode())["ARN"]
    monkeypatch.setenv(names.WEBHOOK_SECRET_ARN_ENV, arn)
    parameters.clear_caches()  # type: ignore[no-untyped-call]
    yield secret
    parameters.clear_caches()  # type: ignore[no-untyped-call]


def github_delivery(secret: bytes, body: dict[str, Any], delivery: str, *, signature: str | None = None) -> Any:
    raw = json.dumps(body)
    signed = "sha256=" + hmac.new(secret, raw.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Delivery": delivery, "X-GitHub-Hook-ID": "hook-1", "X-GitHub-Event": "pull_request",
               "X-Hub-Signature-256": signature or signed, "Content-Type": "application/json"}
    return api_event(raw, headers=headers, tenant=None, route="/webhooks/github")


def test_webhook_receiver_receives_a_redelivery_once(tables: DynamoStore, github_secret: bytes) -> None:
    snippet = fresh("webhook_receiver")
    pr = {"action": "opened", "number": 7, "updated_at": "2026-11-30T10:00:00Z"}
    first = snippet.handler(github_delivery(github_secret, pr, "d-1"), DrillContext())
    again = snippet.handler(github_delivery(github_secret, pr, "d-1"), DrillContext())
    assert first["statusCode"] == again["statusCode"] == 202
    assert json.loads(first["body"]) == {"status": "accepted", "delivery": "d-1"}
    assert again["headers"][names.REPLAYED_HEADER] == "true" and again["body"] == first["body"]
    assert outbox(tables) == [names.WEBHOOK_RECEIPT_EVENT]
    calls = CallCounter(engine_of(snippet.handler).store.client)
    forged = snippet.handler(github_delivery(github_secret, pr, "d-2", signature="sha256=" + "0" * 64),
                             DrillContext())
    assert forged["statusCode"] == 401 and calls.total == 0


def test_order_aware_consumer_ignores_a_stale_delivery(tables: DynamoStore, github_secret: bytes) -> None:
    receiver, consumer = fresh("webhook_receiver"), fresh("order_aware")
    newer = {"action": "closed", "number": 7, "updated_at": "2026-11-30T11:00:00Z"}
    older = {"action": "opened", "number": 7, "updated_at": "2026-11-30T10:00:00Z"}
    for delivery, pr in (("d-2", newer), ("d-1", older)):               # they arrive out of order
        receiver.handler(github_delivery(github_secret, pr, delivery), DrillContext())
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="receipts")["QueueUrl"]
    publish(outbox_stream_event(tables), None, publisher=Publisher(SqsTarget(url, client=sqs), tables))
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])["Messages"]
    by_delivery = {json.loads(m["Body"])["payload"]["delivery_id"]: m for m in messages}
    for delivery in ("d-2", "d-1"):
        message = by_delivery[delivery]
        record = sqs_record(message["Body"], message_id=message["MessageId"],
                            attributes={k: v["StringValue"] for k, v in message["MessageAttributes"].items()})
        assert consumer.handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    (stored,) = items(tables, "pull-requests")
    assert stored["state"]["S"] == "closed" and stored["version"]["S"] == newer["updated_at"]


def test_task_runs_each_step_once_and_replays_its_result(tables: DynamoStore) -> None:
    from examples.snippets.payments import provider

    snippet = fresh("task")
    before = provider.call_count()
    payload = task_payload({"orderId": "o-9", "amount": 4200}, execution="exec-1", state="ChargePayment")
    first = snippet.charge_payment(payload, DrillContext())
    assert snippet.charge_payment(payload, DrillContext()) == first
    assert set(first) == {"chargeId"}
    assert provider.call_count() == before + 2                       # authorize + capture, once each
    assert [i["status"]["S"] for i in items(tables, "orders")] == ["authorized"]
    declined = task_payload({"orderId": "o-10", "amount": 10**6}, execution="exec-2", state="ChargePayment")
    with pytest.raises(snippet.PaymentDeclined):
        snippet.charge_payment(declined, DrillContext())


def test_task_refuses_the_same_state_with_another_input(tables: DynamoStore) -> None:
    from retrysafe.errors import TaskKeyMismatch

    snippet = fresh("task")
    snippet.charge_payment(task_payload({"orderId": "o-11", "amount": 1}, execution="exec-3"), DrillContext())
    with pytest.raises(TaskKeyMismatch):
        snippet.charge_payment(task_payload({"orderId": "o-11", "amount": 2}, execution="exec-3"), DrillContext())


def test_multi_region_store_sends_each_tenants_writes_to_its_home_region(tables: DynamoStore) -> None:
    """multi-region.md: the function runs in eu-west-1; acme's home is us-east-1. Each request is one
    TransactWriteItems to its tenant's home replica and none to the other; acme's retry replays there."""
    from retrysafe._keys import Scope

    east = boto3.client("dynamodb", region_name="us-east-1")
    create_business_table(east, "orders")
    from retrysafe.testing._plugin import create_table

    create_table(east, tables.table_name)
    module = fresh("multi_region")
    assert module.store.region == "eu-west-1"
    home = {region: module.store.for_scope(Scope(tenant, "CreateOrder", "k", adapter=names.HTTP_ADAPTER)).client
            for tenant, region in (("tenant-a", "eu-west-1"), ("acme", "us-east-1"))}
    counters = {region: CallCounter(client) for region, client in home.items()}
    for tenant in ("tenant-a", "acme", "acme"):
        event = api_event(json.dumps({"amount": 42}), headers={names.IDEMPOTENCY_KEY_HEADER: "k-1"}, tenant=tenant)
        response = module.handler(event, DrillContext())
        assert response["statusCode"] == 201
    assert response["headers"][names.REPLAYED_HEADER] == "true"  # acme's retry, from acme's home
    assert dict(counters["eu-west-1"].calls) == {"TransactWriteItems": 1}
    assert dict(counters["us-east-1"].calls) == {"TransactWriteItems": 2}
    for region, client in home.items():
        orders = client.scan(TableName="orders")["Items"]
        assert len(orders) == 1, region  # one order per tenant, each in its tenant's home region
