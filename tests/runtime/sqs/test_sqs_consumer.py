"""The inbox: idempotent SQS consumers against moto (DynamoDB and SQS in-process)."""

from __future__ import annotations

import inspect
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from retrysafe import names, sqs
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, sqs_event, sqs_record

from tests.helpers import ORDERS, receive_all


def applied(ddb: Any, name: str) -> int:
    """How many times the effect named ``name`` was applied."""
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def count_effect(message: Message, txn: Transaction) -> str:
    """The business effect: increment a counter named by the message."""
    name = message.content["counter"] if isinstance(message.content, dict) else "raw"
    txn.update({"pk": name}, "ADD n :one", values={":one": 1}, table=ORDERS)
    return name


def test_commit_then_crash_before_ack_redelivery_is_a_no_op(store: Any, ddb: Any, calls: Any) -> None:
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"counter": "c1"}))
    handler = idempotent_sqs(count_effect, subscriber="billing", store=store)

    first = receive_all(sqs, url, expected=1)
    assert handler(sqs_event(first, "inbox"), DrillContext()) == {"batchItemFailures": []}
    # The invocation dies before the event source mapping deletes the message: it comes back.
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"], VisibilityTimeout=0)
    again = receive_all(sqs, url, expected=1)
    assert again[0]["MessageId"] == first[0]["MessageId"]
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
    calls.reset()
    assert handler(sqs_event(again, "inbox"), DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "c1") == 1
    assert calls.calls == {"PutItem": 1}  # the receive count 2 is a retry hint: claim first, the handler not run


def test_one_round_trip_per_message_in_atomic_mode(store: Any, ddb: Any, calls: Any) -> None:
    handler = idempotent_sqs(count_effect, subscriber="billing", store=store)
    event = {"Records": [sqs_record({"counter": f"c{i}"}) for i in range(5)]}
    calls.reset()
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"TransactWriteItems": 5}
    calls.reset()
    assert handler(event, DrillContext()) == {"batchItemFailures": []}  # the whole batch redelivered
    assert calls.calls == {"TransactWriteItems": 5}
    assert [applied(ddb, f"c{i}") for i in range(5)] == [1] * 5


def test_one_failing_message_is_reported_alone(store: Any, ddb: Any) -> None:
    def handler_(message: Message, txn: Transaction) -> str:
        if message.content["counter"] == "bad":
            raise RuntimeError("downstream refused")
        return count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="billing", store=store)
    records = [sqs_record({"counter": "a"}), sqs_record({"counter": "bad"}), sqs_record({"counter": "b"})]
    response = handler({"Records": records}, DrillContext())
    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    assert (applied(ddb, "a"), applied(ddb, "bad"), applied(ddb, "b")) == (1, 0, 1)
    # Every message failing is still a partial batch response (no exception, no whole-batch retry surprise).
    assert handler({"Records": [records[1]]}, DrillContext())["batchItemFailures"] == [
        {"itemIdentifier": records[1]["messageId"]}]


def test_fifo_failure_fails_the_rest_of_its_group_and_order_survives(store: Any, ddb: Any) -> None:
    order: list[str] = []
    broken = {"a2"}

    def handler_(message: Message, txn: Transaction) -> None:
        name = message.content["counter"]
        if name in broken:
            raise RuntimeError("transient")
        order.append(name)
        count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="ledger", store=store)
    records = [sqs_record({"counter": n}, group=n[0], queue="inbox.fifo") for n in ("a1", "b1", "a2", "b2", "a3")]
    response = handler({"Records": records}, DrillContext())
    failed = [f["itemIdentifier"] for f in response["batchItemFailures"]]
    assert failed == [records[2]["messageId"], records[4]["messageId"]]  # a2 and a3, not b2
    assert order == ["a1", "b1", "b2"]
    broken.clear()  # the redelivery: a2 then a3, in order
    assert handler({"Records": [records[2], records[4]]}, DrillContext()) == {"batchItemFailures": []}
    assert order == ["a1", "b1", "b2", "a2", "a3"]


@pytest.mark.parametrize("body,attributes", [
    ({"counter": "k", "event_id": "evt-1"}, {}),
    ({"counter": "k"}, {names.KEY_MESSAGE_ATTRIBUTE: "evt-1"}),
    ({"version": "0", "id": "eb-assigned", "detail-type": "OrderPlaced", "source": "shop",
      "detail": {"counter": "k", "event_id": "evt-1"}}, {}),
    ({"Type": "Notification", "MessageId": "sns-assigned", "TopicArn": "arn:aws:sns:eu-west-1:1:t",
      "Message": json.dumps({"counter": "k"}),
      "MessageAttributes": {names.KEY_MESSAGE_ATTRIBUTE: {"Type": "String", "Value": "evt-1"}}}, {}),
])
def test_propagated_key_wins_over_the_transport_ids(store: Any, ddb: Any, body: Any,
                                                    attributes: dict[str, str]) -> None:
    keys: list[str] = []

    def handler_(message: Message, txn: Transaction) -> None:
        keys.append(message.key)
        count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="billing", store=store)
    # The same event published twice arrives as two SQS messages with different message ids.
    event = {"Records": [sqs_record(body, attributes=attributes), sqs_record(body, attributes=attributes)]}
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    # Atomic mode runs the handler again but its buffered writes are dropped with the duplicate's commit.
    assert keys == ["evt-1", "evt-1"] and applied(ddb, "k") == 1


def test_message_id_is_the_fallback_and_subscribers_are_independent(store: Any, ddb: Any) -> None:
    record = sqs_record({"counter": "shared"})
    billing = idempotent_sqs(count_effect, subscriber="billing", store=store)
    shipping = idempotent_sqs(count_effect, subscriber="shipping", store=store)
    for handler in (billing, shipping, billing, shipping):
        assert handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "shared") == 2
    # Without a propagated key, two sends of one body are two messages (two SQS message ids).
    assert billing({"Records": [sqs_record({"counter": "shared"})]}, DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "shared") == 3


def test_same_key_with_another_body_is_refused_and_has_no_effect(store: Any, ddb: Any) -> None:
    handler = idempotent_sqs(count_effect, subscriber="billing", store=store)
    first = sqs_record({"counter": "x"}, attributes={names.KEY_MESSAGE_ATTRIBUTE: "k1"})
    other = sqs_record({"counter": "y"}, attributes={names.KEY_MESSAGE_ATTRIBUTE: "k1"})
    assert handler({"Records": [first]}, DrillContext()) == {"batchItemFailures": []}
    assert handler({"Records": [other]}, DrillContext()) == {
        "batchItemFailures": [{"itemIdentifier": other["messageId"]}]}
    assert (applied(ddb, "x"), applied(ddb, "y")) == (1, 0)


def test_claim_first_leases_for_the_visibility_timeout_and_derives_downstream_keys(
        store: Any, ddb: Any, calls: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.VISIBILITY_TIMEOUT_ENV, "90")
    seen: list[tuple[float, str]] = []

    def charge(message: Message, txn: Transaction) -> str:
        claim = store.get(txn.scope.record_id)
        seen.append(((claim.lease_until_ms - claim.created_at_ms) / 1000, txn.derive_key("charge")))
        return count_effect(message, txn)

    handler = idempotent_sqs(charge, subscriber="payments", mode="claim_first", store=store)
    record = sqs_record({"counter": "charged"})
    calls.reset()
    assert handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"PutItem": 1, "GetItem": 1, "TransactWriteItems": 1}  # GetItem: the test's own
    assert handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert len(seen) == 1 and seen[0][0] == pytest.approx(90, abs=1)
    assert len(seen[0][1]) == 43 and applied(ddb, "charged") == 1


def test_a_failed_claim_first_message_is_released_and_retried(store: Any, ddb: Any) -> None:
    attempts: list[str] = []

    def flaky(message: Message, txn: Transaction) -> str:
        attempts.append(txn.derive_key("charge"))
        if len(attempts) == 1:
            raise TimeoutError("provider timed out")
        return count_effect(message, txn)

    handler = idempotent_sqs(flaky, subscriber="payments", mode="claim_first", lease_seconds=30,
                             store=store)
    record = sqs_record({"counter": "retried"})
    assert handler({"Records": [record]}, DrillContext())["batchItemFailures"]
    assert handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert attempts[0] == attempts[1] and applied(ddb, "retried") == 1


def test_configuration_errors_are_raised_at_decoration(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError):
        idempotent_sqs(count_effect, subscriber="", store=store)
    with pytest.raises(ConfigurationError):
        idempotent_sqs(count_effect, subscriber="s", mode="sometimes", store=store)
    monkeypatch.setenv(names.VISIBILITY_TIMEOUT_ENV, "soon")
    with pytest.raises(ConfigurationError):
        idempotent_sqs(count_effect, subscriber="s", store=store)


def test_without_a_visibility_timeout_a_claim_leases_for_the_invocation_s_remaining_time(
        store: Any, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The Lambda context reaches each record's processing (through the batch layer) for the lease.
    monkeypatch.delenv(names.VISIBILITY_TIMEOUT_ENV, raising=False)
    leases: list[float] = []

    def charge(message: Message, txn: Transaction) -> str:
        claim = store.get(txn.scope.record_id)
        leases.append((claim.lease_until_ms - claim.created_at_ms) / 1000)
        return count_effect(message, txn)

    handler = idempotent_sqs(charge, subscriber="payments", mode="claim_first", store=store)
    records = [sqs_record({"counter": "first"}), sqs_record({"counter": "second"})]
    assert handler({"Records": records}, DrillContext(remaining_ms=12_000)) == {"batchItemFailures": []}
    assert leases == [pytest.approx(12 + names.LEASE_MARGIN_SECONDS, abs=1)] * 2


def test_a_batch_inspects_no_signature(store: Any, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the Lambda context, Powertools' batch processor inspects the record handler's signature on every
    # batch (a tenth of a redelivery's own CPU): the consumer hands its context to the records itself.
    handler = idempotent_sqs(count_effect, subscriber="billing", store=store)
    inspected: list[Any] = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *args, **kwargs: inspected.append(args) or real(*args, **kwargs))
    event = {"Records": [sqs_record({"counter": "c1"}), sqs_record({"counter": "c2"})]}
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    assert handler(event, DrillContext()) == {"batchItemFailures": []}
    assert inspected == []
    assert (applied(ddb, "c1"), applied(ddb, "c2")) == (1, 1)


SNS_BODY = {"Type": "Notification", "MessageId": "sns-assigned", "TopicArn": "arn:aws:sns:eu-west-1:1:t",
            "Message": json.dumps({"counter": "k"}),
            "MessageAttributes": {names.KEY_MESSAGE_ATTRIBUTE: {"Type": "String", "Value": "evt-1"}}}


def test_each_body_is_unwrapped_once(store: Any, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The default key reads the envelope's attributes the consumer already has, not the body again.
    unwrapped: list[str] = []
    real = sqs.unwrap
    monkeypatch.setattr(sqs, "unwrap", lambda body: unwrapped.append(body) or real(body))
    keys: list[str] = []

    def handler_(message: Message, txn: Transaction) -> None:
        keys.append(message.key)
        count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="billing", store=store)
    records = [sqs_record(SNS_BODY), sqs_record({"counter": "plain"})]
    assert handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    # The notification's Message is unwrapped in turn: once too.
    assert unwrapped == [records[0]["body"], SNS_BODY["Message"], records[1]["body"]]
    assert keys == ["evt-1", records[1]["messageId"]]


def test_the_default_key_of_a_message_built_elsewhere_reads_its_envelope() -> None:
    record = SQSRecord(sqs_record(SNS_BODY))
    content, _ = sqs.unwrap(record.body)
    assert sqs.default_key()(Message(record=record, key="", content=content)) == "evt-1"


def test_a_handler_that_runs_a_batch_of_its_own_consumer_keeps_both_reports(store: Any, ddb: Any) -> None:
    # Batch processors are reused between batches; one in use is never handed to a nested batch.
    inner = [sqs_record({"counter": "inner-ok"}), sqs_record({"counter": "inner-bad"})]
    nested: list[Any] = []

    def handler_(message: Message, txn: Transaction) -> None:
        name = message.content["counter"]
        if name.endswith("bad"):
            raise RuntimeError("downstream refused")
        if name == "outer-nesting":
            nested.append(handler({"Records": inner}, DrillContext()))
        count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="billing", store=store)
    assert handler({"Records": [sqs_record({"counter": "warm"})]}, DrillContext()) == {"batchItemFailures": []}
    outer = [sqs_record({"counter": "outer-bad"}), sqs_record({"counter": "outer-nesting"}),
             sqs_record({"counter": "outer-ok"})]
    assert handler({"Records": outer}, DrillContext()) == {"batchItemFailures": [
        {"itemIdentifier": outer[0]["messageId"]}]}
    assert nested == [{"batchItemFailures": [{"itemIdentifier": inner[1]["messageId"]}]}]
    assert [applied(ddb, n) for n in ("warm", "outer-nesting", "outer-ok", "inner-ok")] == [1, 1, 1, 1]


def test_batches_on_two_threads_report_their_own_failures(store: Any, ddb: Any) -> None:
    # Both batches are inside their handler at once (the barrier): neither sees the other's outcome.
    barrier = threading.Barrier(2, timeout=30)

    def handler_(message: Message, txn: Transaction) -> None:
        barrier.wait()
        if message.content["counter"].endswith("bad"):
            raise RuntimeError("downstream refused")
        count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="billing", store=store)
    with ThreadPoolExecutor(2) as pool:  # a batch before: each thread now has a processor to reuse
        assert list(pool.map(lambda n: handler({"Records": [sqs_record({"counter": f"warm-{n}"})]}, DrillContext()),
                             range(2))) == [{"batchItemFailures": []}] * 2
    batches = {side: [sqs_record({"counter": f"{side}-bad"}), sqs_record({"counter": f"{side}-ok"})]
               for side in ("left", "right")}
    with ThreadPoolExecutor(2) as pool:
        reports = dict(zip(batches, pool.map(lambda records: handler({"Records": records}, DrillContext()),
                                             batches.values())))
    assert reports == {side: {"batchItemFailures": [{"itemIdentifier": records[0]["messageId"]}]}
                       for side, records in batches.items()}
    assert (applied(ddb, "left-ok"), applied(ddb, "right-ok")) == (1, 1)


@pytest.mark.parametrize("failing", [set(), {"b"}, {"a", "c"}, {"a", "b", "c"}])
def test_a_standard_queue_s_batch_is_reported_as_powertools_reports_it(
        store: Any, ddb: Any, failing: set[str]) -> None:
    # retrysafe reports a standard queue's batch itself; Powertools' BatchProcessor is the reference.
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    seen: list[Any] = []

    def handler_(message: Message, txn: Transaction) -> None:
        seen.append(message.record)
        if message.content["counter"] in failing:
            raise RuntimeError("downstream refused")
        count_effect(message, txn)

    handler = idempotent_sqs(handler_, subscriber="billing", store=store)
    event = {"Records": [sqs_record({"counter": name}) for name in ("a", "b", "c")]}

    def reference(record: SQSRecord) -> None:
        if json.loads(record.body)["counter"] in failing:
            raise RuntimeError("downstream refused")

    expected = process_partial_response(event, reference, BatchProcessor(EventType.SQS,
                                                                          raise_on_entire_batch_failure=False))
    assert handler(event, DrillContext()) == dict(expected)
    assert [type(record) for record in seen] == [SQSRecord] * 3
    assert [record.message_id for record in seen] == [r["messageId"] for r in event["Records"]]


@pytest.mark.parametrize("event", [{"Records": []}, {}])
def test_an_event_that_is_no_batch_is_refused_as_powertools_refuses_it(store: Any, event: Any) -> None:
    from aws_lambda_powertools.utilities.batch.exceptions import UnexpectedBatchTypeError

    handler = idempotent_sqs(count_effect, subscriber="billing", store=store)
    with pytest.raises(UnexpectedBatchTypeError):
        handler(event, DrillContext())
