"""Large webhook bodies: stored in S3 (claim check), published as a pointer, consumed transparently (moto)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import boto3
import pytest
from retrysafe import names
from retrysafe._claimcheck import ClaimCheck, ClaimCheckError
from retrysafe._transaction import Transaction
from retrysafe.outbox._targets import EventBridgeTarget
from retrysafe.outbox.publisher import Publisher, handler
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, rest_event, sqs_event
from retrysafe.testing._outbox import outbox_stream_event
from retrysafe.webhook import GitHub, WebhookReceiver

from tests.helpers import ORDERS, TABLE, receive_all

SECRET = b"it's a secret to everybody"
BUCKET = "webhook-bodies"


@pytest.fixture
def s3(store: Any) -> Any:
    client = boto3.client("s3", region_name="eu-west-1")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    return client


@pytest.fixture(autouse=True)
def bus_target(monkeypatch: pytest.MonkeyPatch) -> None:
    """The receiver's function is configured for an EventBridge outbox (as the WebhookReceiver construct does)."""
    monkeypatch.setenv(names.OUTBOX_TARGET_ENV, "eventbridge")
    monkeypatch.delenv(names.OUTBOX_MAX_MESSAGE_ENV, raising=False)


def github_event(body: bytes, delivery: str = "d-1") -> dict[str, Any]:
    import base64

    sig = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    return rest_event(raw_body=base64.b64encode(body).decode(), base64=True, key=None, tenant=None,
                      resource="/hooks/github",
                      headers={"X-GitHub-Delivery": delivery, "X-GitHub-Event": "push", "X-Hub-Signature-256": sig})


def receiver(store: Any, s3: Any | None, **options: Any) -> WebhookReceiver:
    check = ClaimCheck(BUCKET, client=s3) if s3 is not None else None
    return WebhookReceiver(GitHub(), secrets=lambda: [SECRET], store=store, claim_check=check, **options)


def outbox_payloads(ddb: Any) -> list[dict[str, Any]]:
    return [json.loads(i["payload"]["S"]) for i in ddb.scan(TableName=TABLE)["Items"]
            if i.get("kind", {}).get("S") == "outbox"]


def outbox_pointers(ddb: Any) -> list[dict[str, Any]]:
    """The claim-check pointers of the outbox events (the envelope's ``claim_check``)."""
    return [json.loads(i["cc"]["S"]) for i in ddb.scan(TableName=TABLE)["Items"]
            if i.get("kind", {}).get("S") == "outbox" and "cc" in i]


def objects(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def big_push(size: int) -> bytes:
    """A GitHub-like push payload of about ``size`` bytes (escaped JSON inside: it grows when re-encoded)."""
    commits = []
    while len(json.dumps(commits)) < size:
        commits.append({"id": f"{len(commits):040x}", "message": 'Fix "quoting" in\tpaths\\n' * 20,
                        "added": [f"src/\u00fcber/{len(commits)}.py"]})
    return json.dumps({"ref": "refs/heads/main", "commits": commits}).encode()


def test_a_1mb_github_delivery_is_received_published_and_consumed_once(store: Any, ddb: Any, s3: Any,
                                                                       calls: Any) -> None:
    body = big_push(1_000_000)
    calls.reset()
    first = receiver(store, s3)(github_event(body), DrillContext())
    # Claim-first: the claim finds no accepted delivery, the body goes to S3, then the receipt commits.
    assert first["statusCode"] == 202 and calls.calls == {"PutItem": 1, "TransactWriteItems": 1}
    (payload,) = outbox_payloads(ddb)
    (ref,) = outbox_pointers(ddb)
    assert payload["body_encoding"] == "s3" and "body" not in payload and "body_ref" not in payload
    assert ref["size"] == len(body) and ref["sha256"] == hashlib.sha256(body).hexdigest()
    head = s3.head_object(Bucket=ref["bucket"], Key=ref["key"])
    assert head["ServerSideEncryption"] == "AES256" and head["ContentLength"] == len(body)
    assert ref["key"].startswith("webhooks/github/-/")
    # GitHub redelivers it: a replay found by the claim (one call), no second object, no second receipt.
    calls.reset()
    assert receiver(store, s3)(github_event(body, delivery="d-2"))["headers"][names.REPLAYED_HEADER] == "true"
    assert calls.calls == {"PutItem": 1}
    assert len(objects(s3)) == 1 and len(outbox_payloads(ddb)) == 1

    # Stream -> publisher -> EventBridge bus -> rule -> queue, published twice (a stream retry).
    events, sqs = boto3.client("events", region_name="eu-west-1"), boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="work")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="receipts", EventPattern=json.dumps({"detail-type": [names.WEBHOOK_RECEIPT_EVENT]}))
    events.put_targets(Rule="receipts", Targets=[{"Id": "q", "Arn": arn}])
    stream = outbox_stream_event(store)
    publisher = Publisher(EventBridgeTarget("default", client=events), store)
    assert handler(stream, publisher=publisher) == {"batchItemFailures": []}
    assert handler(stream, publisher=publisher) == {"batchItemFailures": []}
    messages = receive_all(sqs, url, expected=2)
    assert len(messages) == 2 and all(len(m["Body"].encode()) < 256 * 1024 for m in messages)
    assert json.loads(messages[0]["Body"])["detail"][names.CLAIM_CHECK_ENVELOPE_FIELD] == ref

    seen: list[int] = []

    def work(message: Message, txn: Transaction) -> None:
        receipt = message.content["payload"]
        assert receipt["body_encoding"] == "utf-8" and "body_ref" not in receipt
        assert receipt["body"].encode() == body
        seen.append(len(receipt["body"]))
        txn.update({"pk": "pushes"}, "ADD n :one", values={":one": 1}, table=ORDERS)

    consumer = idempotent_sqs(work, subscriber="ci", store=store, claim_check=ClaimCheck(BUCKET, client=s3))
    assert consumer(sqs_event(messages, "work"), DrillContext()) == {"batchItemFailures": []}
    # Atomic mode runs the handler, then learns from the one transaction that the second copy is a replay.
    assert set(seen) == {len(body.decode())}
    assert ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "pushes"}})["Item"]["n"]["N"] == "1"


def test_a_tampered_or_expired_object_fails_the_record_not_the_batch(store: Any, ddb: Any, s3: Any) -> None:
    body = b"\xff\xfe binary " * 40_000  # not UTF-8: base64 inline would be too large too
    assert receiver(store, s3)(github_event(body))["statusCode"] == 202
    (payload,) = outbox_payloads(ddb)
    (ref,) = outbox_pointers(ddb)
    envelope = {"event_id": "e-1", "event_type": names.WEBHOOK_RECEIPT_EVENT, "aggregate_type": "webhook:github",
                "aggregate_id": payload["key"], "sequence": None, "occurred_at": "2026-01-01T00:00:00.000+00:00",
                "payload": payload, names.CLAIM_CHECK_ENVELOPE_FIELD: ref}
    check = ClaimCheck(BUCKET, client=s3)
    assert check.fetch(ref) == body
    got: list[bytes] = []

    def work(message: Message, txn: Transaction) -> None:
        import base64

        assert message.content["payload"]["body_encoding"] == "base64"
        got.append(base64.b64decode(message.content["payload"]["body"]))

    consumer = idempotent_sqs(work, subscriber="ci", store=store, claim_check=check)
    from retrysafe.testing._events import sqs_record

    s3.put_object(Bucket=BUCKET, Key=ref["key"], Body=body + b"!")  # altered in place
    bad = sqs_record(envelope, message_id="m-1")
    assert consumer({"Records": [bad]}, DrillContext()) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    with pytest.raises(ClaimCheckError):
        check.fetch(ref)
    s3.put_object(Bucket=BUCKET, Key=ref["key"], Body=body)
    assert consumer({"Records": [bad]}, DrillContext()) == {"batchItemFailures": []}
    assert got == [body]
    s3.delete_object(Bucket=BUCKET, Key=ref["key"])
    with pytest.raises(ClaimCheckError, match="gone"):
        check.fetch(ref)


def test_small_bodies_stay_inline(store: Any, ddb: Any, s3: Any) -> None:
    body = json.dumps({"zen": "Keep it logically awesome."}).encode()
    assert receiver(store, s3)(github_event(body))["statusCode"] == 202
    (payload,) = outbox_payloads(ddb)
    assert payload["body"].encode() == body and payload["body_encoding"] == "utf-8" and objects(s3) == []


def test_what_no_configured_path_carries_is_413_before_anything_is_written(store: Any, ddb: Any, s3: Any,
                                                                          calls: Any) -> None:
    """Without a bucket a body whose receipt exceeds the target's message is refused; with one, only bodies over
    max_body_bytes are. Measured on the envelope: 200 KB of JSON with quotes becomes > 256 KB escaped."""
    body = json.dumps({"text": '"' * 100_000}).encode()  # 200 KB raw (the old limit was 200 KiB), ~400 KB escaped
    calls.reset()
    refused = receiver(store, None)(github_event(body))
    assert refused["statusCode"] == 413 and refused["headers"]["Content-Type"] == "application/problem+json"
    assert calls.total == 0 and ddb.scan(TableName=TABLE)["Count"] == 0
    capped = receiver(store, s3, max_body_bytes=50_000)(github_event(body))
    assert capped["statusCode"] == 413 and calls.total == 0 and objects(s3) == []
    assert receiver(store, s3)(github_event(body))["statusCode"] == 202 and len(objects(s3)) == 1


def test_an_unreachable_bucket_is_503_and_nothing_is_recorded(store: Any, ddb: Any, s3: Any) -> None:
    body = big_push(400_000)
    missing = WebhookReceiver(GitHub(), secrets=lambda: [SECRET], store=store,
                              claim_check=ClaimCheck("no-such-bucket", client=s3))
    response = missing(github_event(body))
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"] == "5"
    assert response["headers"]["Content-Type"] == "application/problem+json"
    assert ddb.scan(TableName=TABLE)["Count"] == 0  # the sender's retry starts from scratch


def test_a_body_that_fits_a_1mib_queue_but_not_a_dynamodb_item_goes_to_s3(store: Any, ddb: Any, s3: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """250 KB of quotes fits an SQS message raised to 1 MiB once escaped (~500 KB), but not a 400 KB item."""
    monkeypatch.setenv(names.OUTBOX_TARGET_ENV, "sqs")
    monkeypatch.setenv(names.OUTBOX_MAX_MESSAGE_ENV, str(1024 * 1024))
    body = json.dumps({"text": '"' * 125_000}).encode()
    assert receiver(store, s3)(github_event(body))["statusCode"] == 202
    (payload,) = outbox_payloads(ddb)
    assert payload["body_encoding"] == "s3" and len(objects(s3)) == 1
    small = json.dumps({"text": "a" * 300_000}).encode()  # 300 KB inline: SQS at 1 MiB carries it
    assert receiver(store, s3)(github_event(small))["statusCode"] == 202
    assert sorted(p["body_encoding"] for p in outbox_payloads(ddb)) == ["s3", "utf-8"]


class S3Calls:
    """The S3 API calls a client makes (botocore ``before-call`` events), optionally failing one operation."""

    def __init__(self, client: Any, fail: str | None = None) -> None:
        self.names: list[str] = []
        self.fail = fail
        client.meta.events.register("before-call.s3", self._on_call)

    def _on_call(self, model: Any, **_: Any) -> None:
        self.names.append(model.name)
        if model.name == self.fail:
            from botocore.exceptions import EndpointConnectionError

            raise EndpointConnectionError(endpoint_url="https://s3.eu-west-1.amazonaws.com")


def test_a_resend_of_an_accepted_large_delivery_is_a_replay_while_s3_is_down(store: Any, ddb: Any, s3: Any,
                                                                            calls: Any) -> None:
    """Issue 23 item 7: the receiver looked for the receipt only after writing the body to S3, so the resend
    answered 503 (and every resend rewrote the object). The claim finds the receipt first now."""
    body = big_push(400_000)
    first = receiver(store, s3)(github_event(body), DrillContext())
    assert first["statusCode"] == 202 and len(objects(s3)) == 1
    s3_calls = S3Calls(s3, fail="PutObject")
    calls.reset()
    again = receiver(store, s3)(github_event(body, delivery="d-2"), DrillContext())
    assert again["statusCode"] == 202 and again["headers"][names.REPLAYED_HEADER] == "true"
    assert json.loads(again["body"]) == json.loads(first["body"])
    assert s3_calls.names == [] and calls.calls == {"PutItem": 1} and len(outbox_payloads(ddb)) == 1


def test_a_new_large_delivery_while_s3_is_down_is_503_and_its_retry_starts_afresh(store: Any, ddb: Any,
                                                                                 s3: Any) -> None:
    body = big_push(400_000)
    S3Calls(s3, fail="PutObject")
    response = receiver(store, s3)(github_event(body), DrillContext())
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"] == "5"
    assert ddb.scan(TableName=TABLE)["Count"] == 0  # the claim was released: nothing recorded


def sent_through_the_outbox(store: Any, s3: Any, payload: dict[str, Any], **event: Any) -> list[dict[str, Any]]:
    """An HTTP-style producer appends ``payload`` (a client's JSON, copied) to the outbox; the publisher sends it
    to a queue; returns the SQS records Lambda would deliver."""
    from retrysafe._engine import Completion, Engine, Intent
    from retrysafe._keys import Scope
    from retrysafe.outbox._targets import SqsTarget

    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]

    def work(txn: Transaction) -> Completion:
        txn.append_event("OrderPlaced", payload, aggregate_type="Order", aggregate_id="o-1", **event)
        return Completion(None)

    Engine(store).execute(Intent(Scope("shop", "PlaceOrder", "k-1", adapter=names.HTTP_ADAPTER), "fp"), work)
    handler(outbox_stream_event(store), publisher=Publisher(SqsTarget(url, client=sqs), store))
    return sqs_event(receive_all(sqs, url, expected=1), "orders")["Records"]


def test_a_payload_that_looks_like_a_claim_check_reaches_the_handler_untouched(store: Any, s3: Any) -> None:
    """Issue 23 item 1: an API caller whose JSON the handler copies into append_event made every delivery fail
    (dead-lettered, the handler never ran) and could name any bucket to fetch from. A payload is data."""
    forged = {"order": "o-1", "body_encoding": "s3",
              "body_ref": {"bucket": "someone-elses-bucket", "key": "secret", "size": 1, "sha256": "0" * 64}}
    records = sent_through_the_outbox(store, s3, forged)
    s3_calls = S3Calls(s3)
    seen: list[Any] = []
    consumer = idempotent_sqs(lambda message, txn: seen.append(message.content["payload"]), subscriber="billing",
                              store=store, claim_check=ClaimCheck(BUCKET, client=s3))
    assert consumer({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert seen == [forged] and s3_calls.names == []


@pytest.mark.parametrize(("change", "reason"), [
    ({"bucket": "someone-elses-bucket"}, "outside"),
    ({"key": "private/report.csv"}, "outside"),
    ({"size": 50 * 1024 * 1024}, "at most"),
    ({"size": "12"}, "lacks"),
])
def test_a_pointer_outside_the_consumers_bucket_prefix_or_bound_is_never_fetched(store: Any, s3: Any,
                                                                                 change: dict[str, Any],
                                                                                 reason: str) -> None:
    """A message crafted with a claim-check envelope (sent to the queue by anyone who may send) fails its record
    without any S3 call when its pointer names another bucket, a key outside the prefix, or an unbounded size."""
    from retrysafe.testing._events import sqs_record

    pointer = {"bucket": BUCKET, "key": f"{names.CLAIM_CHECK_PREFIX}github/-/a/b", "size": 10, "sha256": "0" * 64,
               **change}
    envelope = {"event_id": "e-1", "event_type": names.WEBHOOK_RECEIPT_EVENT, "aggregate_type": "webhook:github",
                "aggregate_id": "k", "sequence": None, "occurred_at": "2026-01-01T00:00:00.000+00:00",
                "payload": {"body_encoding": "s3"}, names.CLAIM_CHECK_ENVELOPE_FIELD: pointer}
    s3_calls = S3Calls(s3)
    ran: list[Any] = []
    consumer = idempotent_sqs(lambda message, txn: ran.append(message), subscriber="billing", store=store,
                              claim_check=ClaimCheck(BUCKET, client=s3))
    record = sqs_record(envelope, message_id="m-1")
    assert consumer({"Records": [record]}, DrillContext()) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    assert ran == [] and s3_calls.names == []
    with pytest.raises(ClaimCheckError, match=reason):
        ClaimCheck(BUCKET, client=s3).fetch(pointer)


def test_an_object_larger_than_its_pointer_is_refused_without_reading_it_whole(s3: Any) -> None:
    key = f"{names.CLAIM_CHECK_PREFIX}github/-/a/b"
    s3.put_object(Bucket=BUCKET, Key=key, Body=b"y" * 100_000)
    pointer = {"bucket": BUCKET, "key": key, "size": 10, "sha256": hashlib.sha256(b"y" * 10).hexdigest()}
    with pytest.raises(ClaimCheckError, match="size"):
        ClaimCheck(BUCKET, client=s3).fetch(pointer)


def test_an_outbox_claim_check_reaches_the_consumer_inline(store: Any, s3: Any) -> None:
    """A producer's own large document: ClaimCheck.put, then append_event(claim_check=pointer)."""
    document = ("\u00fcber " * 100_000).encode()
    pointer = ClaimCheck(BUCKET, client=s3).put(f"{names.CLAIM_CHECK_PREFIX}reports/r-1", document)
    records = sent_through_the_outbox(store, s3, {"report": "r-1"}, claim_check=pointer)
    seen: list[Any] = []
    consumer = idempotent_sqs(lambda message, txn: seen.append(message.content["payload"]), subscriber="billing",
                              store=store, claim_check=ClaimCheck(BUCKET, client=s3))
    assert consumer({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert seen == [{"report": "r-1", "body": document.decode(), "body_encoding": "utf-8"}]
    without = idempotent_sqs(lambda message, txn: None, subscriber="other", store=store)  # no bucket configured
    assert without({"Records": records}, DrillContext())["batchItemFailures"] == [
        {"itemIdentifier": records[0]["messageId"]}]
