"""Webhooks tried as an attacker would: garbage signature headers, hostile bodies, replays with fresh ids,
and the Standard Webhooks provider against its published vectors and reference implementation."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from retrysafe import names
from retrysafe.errors import SignatureError
from retrysafe.http._request import HttpRequest, parse_event
from retrysafe.testing._events import DrillContext, http_event, rest_event
from retrysafe.webhook import (
    GenericHmac,
    GitHub,
    StandardWebhooks,
    Stripe,
    WebhookReceiver,
    standard_secret,
)
from standardwebhooks.webhooks import Webhook

from tests.helpers import outbox_items

SECRET = b"it's a secret to everybody"
BODY = json.dumps({"action": "opened", "number": 7})
#: The published Standard Webhooks example (standard-webhooks repository, libraries/python/tests).
SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SW_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SW_TIMESTAMP = 1614265330
SW_PAYLOAD = '{"test": 2432232314}'
SW_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
SW_WRONG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA="


def github_event(body: str = BODY, **ids: str) -> dict[str, Any]:
    sig = "sha256=" + hmac.new(SECRET, body.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Delivery": ids.get("delivery", "d-1"), "X-GitHub-Hook-ID": ids.get("hook", "h-1"),
               "X-GitHub-Event": ids.get("event", "pull_request"), "X-Hub-Signature-256": sig}
    return rest_event(raw_body=body, key=None, tenant=None, resource="/hooks/github", headers=headers)


def assert_refused(response: dict[str, Any], status: int) -> None:
    assert response["statusCode"] == status, response
    assert response["headers"]["Content-Type"] == "application/problem+json"
    assert json.loads(response["body"])["status"] == status


# -- 5. header parsers never crash ------------------------------------------------------------------

STRIPE_GARBAGE = [
    "t=" + "9" * 5000 + ",v1=" + "0" * 64,  # int() of 5000 digits raised ValueError
    "t=\u00b2,v1=" + "0" * 64,  # '²'.isdigit() is True, int('²') raises
    "t=\u0661\u0662,v1=" + "0" * 64,  # Arabic-Indic digits
    "t=-5,v1=ab", "t=,v1=ab", "t=1e9,v1=ab", "v1=ab", "t=1700000000", ",,,,", "=",
    "t=1700000000,v1=\u00e9\u00e9", "t=1700000000,v1=\ud800", "x" * 100_000,
]


@pytest.mark.parametrize("header", STRIPE_GARBAGE)
def test_malformed_stripe_signature_is_401_with_zero_dynamodb_calls(store: Any, calls: Any, header: str) -> None:
    receiver = WebhookReceiver(Stripe(clock=lambda: 1_700_000_000), store=store, secrets=lambda: [SECRET])
    calls.reset()
    event = http_event(raw_body='{"id":"evt_1"}', key=None, tenant=None, headers={"Stripe-Signature": header})
    assert_refused(receiver(event, DrillContext()), 401)
    assert calls.total == 0


@pytest.mark.parametrize(("provider", "headers"), [
    (GitHub(), {"X-Hub-Signature-256": "sha256=\ud800"}),
    (GitHub(), {"X-Hub-Signature-256": "sha256=" + "\u00e9" * 64}),
    (GitHub(), {"X-Hub-Signature-256": "sha256=" + "a" * 100_000}),
    (GenericHmac(), {"X-Signature": "\udfff" * 3}),
    (StandardWebhooks(), {"webhook-id": "m", "webhook-timestamp": "\u00b2", "webhook-signature": "v1,AAAA"}),
    (StandardWebhooks(), {"webhook-id": "m", "webhook-timestamp": "9" * 5000, "webhook-signature": "v1,AAAA"}),
    (StandardWebhooks(clock=lambda: 1_700_000_000),
     {"webhook-id": "m", "webhook-timestamp": "1700000000", "webhook-signature": "v1"}),
    (StandardWebhooks(clock=lambda: 1_700_000_000),
     {"webhook-id": "m", "webhook-timestamp": "1700000000", "webhook-signature": "v1,!!! v2 v1,,"}),
    (StandardWebhooks(), {"webhook-id": "\ud800", "webhook-timestamp": "1", "webhook-signature": "v1,AA=="}),
])
def test_every_provider_answers_garbage_with_401(store: Any, calls: Any, provider: Any,
                                                 headers: dict[str, str]) -> None:
    receiver = WebhookReceiver(provider, store=store, secrets=lambda: [b"whsec_" + base64.b64encode(SECRET)])
    calls.reset()
    assert_refused(receiver(http_event(raw_body=BODY, key=None, tenant=None, headers=headers)), 401)
    assert calls.total == 0


def request(body: bytes, headers: dict[str, str]) -> HttpRequest:
    return parse_event(http_event(raw_body=base64.b64encode(body).decode(), base64=True, key=None, tenant=None,
                                  headers=headers))


header_text = st.text(st.characters(codec=None), max_size=300) | st.from_regex(
    r"\A(t=[0-9\u00b2\u0661]{0,30}|v1=[0-9a-f]{0,70}|v1,[A-Za-z0-9+/=]{0,50}|sha256=[0-9a-f]{0,70})([ ,].{0,20})*\Z")


@settings(max_examples=300, deadline=None)
@given(value=header_text, other=header_text, body=st.binary(max_size=64))
def test_fuzzed_signature_headers_only_ever_raise_signature_error(value: str, other: str, body: bytes) -> None:
    cases: list[tuple[Any, dict[str, str]]] = [
        (GitHub(), {"x-hub-signature-256": value}),
        (Stripe(clock=lambda: 1_700_000_000), {"stripe-signature": value}),
        (GenericHmac(), {"x-signature": value}),
        (StandardWebhooks(clock=lambda: 1_700_000_000),
         {"webhook-id": other, "webhook-timestamp": value, "webhook-signature": other}),
        (StandardWebhooks(clock=lambda: 1_700_000_000),
         {"webhook-id": "m", "webhook-timestamp": "1700000000", "webhook-signature": value}),
    ]
    for provider, headers in cases:
        with pytest.raises(SignatureError):
            provider.verify(request(body, headers), [b"whsec_" + base64.b64encode(SECRET)])


hostile_text = st.text(st.characters(codec=None), max_size=200)  # lone surrogates included
hostile_json = st.recursive(st.none() | st.booleans() | st.integers() | hostile_text,
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
                            max_leaves=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=hostile_json, raw=st.binary(max_size=200), delivery=hostile_text, event=hostile_text,
       signed=st.booleans())
def test_fuzzed_entry_point_never_crashes(store: Any, calls: Any, doc: Any, raw: bytes, delivery: str,
                                          event: str, signed: bool) -> None:
    """Hostile bodies (lone surrogates in JSON, non-UTF-8 bytes) and hostile unsigned ids: signed ones are
    received (202), unsigned ones refused (401) without a DynamoDB call, nothing raises."""
    receiver = WebhookReceiver(GitHub(), store=store, secrets=lambda: [SECRET])
    for body in (json.dumps(doc).encode(), raw):
        sig = "sha256=" + hmac.new(SECRET if signed else b"wrong", body, hashlib.sha256).hexdigest()
        headers = {"X-Hub-Signature-256": sig, "X-GitHub-Delivery": delivery, "X-GitHub-Event": event}
        calls.reset()
        response = receiver(http_event(raw_body=base64.b64encode(body).decode(), base64=True, key=None, tenant=None,
                                       headers=headers))
        if signed:
            assert response["statusCode"] == 202, response
        else:
            assert response["statusCode"] == 401 and calls.total == 0


SIGNATURE_HEADERS = ["X-Hub-Signature-256", "Stripe-Signature", "X-Signature", "webhook-id", "webhook-timestamp",
                     "webhook-signature", "X-GitHub-Delivery", "X-Webhook-Id"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers=st.dictionaries(st.sampled_from(SIGNATURE_HEADERS).map(lambda h: h.swapcase() if len(h) % 2 else h)
                               | hostile_text, hostile_text | st.integers(), max_size=6),
       body=st.binary(max_size=100), v2=st.booleans())
def test_fuzzed_headers_on_every_receiver_are_4xx_without_dynamodb_calls(store: Any, calls: Any,
                                                                         headers: dict[str, Any], body: bytes,
                                                                         v2: bool) -> None:
    secret = b"whsec_" + base64.b64encode(SECRET)
    raw = base64.b64encode(body).decode()
    event = (http_event if v2 else rest_event)(raw_body=raw, base64=True, key=None, tenant=None, headers=headers)
    for provider in (GitHub(), Stripe(), GenericHmac(), StandardWebhooks()):
        calls.reset()
        response = WebhookReceiver(provider, store=store, secrets=lambda: [secret])(event)
        assert response["statusCode"] in (400, 401) and calls.total == 0, response
        assert response["headers"]["Content-Type"] == "application/problem+json"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=hostile_json)
def test_stripe_ids_from_hostile_bodies_never_crash(store: Any, doc: Any) -> None:
    now = 1_700_000_000
    receiver = WebhookReceiver(Stripe(clock=lambda: now), store=store, secrets=lambda: [SECRET])
    body = json.dumps({"id": doc, "type": doc})
    v1 = hmac.new(SECRET, f"{now}.".encode() + body.encode(), hashlib.sha256).hexdigest()
    response = receiver(http_event(raw_body=body, key=None, tenant=None, headers={"Stripe-Signature": f"t={now},v1={v1}"}))
    assert response["statusCode"] in (202, 400), response


# -- 3. replays with fresh unsigned ids ------------------------------------------------------------

def test_captured_github_delivery_replayed_with_new_ids_creates_no_receipt(store: Any, ddb: Any, calls: Any) -> None:
    receiver = WebhookReceiver(GitHub(), store=store, secrets=lambda: [SECRET])
    first = receiver(github_event(), DrillContext())
    assert first["statusCode"] == 202
    for i in range(5):  # the attacker resends the captured body with fresh X-GitHub-* ids
        calls.reset()
        replay = receiver(github_event(delivery=f"forged-{i}", hook=f"hook-{i}", event="delete"), DrillContext())
        assert replay["statusCode"] == 202 and replay["headers"][names.REPLAYED_HEADER] == "true"
        assert replay["body"] == first["body"] and calls.calls == {"TransactWriteItems": 1}
    (item,) = outbox_items(ddb)
    payload = json.loads(item["payload"]["S"])
    # The receipt is the first arrival's; its unsigned fields are flagged as such.
    assert payload["event"] == "pull_request" and payload["delivery_id"] == "d-1"
    assert payload["unsigned"] == ["delivery_id", "event", "hook"]
    assert payload["key"] == "sha256:" + hashlib.sha256(BODY.encode()).hexdigest() == item["aggid"]["S"]


# -- 4. Standard Webhooks ----------------------------------------------------------------------------

def standard_event(payload: str = SW_PAYLOAD, *, msg_id: str = SW_ID, timestamp: int = SW_TIMESTAMP,
                   signature: str = SW_SIGNATURE) -> dict[str, Any]:
    return http_event(raw_body=payload, key=None, tenant=None,
                      headers={"webhook-id": msg_id, "webhook-timestamp": str(timestamp),
                               "webhook-signature": signature})


def test_standard_webhooks_published_vectors() -> None:
    provider = StandardWebhooks(clock=lambda: SW_TIMESTAMP)
    secret = SW_SECRET.encode()
    provider.verify(parse_event(standard_event()), [secret])
    provider.verify(parse_event(standard_event()), [SW_SECRET.removeprefix("whsec_").encode()])  # no prefix
    with pytest.raises(SignatureError):
        provider.verify(parse_event(standard_event(signature=SW_WRONG)), [secret])
    rotated = ("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= "
               + SW_SIGNATURE)
    provider.verify(parse_event(standard_event(signature=rotated)), [secret])
    provider.verify(parse_event(standard_event()), [b"whsec_" + base64.b64encode(b"old"), secret])  # 2 secrets
    for missing in ("webhook-id", "webhook-timestamp", "webhook-signature"):
        event = standard_event()
        del event["headers"][missing]
        with pytest.raises(SignatureError):
            provider.verify(parse_event(event), [secret])
    for skew in (-301, 301):  # the 5-minute tolerance, both ways
        with pytest.raises(SignatureError, match="tolerance"):
            StandardWebhooks(clock=lambda s=skew: SW_TIMESTAMP + s).verify(parse_event(standard_event()), [secret])


@settings(max_examples=100, deadline=None)
@given(msg_id=st.from_regex(r"\Amsg_[A-Za-z0-9]{1,30}\Z"), payload=st.text(max_size=200),
       key=st.binary(min_size=1, max_size=64))
def test_standard_webhooks_matches_the_reference_implementation(msg_id: str, payload: str, key: bytes) -> None:
    """Whatever the reference library signs, the provider accepts; one flipped byte it refuses."""
    secret = "whsec_" + base64.b64encode(key).decode()
    now = 1_800_000_000
    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(now, UTC), payload)
    provider = StandardWebhooks(clock=lambda: now)
    body = payload.encode("utf-8", "surrogatepass")
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(now), "webhook-signature": signature}
    provider.verify(request(body, headers), [secret.encode()])
    with pytest.raises(SignatureError):
        provider.verify(request(body + b"x", headers), [secret.encode()])
    assert standard_secret(secret) == key


def test_standard_webhooks_receiver_dedupes_on_the_signed_id_and_refuses_stale(store: Any, ddb: Any,
                                                                              calls: Any) -> None:
    now = time.time()
    receiver = WebhookReceiver(StandardWebhooks(clock=lambda: now), store=store, secrets=lambda: [SW_SECRET.encode()])
    key = standard_secret(SW_SECRET)

    def signed(msg_id: str, ts: int, payload: str) -> dict[str, Any]:
        sig = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.{payload}".encode(), hashlib.sha256).digest()).decode()
        return standard_event(payload, msg_id=msg_id, timestamp=ts, signature="v1," + sig)

    body = json.dumps({"type": "invoice.paid", "data": {"id": 1}})
    assert receiver(signed("msg_1", int(now), body))["statusCode"] == 202
    assert receiver(signed("msg_1", int(now) + 5, body))["headers"][names.REPLAYED_HEADER] == "true"
    calls.reset()
    assert_refused(receiver(signed("msg_2", int(now) - 301, body)), 401)  # stale: a captured request
    assert calls.total == 0
    (item,) = outbox_items(ddb)
    payload = json.loads(item["payload"]["S"])
    assert (payload["key"], payload["event"], payload["unsigned"]) == ("msg_1", "invoice.paid", [])
