"""Large webhook bodies: stored in S3 (claim check), published as a pointer, consumed transparently (moto)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import boto3
import pytest
from retrysafe import names
from retrysafe._claimcheck import ClaimCheck, ClaimCheckError, fetch
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
    assert first["statusCode"] == 202 and calls.calls == {"TransactWriteItems": 1}
    (payload,) = outbox_payloads(ddb)
    ref = payload["body_ref"]
    assert payload["body_encoding"] == "s3" and "body" not in payload
    assert ref["size"] == len(body) and ref["sha256"] == hashlib.sha256(body).hexdigest()
    head = s3.head_object(Bucket=ref["bucket"], Key=ref["key"])
    assert head["ServerSideEncryption"] == "AES256" and head["ContentLength"] == len(body)
    assert ref["key"].startswith("webhooks/github/-/")
    # GitHub redelivers it: a replay, no second object, no second receipt.
    assert receiver(store, s3)(github_event(body, delivery="d-2"))["headers"][names.REPLAYED_HEADER] == "true"
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

    seen: list[int] = []

    def work(message: Message, txn: Transaction) -> None:
        receipt = message.content["payload"]
        assert receipt["body_encoding"] == "utf-8" and "body_ref" not in receipt
        assert receipt["body"].encode() == body
        seen.append(len(receipt["body"]))
        txn.update({"pk": "pushes"}, "ADD n :one", values={":one": 1}, table=ORDERS)

    consumer = idempotent_sqs(work, subscriber="ci", store=store)
    assert consumer(sqs_event(messages, "work"), DrillContext()) == {"batchItemFailures": []}
    # Atomic mode runs the handler, then learns from the one transaction that the second copy is a replay.
    assert set(seen) == {len(body.decode())}
    assert ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "pushes"}})["Item"]["n"]["N"] == "1"


def test_a_tampered_or_expired_object_fails_the_record_not_the_batch(store: Any, ddb: Any, s3: Any) -> None:
    body = b"\xff\xfe binary " * 40_000  # not UTF-8: base64 inline would be too large too
    assert receiver(store, s3)(github_event(body))["statusCode"] == 202
    (payload,) = outbox_payloads(ddb)
    envelope = {"event_id": "e-1", "event_type": names.WEBHOOK_RECEIPT_EVENT, "aggregate_type": "webhook:github",
                "aggregate_id": payload["key"], "sequence": None, "occurred_at": "2026-01-01T00:00:00.000+00:00",
                "payload": payload}
    ref = payload["body_ref"]
    assert fetch(ref, s3) == body
    got: list[bytes] = []

    def work(message: Message, txn: Transaction) -> None:
        import base64

        assert message.content["payload"]["body_encoding"] == "base64"
        got.append(base64.b64decode(message.content["payload"]["body"]))

    consumer = idempotent_sqs(work, subscriber="ci", store=store)
    from retrysafe.testing._events import sqs_record

    s3.put_object(Bucket=BUCKET, Key=ref["key"], Body=body + b"!")  # altered in place
    bad = sqs_record(envelope, message_id="m-1")
    assert consumer({"Records": [bad]}, DrillContext()) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}
    with pytest.raises(ClaimCheckError):
        fetch(ref, s3)
    s3.put_object(Bucket=BUCKET, Key=ref["key"], Body=body)
    assert consumer({"Records": [bad]}, DrillContext()) == {"batchItemFailures": []}
    assert got == [body]
    s3.delete_object(Bucket=BUCKET, Key=ref["key"])
    with pytest.raises(ClaimCheckError, match="gone"):
        fetch(ref, s3)


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
