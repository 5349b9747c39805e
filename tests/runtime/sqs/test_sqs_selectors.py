"""``key=`` and ``fingerprint=`` selectors on ``@idempotent_sqs``: a producer re-sending the same order with a new
``sent_at`` (a new SQS message) is acknowledged once instead of ending in the DLQ."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, sqs_record

from tests.helpers import ORDERS


def bill(message: Message, txn: Transaction) -> None:
    txn.update({"pk": f"invoice#{message.key}"}, "ADD n :one", values={":one": 1}, table=ORDERS)


def billed(ddb: Any, key: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": f"invoice#{key}"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def eventbridge(detail: dict[str, Any]) -> dict[str, Any]:
    return {"version": "0", "id": "eb-new-each-time", "detail-type": "OrderPlaced", "source": "shop",
            "detail": detail}


def test_a_re_sent_order_with_a_new_sent_at_is_applied_once(store: Any, ddb: Any, calls: Any) -> None:
    handler = idempotent_sqs(bill, subscriber="billing", key="body.order_id",
                             fingerprint="{order_id: body.order_id, amount: body.amount}", store=store)
    first = sqs_record(eventbridge({"order_id": "o1", "amount": 5, "sent_at": "10:00"}))
    resent = sqs_record(eventbridge({"order_id": "o1", "amount": 5, "sent_at": "10:05"}))
    calls.reset()
    assert handler({"Records": [first, resent]}, DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"TransactWriteItems": 2} and billed(ddb, "o1") == 1
    changed = sqs_record(eventbridge({"order_id": "o1", "amount": 9, "sent_at": "10:06"}))
    assert handler({"Records": [changed]}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": changed["messageId"]}]}
    assert billed(ddb, "o1") == 1


def test_without_a_fingerprint_selector_the_re_sent_order_is_refused(store: Any, ddb: Any) -> None:
    handler = idempotent_sqs(bill, subscriber="billing", key="body.order_id", store=store)
    first = sqs_record({"order_id": "o1", "amount": 5, "sent_at": "10:00"})
    resent = sqs_record({"order_id": "o1", "amount": 5, "sent_at": "10:05"})
    assert handler({"Records": [first, resent]}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": resent["messageId"]}]}


def test_a_key_expression_that_finds_nothing_fails_the_record_with_no_call(store: Any, calls: Any) -> None:
    handler = idempotent_sqs(bill, subscriber="billing", key="body.order_id", store=store)
    record = sqs_record({"amount": 5})
    calls.reset()
    assert handler({"Records": [record]}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert calls.total == 0


def test_callables_are_given_the_message(store: Any, ddb: Any) -> None:
    handler = idempotent_sqs(bill, subscriber="billing", key=lambda message: message.content["order_id"],
                             fingerprint=lambda message: message.content["order_id"], store=store)
    records = [sqs_record(json.dumps({"order_id": "o2", "n": n})) for n in range(2)]
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert billed(ddb, "o2") == 1


def test_malformed_selectors_are_refused_at_decoration(store: Any) -> None:
    with pytest.raises(ConfigurationError):
        idempotent_sqs(bill, subscriber="billing", key="body.order_id[", store=store)
    with pytest.raises(ConfigurationError):
        idempotent_sqs(bill, subscriber="billing", fingerprint="{a", store=store)


def test_the_message_id_alone_is_a_key_expression(store: Any, ddb: Any, calls: Any) -> None:
    """``key="messageId"`` (Powertools' ``event_key_jmespath="messageId"``): a redelivery is acknowledged,
    the same content under another message id is another intent."""
    def bill_order(message: Message, txn: Transaction) -> None:
        assert message.key == message.message_id
        bill(Message(message.record, message.content["order_id"], message.content), txn)

    handler = idempotent_sqs(bill_order, subscriber="billing", key="messageId", store=store)
    first = sqs_record({"order_id": "o3", "amount": 5})
    again = sqs_record({"order_id": "o3", "amount": 5})
    calls.reset()
    assert handler({"Records": [first, first]}, DrillContext()) == {"batchItemFailures": []}
    assert billed(ddb, "o3") == 1
    assert handler({"Records": [again]}, DrillContext()) == {"batchItemFailures": []}
    assert billed(ddb, "o3") == 2
