"""Webhook receipt: signatures first, dedupe per source and hook, receipt through the outbox, ordered writes."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retrysafe import names, put_if_newer, update_if_newer
from retrysafe._transaction import Transaction
from retrysafe.errors import ConfigurationError
from retrysafe.outbox._targets import SqsTarget
from retrysafe.outbox.publisher import Publisher
from retrysafe.outbox.sweeper import sweep
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing._events import DrillContext, http_event, rest_event, sqs_event
from retrysafe.webhook import (
    GenericHmac,
    GitHub,
    Stripe,
    WebhookReceiver,
    handler,
    parse_secrets,
)
from retrysafe.webhook import _receiver as receiver_module

from tests.helpers import ORDERS, TABLE, outbox_items, receive_all

SECRET = b"it's a secret to everybody"
BODY = json.dumps({"action": "opened", "number": 7, "updated_at": "2026-11-30T10:00:00Z"})


def github_event(body: str = BODY, *, delivery: str = "d-1", hook: str = "h-1", secret: bytes = SECRET,
                 signature: str | None = None) -> dict[str, Any]:
    sig = signature if signature is not None else "sha256=" + hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Delivery": delivery, "X-GitHub-Hook-ID": hook, "X-GitHub-Event": "pull_request"}
    if sig:
        headers["X-Hub-Signature-256"] = sig
    return rest_event(raw_body=body, key=None, tenant=None, resource="/hooks/github", headers=headers)


@pytest.fixture(autouse=True)
def fresh_parameters() -> Iterator[None]:
    """Powertools caches secrets per container; tests start cold."""
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()  # type: ignore[no-untyped-call]
    yield
    parameters.clear_caches()  # type: ignore[no-untyped-call]


def github(store: Any, **options: Any) -> WebhookReceiver:
    return WebhookReceiver(GitHub(), secrets=lambda: [SECRET], store=store, **options)


def test_github_delivery_is_received_once_and_replayed(store: Any, ddb: Any, calls: Any) -> None:
    receiver = github(store)
    calls.reset()
    first = receiver(github_event(), DrillContext())
    assert first["statusCode"] == 202 and json.loads(first["body"])["delivery"] == "d-1"
    assert calls.calls == {"TransactWriteItems": 1}
    (item,) = outbox_items(ddb)
    payload = json.loads(item["payload"]["S"])
    assert payload["body"] == BODY and payload["event"] == "pull_request" and payload["hook"] == "h-1"
    assert item["etype"]["S"] == names.WEBHOOK_RECEIPT_EVENT and item["aggt"]["S"] == "webhook:github"
    calls.reset()
    again = receiver(github_event(), DrillContext())  # GitHub's redelivery reuses the delivery id
    assert again["statusCode"] == 202 and again["headers"][names.REPLAYED_HEADER] == "true"
    assert again["body"] == first["body"] and calls.calls == {"TransactWriteItems": 1}
    assert len(outbox_items(ddb)) == 1


def test_hook_ids_are_unsigned_so_hooks_are_kept_apart_by_source(store: Any, ddb: Any) -> None:
    """X-GitHub-Hook-ID is not signed: the same signed body from another "hook" is a replay. Two real hooks
    that must stay separate are two sources (two endpoints with their own secrets)."""
    receiver = github(store)
    assert receiver(github_event(hook="h-1"))["statusCode"] == 202
    assert receiver(github_event(hook="h-2"))["headers"].get(names.REPLAYED_HEADER) == "true"
    assert len(outbox_items(ddb)) == 1
    org_hook = WebhookReceiver(GitHub(), tenant="github-org", secrets=lambda: [SECRET], store=store)
    assert names.REPLAYED_HEADER not in org_hook(github_event(hook="h-2"))["headers"]
    assert len(outbox_items(ddb)) == 2


@pytest.mark.parametrize("event", [
    github_event(signature=""),
    github_event(signature="sha256=" + "0" * 64),
    github_event(signature="sha1=abc"),
    github_event(secret=b"another secret"),
    {**github_event(), "body": BODY.replace("7", "8")},  # body changed after signing
])
def test_bad_signatures_write_nothing(store: Any, ddb: Any, calls: Any, event: dict[str, Any]) -> None:
    calls.reset()
    response = github(store)(event)
    assert response["statusCode"] == 401
    assert response["headers"]["Content-Type"] == "application/problem+json"
    assert json.loads(response["body"])["type"].endswith("signature-invalid")
    assert calls.total == 0 and ddb.scan(TableName=TABLE)["Count"] == 0


def test_identity_is_what_the_provider_signs(store: Any, ddb: Any) -> None:
    """GitHub: a reused (unsigned) X-GitHub-Delivery with another signed body is another delivery.
    Stripe: the event id is signed in the body, so the same id with another body is refused (422)."""
    receiver = github(store)
    assert receiver(github_event())["statusCode"] == 202
    assert receiver(github_event(body=json.dumps({"action": "closed"})))["statusCode"] == 202
    assert len(outbox_items(ddb)) == 2
    now = time.time()
    stripe = WebhookReceiver(Stripe(clock=lambda: now), store=store, secrets=lambda: [SECRET])
    assert stripe(stripe_event(json.dumps({"id": "evt_9", "type": "a"}), int(now), [SECRET]))["statusCode"] == 202
    assert stripe(stripe_event(json.dumps({"id": "evt_9", "type": "b"}), int(now), [SECRET]))["statusCode"] == 422
    assert len(outbox_items(ddb)) == 3


def stripe_event(body: str, timestamp: int, secrets: list[bytes]) -> dict[str, Any]:
    signed = f"{timestamp}.".encode() + body.encode()
    v1 = ",".join(f"v1={hmac.new(s, signed, hashlib.sha256).hexdigest()}" for s in secrets)
    return http_event(raw_body=body, key=None, tenant=None, route="/hooks/stripe",
                      headers={"Stripe-Signature": f"t={timestamp},{v1}"})


def test_stripe_style_rotation_tolerance_and_body_delivery_id(store: Any, ddb: Any) -> None:
    now = time.time()
    receiver = WebhookReceiver(Stripe(tolerance_seconds=300, clock=lambda: now), store=store,
                               secrets=lambda: [b"whsec_new", b"whsec_old"])
    body = json.dumps({"id": "evt_1", "type": "invoice.paid"})
    # Signed by the sender with an old and an unknown secret: one v1 matching is enough.
    assert receiver(stripe_event(body, int(now), [b"whsec_unknown", b"whsec_old"]))["statusCode"] == 202
    assert receiver(stripe_event(body, int(now) - 301, [b"whsec_new"]))["statusCode"] == 401  # stale
    assert receiver(stripe_event(body, int(now), [b"whsec_unknown"]))["statusCode"] == 401
    assert receiver(stripe_event(body, int(now) - 10, [b"whsec_new"]))["headers"][names.REPLAYED_HEADER] == "true"
    (item,) = outbox_items(ddb)
    assert json.loads(item["payload"]["S"])["event"] == "invoice.paid" and item["aggid"]["S"] == "evt_1"


def test_generic_hmac_identity_is_the_signed_body(store: Any, ddb: Any) -> None:
    receiver = WebhookReceiver(GenericHmac(), tenant="crm", secrets=lambda: [SECRET], store=store)
    sig = hmac.new(SECRET, b"ping", hashlib.sha256).hexdigest()
    ok = http_event(raw_body="ping", key=None, tenant=None, headers={"X-Signature": sig, "X-Webhook-Id": "w-1"})
    assert receiver(ok)["statusCode"] == 202
    # The delivery header is unsigned metadata: without it (or with another) the same signed body is a replay.
    missing = http_event(raw_body="ping", key=None, tenant=None, headers={"X-Signature": f"sha256={sig}"})
    assert receiver(missing)["headers"][names.REPLAYED_HEADER] == "true"
    too_big = WebhookReceiver(GenericHmac(), secrets=lambda: [SECRET], store=store, max_body_bytes=3)
    assert too_big(ok)["statusCode"] == 413
    assert len(outbox_items(ddb)) == 1


def test_entry_point_reads_secrets_from_secrets_manager_or_ssm(store: Any, ddb: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    arn = boto3.client("secretsmanager", region_name="eu-west-1").create_secret(
        Name="hook", SecretString=json.dumps([SECRET.decode(), "older"]))["ARN"]
    monkeypatch.setattr(receiver_module, "_default", None)
    monkeypatch.setenv(names.WEBHOOK_SECRET_ARN_ENV, arn)
    assert handler(github_event(delivery="sm"), DrillContext())["statusCode"] == 202

    boto3.client("ssm", region_name="eu-west-1").put_parameter(Name="/hooks/github", Value=SECRET.decode(),
                                                               Type="SecureString")
    monkeypatch.delenv(names.WEBHOOK_SECRET_ARN_ENV)
    monkeypatch.setenv(names.WEBHOOK_SECRET_PARAMETER_ENV, "/hooks/github")
    monkeypatch.setattr(receiver_module, "_default", None)
    assert handler(github_event(delivery="ssm"), DrillContext())["statusCode"] == 202
    assert handler(github_event(delivery="x", secret=b"older"))["statusCode"] == 401  # "older" only in SM

    monkeypatch.delenv(names.WEBHOOK_SECRET_PARAMETER_ENV)
    monkeypatch.setattr(receiver_module, "_default", None)
    with pytest.raises(ConfigurationError):
        handler(github_event())
    monkeypatch.setenv(names.WEBHOOK_SECRET_PARAMETER_ENV, "/hooks/github")
    monkeypatch.setenv(names.WEBHOOK_PROVIDER_ENV, "gitlab")
    with pytest.raises(ConfigurationError):
        handler(github_event())
    assert parse_secrets('["a","b"]') == [b"a", b"b"] and parse_secrets("plain") == [b"plain"]


def test_ordered_writes_ignore_stale_and_repeated_deliveries(ddb: Any) -> None:
    assert put_if_newer({"pk": "pr#7", "state": "closed", "version": 2}, table=ORDERS, client=ddb)
    assert not put_if_newer({"pk": "pr#7", "state": "opened", "version": 1}, table=ORDERS, client=ddb)  # late
    assert not put_if_newer({"pk": "pr#7", "state": "closed", "version": 2}, table=ORDERS, client=ddb)  # repeat
    assert update_if_newer({"pk": "pr#7"}, {"state": "merged"}, version=3, table=ORDERS, client=ddb)
    assert not update_if_newer({"pk": "pr#7"}, {"state": "reopened"}, version=3, table=ORDERS, client=ddb)
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "pr#7"}})["Item"]
    assert (item["state"]["S"], item["version"]["N"]) == ("merged", "3")
    with pytest.raises(ValueError):
        put_if_newer({"pk": "pr#8"}, table=ORDERS, client=ddb)


def test_replayed_webhook_has_one_effect_downstream(store: Any, ddb: Any) -> None:
    """Drill 5 end to end: receive twice -> outbox -> (sweeper) -> queue -> ordered consumer."""
    receiver = github(store)
    assert receiver(github_event())["statusCode"] == 202
    assert receiver(github_event())["statusCode"] == 202
    sqs = boto3.client("sqs", region_name="eu-west-1")
    url = sqs.create_queue(QueueName="hooks")["QueueUrl"]
    sweep(Publisher(SqsTarget(url, client=sqs), store), 0, now=datetime.now(UTC) + timedelta(seconds=1))
    applied: list[str] = []

    def work(message: Message, txn: Transaction) -> None:
        pr = json.loads(message.content["payload"]["body"])
        if put_if_newer({"pk": f"pr#{pr['number']}", "action": pr["action"], "version": pr["updated_at"]},
                        table=ORDERS, client=ddb):
            applied.append(pr["action"])

    consumer = idempotent_sqs(work, subscriber="pr-sync", store=store)
    event = sqs_event(receive_all(sqs, url, expected=1), "hooks")
    assert consumer(event, DrillContext()) == {"batchItemFailures": []}
    assert consumer(event, DrillContext()) == {"batchItemFailures": []}  # redelivered
    assert applied == ["opened"]


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=512), secret=st.binary(min_size=1, max_size=64), flip=st.integers(min_value=0))
def test_signatures_accept_exactly_the_signed_bytes(body: bytes, secret: bytes, flip: int) -> None:
    import base64

    from retrysafe.errors import SignatureError
    from retrysafe.http._request import HttpRequest, parse_event

    def request(data: bytes, headers: dict[str, str]) -> HttpRequest:
        return parse_event(http_event(raw_body=base64.b64encode(data).decode(), base64=True, key=None,
                                      tenant=None, headers=headers))

    now = 1_800_000_000
    gh = {"x-hub-signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}
    st_ = {"stripe-signature": f"t={now},v1=" + hmac.new(secret, f"{now}.".encode() + body, hashlib.sha256).hexdigest()}
    providers = [(GitHub(), gh), (Stripe(clock=lambda: now), st_)]
    for provider, headers in providers:
        provider.verify(request(body, headers), [b"other", secret])
    tampered = bytearray(body or b"\x00")
    tampered[flip % len(tampered)] ^= 0x01
    for provider, headers in providers:
        with pytest.raises(SignatureError):
            provider.verify(request(bytes(tampered) if body else b"x", headers), [secret])
