"""``@idempotent``: a Lambda handler of any event, against moto, with the round trips asserted."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, S3Event, SNSEvent
from retrysafe import Engine, Transaction, idempotent
from retrysafe._generic import default_fingerprint, natural_key
from retrysafe.errors import (
    ConfigurationError,
    KeyNotFoundError,
    KeyReuseMismatchError,
    UnstorableResultError,
)
from retrysafe.metrics import UNKEYED
from retrysafe.names import RECORD_PREFIX
from retrysafe.testing._events import DrillContext, http_event, sqs_record

from tests.helpers import ORDERS, TABLE
from tests.runtime.generic.events import EVENTBRIDGE, S3, SNS, event


def applied(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def count(txn: Transaction, name: str) -> None:
    txn.update({"pk": name}, "ADD n :one", values={":one": 1}, table=ORDERS)


@pytest.fixture
def engine(store: Any) -> Engine:
    return Engine(store, cache=None)  # every answer from DynamoDB: the round trips are the store's


# -- natural keys and default fingerprints, per source ----------------------------------------------------


def test_natural_keys_per_source_agree_with_powertools_data_classes() -> None:
    assert natural_key(EVENTBRIDGE) == EventBridgeEvent(EVENTBRIDGE).get_id
    assert natural_key(SNS) == SNSEvent(SNS).record.sns.message_id
    s3 = S3Event(S3).record.s3
    assert natural_key(S3) == json.dumps([s3.bucket.name, s3.get_object.key, s3.get_object.sequencer],
                                         separators=(",", ":"))


def test_a_direct_invoke_has_no_natural_key() -> None:
    with pytest.raises(KeyNotFoundError, match="pass key="):
        natural_key({"order_id": "o-1"})


@pytest.mark.parametrize("shape", [http_event({"a": 1}), {"Records": [sqs_record({"a": 1})]},
                                   {"Records": [{"eventSource": "aws:kinesis", "kinesis": {}}]}])
def test_events_with_their_own_adapter_are_refused_without_a_key(shape: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="use "):
        natural_key(shape)


def test_default_fingerprints_ignore_what_changes_when_an_event_is_sent_again() -> None:
    republished = event(EVENTBRIDGE, id="another-id", time="2017-12-23T00:00:00Z", **{"replay-name": "r1"})
    assert default_fingerprint(republished) == default_fingerprint(EVENTBRIDGE)
    assert default_fingerprint(event(EVENTBRIDGE, detail={"order_id": "o-42", "amount": 13})) != \
        default_fingerprint(EVENTBRIDGE)
    resent = copy.deepcopy(SNS)
    resent["Records"][0]["Sns"].update(MessageId="m-2", Timestamp="2019-01-03T00:00:00.000Z", Signature="x")
    resent["Records"][0]["EventSubscriptionArn"] += "-2"
    assert default_fingerprint(resent) == default_fingerprint(SNS)
    resent["Records"][0]["Sns"]["Message"] = json.dumps({"order_id": "o-43"})
    assert default_fingerprint(resent) != default_fingerprint(SNS)
    again = copy.deepcopy(S3)
    again["Records"][0].update(eventTime="2026-01-01T00:00:00.000Z", responseElements={"x-amz-request-id": "2"})
    assert default_fingerprint(again) == default_fingerprint(S3)


# -- EventBridge --------------------------------------------------------------------------------------------


def test_an_eventbridge_redelivery_is_a_no_op_in_one_round_trip(ddb: Any, engine: Engine, calls: Any) -> None:
    @idempotent(subscriber="fulfilment", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        count(txn, f"ship#{event['detail']['order_id']}")
        return {"shipped": event["detail"]["order_id"], "amount": Decimal(str(event["detail"]["amount"]))}

    calls.reset()
    first = ship(EVENTBRIDGE, DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    calls.reset()
    again = ship(copy.deepcopy(EVENTBRIDGE), DrillContext())  # EventBridge retries the target: same event
    assert calls.calls == {"TransactWriteItems": 1}
    assert first == again == {"shipped": "o-42", "amount": Decimal("12.5")}
    assert type(again["amount"]) is Decimal
    assert applied(ddb, "ship#o-42") == 1


def test_a_republished_event_with_a_new_id_has_one_effect_with_a_business_key(ddb: Any, engine: Engine) -> None:
    @idempotent(subscriber="fulfilment", key="detail.order_id", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> str:
        count(txn, "ship#o-42")
        return str(event["id"])

    first = ship(EVENTBRIDGE, DrillContext())
    republished = event(EVENTBRIDGE, id="7bf73129-1428-4cd3-a780-95db273d1602", time="2017-12-22T18:50:00Z")
    assert ship(republished, DrillContext()) == first == EVENTBRIDGE["id"]  # the replay of the first
    assert applied(ddb, "ship#o-42") == 1


def test_without_a_business_key_a_republished_event_runs_again(ddb: Any, engine: Engine) -> None:
    """The caveat of the natural key: a republished event has a new ``id``."""
    @idempotent(subscriber="fulfilment", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        count(txn, "ship#o-42")

    ship(EVENTBRIDGE, DrillContext())
    ship(event(EVENTBRIDGE, id="7bf73129-1428-4cd3-a780-95db273d1602"), DrillContext())
    assert applied(ddb, "ship#o-42") == 2


def test_same_key_with_another_fingerprint_fails_loudly_and_runs_nothing(ddb: Any, engine: Engine,
                                                                          calls: Any) -> None:
    runs: list[str] = []

    @idempotent(subscriber="fulfilment", key="detail.order_id", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        runs.append(event["id"])
        count(txn, "ship#o-42")

    ship(EVENTBRIDGE, DrillContext())
    changed = event(EVENTBRIDGE, detail={"order_id": "o-42", "amount": 99})
    calls.reset()
    with pytest.raises(KeyReuseMismatchError):
        ship(changed, DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}  # the handler ran, its transaction met the record
    assert applied(ddb, "ship#o-42") == 1


def test_a_volatile_field_outside_the_fingerprint_replays(ddb: Any, engine: Engine) -> None:
    @idempotent(subscriber="fulfilment", key="detail.order_id", fingerprint="detail.order_id", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        count(txn, "ship#o-42")
        return {"amount": event["detail"]["amount"]}

    ship(EVENTBRIDGE, DrillContext())
    resent = event(EVENTBRIDGE, detail={"order_id": "o-42", "amount": 12.5, "sent_at": "2026-12-01T19:00:00Z"})
    assert ship(resent, DrillContext()) == {"amount": 12.5}
    assert applied(ddb, "ship#o-42") == 1


def test_claim_first_first_delivery_is_two_round_trips_and_a_redelivery_one(ddb: Any, engine: Engine,
                                                                             calls: Any) -> None:
    charged: list[str] = []

    @idempotent(subscriber="payments", key="detail.order_id", mode="claim_first", engine=engine)
    def charge(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, str]:
        charged.append(txn.derive_key("charge"))
        return {"charge": charged[-1][:8]}

    calls.reset()
    first = charge(EVENTBRIDGE, DrillContext())
    assert calls.calls == {"PutItem": 2}  # the claim, then its completion (nothing else to write: no transaction)
    calls.reset()
    assert charge(EVENTBRIDGE, DrillContext()) == first
    assert calls.calls == {"PutItem": 1}
    assert len(charged) == 1


# -- SNS and S3 -----------------------------------------------------------------------------------------------


def test_an_sns_redelivery_is_a_no_op_in_one_round_trip(ddb: Any, engine: Engine, calls: Any) -> None:
    @idempotent(subscriber="mailer", engine=engine)
    def notify(event: dict[str, Any], context: Any, txn: Transaction) -> str:
        order = json.loads(SNSEvent(event).sns_message)["order_id"]
        count(txn, f"mail#{order}")
        return str(order)

    assert notify(SNS, DrillContext()) == "o-42"
    calls.reset()
    assert notify(copy.deepcopy(SNS), DrillContext()) == "o-42"
    assert calls.calls == {"TransactWriteItems": 1}
    assert applied(ddb, "mail#o-42") == 1


def test_an_sns_message_published_twice_dedupes_on_a_key_inside_the_message(ddb: Any, engine: Engine) -> None:
    @idempotent(subscriber="mailer", key="powertools_json(Records[0].Sns.Message).order_id", engine=engine)
    def notify(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        count(txn, "mail#o-42")

    notify(SNS, DrillContext())
    again = copy.deepcopy(SNS)
    again["Records"][0]["Sns"].update(MessageId="0b5d8d7e-7c1c-5b7e-9a51-2b0a0e8e2f8b", Timestamp="2019-01-02T13:00:00Z")
    notify(again, DrillContext())
    assert applied(ddb, "mail#o-42") == 1


def test_an_s3_notification_redelivery_is_a_no_op_and_a_new_version_is_new(ddb: Any, engine: Engine,
                                                                            calls: Any) -> None:
    @idempotent(subscriber="thumbnails", engine=engine)
    def thumbnail(event: dict[str, Any], context: Any, txn: Transaction) -> str:
        obj = S3Event(event).record.s3.get_object
        count(txn, f"thumb#{obj.key}")
        return obj.key

    thumbnail(S3, DrillContext())
    calls.reset()
    thumbnail(copy.deepcopy(S3), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}
    overwritten = copy.deepcopy(S3)
    overwritten["Records"][0]["s3"]["object"].update(sequencer="0A1B2C3D4E5F678902", eTag="f" * 32)
    thumbnail(overwritten, DrillContext())
    assert applied(ddb, "thumb#test/key") == 2


# -- direct Invoke, missing keys, results ----------------------------------------------------------------------


def test_a_direct_invoke_needs_a_key_and_a_missing_one_runs_nothing(ddb: Any, engine: Engine, calls: Any) -> None:
    runs: list[Any] = []

    @idempotent(subscriber="jobs", engine=engine)
    def job(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        runs.append(event)

    calls.reset()
    with pytest.raises(KeyNotFoundError):
        job({"job": 1}, DrillContext())

    @idempotent(subscriber="jobs", key="job_id", engine=engine)
    def keyed(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        runs.append(event)

    with pytest.raises(KeyNotFoundError, match="key='job_id' found no key"):
        keyed({"job": 1}, DrillContext())
    assert runs == [] and calls.total == 0


def test_key_required_false_runs_unprotected_and_says_so(ddb: Any, engine: Engine, capsys: Any,
                                                         caplog: Any) -> None:
    @idempotent(subscriber="jobs", key="job_id", key_required=False, engine=engine)
    def job(event: dict[str, Any], context: Any, txn: Transaction) -> int:
        count(txn, "job#unkeyed")
        return 7

    assert job({"job": 1}, DrillContext()) == 7
    assert job({"job": 1}, DrillContext()) == 7
    assert applied(ddb, "job#unkeyed") == 2  # unprotected: each call is its own intent
    assert f'"{UNKEYED}":[1.0]' in capsys.readouterr().out  # the EMF metric, flushed per invocation
    logged = [r for r in caplog.records if r.getMessage() == UNKEYED]
    assert len(logged) == 2 and logged[0].levelname == "WARNING"
    assert logged[0].reason == "key='job_id' found no key" and "runs unprotected" in logged[0].detail
    assert [item for item in ddb.scan(TableName=TABLE)["Items"] if item["pk"]["S"].startswith(RECORD_PREFIX)] == []


@dataclass
class Shipment:
    order_id: str
    amount: Decimal


def test_a_dataclass_result_replays_as_the_dataclass(ddb: Any, engine: Engine) -> None:
    @idempotent(subscriber="fulfilment", key="detail.order_id", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> Shipment:
        count(txn, "ship#o-42")
        return Shipment(event["detail"]["order_id"], Decimal("12.50"))

    assert ship(EVENTBRIDGE, DrillContext()) == ship(EVENTBRIDGE, DrillContext()) == Shipment("o-42", Decimal("12.50"))
    assert isinstance(ship(EVENTBRIDGE, DrillContext()), Shipment)


def test_an_unstorable_claim_first_result_is_parked(ddb: Any, engine: Engine, calls: Any) -> None:
    calls_made: list[int] = []

    @idempotent(subscriber="payments", key="detail.order_id", mode="claim_first", engine=engine)
    def charge(event: dict[str, Any], context: Any, txn: Transaction) -> Any:
        calls_made.append(1)
        return object()

    for _ in range(3):
        with pytest.raises(UnstorableResultError):
            charge(EVENTBRIDGE, DrillContext())
    assert calls_made == [1]


def test_options_are_checked_when_the_decorator_is_applied(engine: Engine) -> None:
    def handler(event: Any, context: Any, txn: Transaction) -> None: ...

    with pytest.raises(ConfigurationError, match="subscriber= must be a non-empty name"):
        idempotent(subscriber="", engine=engine)(handler)
    with pytest.raises(ConfigurationError, match="not a JMESPath expression"):
        idempotent(subscriber="n", key="detail.[", engine=engine)(handler)
    with pytest.raises(ConfigurationError, match="mode must be"):
        idempotent(subscriber="n", mode="eventually", engine=engine)(handler)


def test_an_event_without_a_canonical_form_is_refused_before_anything_runs(ddb: Any, engine: Engine,
                                                                           calls: Any) -> None:
    from retrysafe.errors import InvalidInputError, InvalidKeyError

    runs: list[Any] = []

    @idempotent(subscriber="fulfilment", engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        runs.append(event)

    calls.reset()
    with pytest.raises(InvalidInputError):  # a lone surrogate is not Unicode text
        ship(event(EVENTBRIDGE, detail={"order_id": "o-42", "note": "\ud800"}), DrillContext())
    with pytest.raises(InvalidInputError):
        ship(event(EVENTBRIDGE, detail={"amount": float("nan")}), DrillContext())
    with pytest.raises(InvalidKeyError):
        ship(event(EVENTBRIDGE, id="\udfff"), DrillContext())
    with pytest.raises(InvalidKeyError):
        ship(event(EVENTBRIDGE, id=1.5), DrillContext())
    assert runs == [] and calls.total == 0


def test_a_direct_invoke_retried_with_its_key_is_a_no_op_in_one_round_trip(ddb: Any, engine: Engine,
                                                                           calls: Any) -> None:
    """``aws lambda invoke`` (or an SDK retry of ``Invoke``) with the same payload: one effect."""
    @idempotent(subscriber="jobs", key="job_id", engine=engine)
    def job(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        count(txn, f"job#{event['job_id']}")
        return {"job": event["job_id"], "rows": 3}

    calls.reset()
    assert job({"job_id": 17, "table": "orders"}, DrillContext()) == {"job": 17, "rows": 3}
    assert calls.calls == {"TransactWriteItems": 1}
    calls.reset()
    assert job({"job_id": 17, "table": "orders"}, DrillContext()) == {"job": 17, "rows": 3}
    assert calls.calls == {"TransactWriteItems": 1}
    assert applied(ddb, "job#17") == 1


def _s3_without_sequencer(event_name: str, version: str) -> dict[str, Any]:
    """An S3 notification of a kind that carries no ``sequencer`` (AWS: it is only set for PUTs and DELETEs)."""
    notification = copy.deepcopy(S3)
    record = notification["Records"][0]
    record.update(eventVersion=version, eventName=event_name)
    record["s3"]["object"] = {"key": "invoices/4111111111111111-SENTINEL.pdf", "size": 1024,
                              "eTag": "0123456789abcdef0123456789abcdef", "versionId": "3HL4kqtJlcpXroDTDmJ"}
    if event_name.startswith("ObjectRestore"):
        record["glacierEventData"] = {"restoreEventData": {"lifecycleRestorationExpiryTime": "1970-01-08T00:00:00.000Z",
                                                           "lifecycleRestoreStorageClass": "Standard"}}
    return notification


@pytest.mark.parametrize(("event_name", "version"), [("ObjectRestore:Completed", "2.1"), ("ObjectTagging:Put", "2.3")])
def test_an_s3_notification_without_a_sequencer_is_refused_with_the_fix_and_key_makes_it_run(
        ddb: Any, engine: Engine, calls: Any, event_name: str, version: str) -> None:
    runs: list[str] = []

    @idempotent(subscriber="restores", engine=engine)
    def unkeyed(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        runs.append("unkeyed")

    notification = _s3_without_sequencer(event_name, version)
    with pytest.raises(KeyNotFoundError) as refused:
        unkeyed(notification, DrillContext())
    message = str(refused.value)
    assert "carries no sequencer" in message and "pass key=" in message and "SENTINEL" not in message
    assert runs == [] and calls.calls == {}

    @idempotent(subscriber="restores", engine=engine,
                key="[Records[0].s3.bucket.name, Records[0].s3.object.key, Records[0].s3.object.versionId, "
                    "Records[0].eventName, Records[0].eventTime]")
    def keyed(event: dict[str, Any], context: Any, txn: Transaction) -> None:
        runs.append("keyed")
        count(txn, "restored")

    keyed(notification, DrillContext())
    keyed(copy.deepcopy(notification), DrillContext())  # Lambda's async retry: the same notification again
    assert runs == ["keyed", "keyed"] and applied(ddb, "restored") == 1
