"""Records of different adapters never share a namespace (moto, real-shaped events).

An HTTP caller whose authenticated tenant is ``billing``, an SQS consumer with ``subscriber="billing"``,
a webhook receiver with ``source="billing"`` and a Step Functions task with ``tenant="billing"``, all
and the event, plain-function, Kinesis and DynamoDB Streams adapters with that tenant
(``subscriber=`` / ``subscriber=``), all with the same operation name and key, are independent intents: each runs its work once, none
answers with another's record (a replay) or refuses the other as a reused key (422, a dead letter).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import (
    Transaction,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_function,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
    idempotent_task,
    names,
)
from retrysafe.errors import RetrysafeError
from retrysafe.sqs import Message
from retrysafe.streams import DynamoDBChange, KinesisMessage
from retrysafe.testing._events import (
    DrillContext,
    dynamodb_stream_record,
    http_event,
    kinesis_record,
    sqs_record,
    task_payload,
)
from retrysafe.webhook import Stripe, WebhookReceiver

from tests.helpers import ORDERS, TABLE

TENANT = "billing"
#: The webhook receiver's operation for a Stripe endpoint without a name (``webhook/<endpoint>``).
OPERATION = "webhook/-"
#: A Stripe event id: the webhook's signed identity, the HTTP key, the SQS message key and the task's execution.
KEY = "evt_42"
SECRET = b"whsec_namespaces"


def effect(txn: Transaction, adapter: str) -> None:
    txn.update({"pk": f"effect#{adapter}"}, "ADD n :one", values={":one": 1}, table=ORDERS)


def applied(ddb: Any, adapter: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": f"effect#{adapter}"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def http(store: Any) -> str:
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effect(txn, "http")
        return {"statusCode": 201, "body": json.dumps({"by": "http"})}

    response = idempotent_http(create, operation=OPERATION, store=store)(
        http_event({"amount": 10}, key=KEY, tenant=TENANT), DrillContext())
    replayed = response.get("headers", {}).get(names.REPLAYED_HEADER) == "true"
    return f"{response['statusCode']}{' replayed' if replayed else ''}"


def sqs(store: Any) -> str:
    def consume(message: Message, txn: Transaction) -> None:
        effect(txn, "sqs")

    handler = idempotent_sqs(consume, subscriber=TENANT, operation=OPERATION, store=store)
    record = sqs_record({"amount": 10}, attributes={names.KEY_MESSAGE_ATTRIBUTE: KEY})
    return "failed" if handler({"Records": [record]}, DrillContext())["batchItemFailures"] else "done"


def webhook(store: Any) -> str:
    now = time.time()
    body = json.dumps({"id": KEY, "type": "invoice.paid"})
    signature = hmac.new(SECRET, f"{int(now)}.{body}".encode(), hashlib.sha256).hexdigest()
    receiver = WebhookReceiver(Stripe(clock=lambda: now), tenant=TENANT, secrets=lambda: [SECRET], store=store,
                               on_receipt=lambda receipt, txn: effect(txn, "webhook"))
    response = receiver(http_event(raw_body=body, key=None, tenant=None, route="/hooks/stripe",
                                   headers={"Stripe-Signature": f"t={int(now)},v1={signature}"}), DrillContext())
    replayed = response.get("headers", {}).get(names.REPLAYED_HEADER) == "true"
    return f"{response['statusCode']}{' replayed' if replayed else ''}"


def task(store: Any) -> str:
    def charge(state: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effect(txn, "task")
        return {"by": "task"}

    handler = idempotent_task(charge, tenant=TENANT, operation=OPERATION, store=store)
    try:
        result = handler(task_payload({"amount": 10}, execution=KEY, state="Charge"), DrillContext())
    except RetrysafeError as error:  # TaskKeyMismatch: the other adapter's record refused it as a reused key
        return type(error).__name__
    assert result == {"by": "task"}
    return "done"


def event(store: Any) -> str:
    def react(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effect(txn, "event")
        return {"by": "event"}

    handler = idempotent(subscriber=TENANT, operation=OPERATION, key="detail.id", store=store)(react)
    bridged = {"version": "0", "id": "e-1", "detail-type": "invoice.paid", "source": "stripe", "account": "1",
               "time": "2026-12-01T00:00:00Z", "region": "eu-west-1", "resources": [], "detail": {"id": KEY}}
    handler(bridged, DrillContext())
    return "done"


def function(store: Any) -> str:
    @idempotent_function(data_keyword_argument="invoice", subscriber=TENANT, operation=OPERATION, key="id",
                         store=store)
    def pay(invoice: dict[str, Any], txn: Transaction) -> str:
        effect(txn, "function")
        return "paid"

    assert pay(invoice={"id": KEY}) == "paid"
    return "done"


def kinesis(store: Any) -> str:
    def book(message: KinesisMessage, txn: Transaction) -> None:
        effect(txn, "kinesis")

    handler = idempotent_kinesis(subscriber=TENANT, operation=OPERATION, key="kinesis.data.id", store=store)(book)
    batch = {"Records": [kinesis_record({"id": KEY}, sequence_number="1")]}
    return "failed" if handler(batch, DrillContext())["batchItemFailures"] else "done"


def stream(store: Any) -> str:
    def index(change: DynamoDBChange, txn: Transaction) -> None:
        effect(txn, "stream")

    handler = idempotent_dynamodb_stream(subscriber=TENANT, operation=OPERATION, key="dynamodb.Keys.pk.S",
                                         store=store)(index)
    batch = {"Records": [dynamodb_stream_record("INSERT", {"pk": {"S": KEY}}, sequence_number="1",
                                                new_image={"pk": {"S": KEY}})]}
    return "failed" if handler(batch, DrillContext())["batchItemFailures"] else "done"


ADAPTERS: dict[str, Callable[[Any], str]] = {"http": http, "sqs": sqs, "webhook": webhook, "task": task,
                                             "event": event, "function": function, "kinesis": kinesis,
                                             "stream": stream}
EXECUTED = {"http": "201", "sqs": "done", "webhook": "202", "task": "done", "event": "done", "function": "done",
            "kinesis": "done", "stream": "done"}
#: What a repeat of the same request answers within the adapter's own namespace.
REPEATED = {"http": "201 replayed", "sqs": "done", "webhook": "202 replayed", "task": "done", "event": "done",
            "function": "done", "kinesis": "done", "stream": "done"}


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations(ADAPTERS, 2)),
                         ids=lambda name: str(name))
def test_two_adapters_sharing_tenant_operation_and_key_are_independent(store: Any, ddb: Any, first: str,
                                                                       second: str) -> None:
    assert ADAPTERS[first](store) == EXECUTED[first]
    assert ADAPTERS[second](store) == EXECUTED[second]
    assert (applied(ddb, first), applied(ddb, second)) == (1, 1)
    records = [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]
    assert len(records) == 2
    # Each is still idempotent within its own namespace: repeating both applies nothing more.
    assert (ADAPTERS[first](store), ADAPTERS[second](store)) == (REPEATED[first], REPEATED[second])
    assert (applied(ddb, first), applied(ddb, second)) == (1, 1)
