"""Fuzzing the edges: keys, bodies and malformed API Gateway / SQS / stream events.

Never an unhandled exception; always the handler's answer, a clear 4xx
problem+json, or a reported batch failure; and nothing written for a refused request.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from retrysafe import Engine, Transaction, idempotent_http, idempotent_sqs, names
from retrysafe._keys import MAX_KEY_LENGTH
from retrysafe._store import DynamoStore
from retrysafe.outbox.publisher import handler as publish_stream
from retrysafe.sqs import Message
from retrysafe.testing import Boundary
from retrysafe.testing._events import DrillContext, api_event, sqs_record
from retrysafe.testing._plugin import create_table

#: Every example gets its own key: hypothesis repeats generated values across examples.
KEYS = (f"fuzz-{n}" for n in itertools.count())
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=3), max_leaves=8)


class World:
    """moto, the tables, an HTTP handler and an SQS consumer on one store, and a boundary counting commits."""

    def __init__(self) -> None:
        import boto3

        self.client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(self.client, "fuzz-idempotency")
        self.store = DynamoStore("fuzz-idempotency", client=self.client)
        self.boundary = Boundary(self.client)
        engine = Engine(self.store)
        self.http = idempotent_http(self._create, operation="Fuzz", engine=engine)
        self.sqs = idempotent_sqs(self._consume, subscriber="fuzz", engine=engine)

    def _create(self, event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.append_event("Created", {"n": 1}, aggregate_type="Fuzz", aggregate_id="1")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"created": True})}

    def _consume(self, message: Message, txn: Transaction) -> None:
        txn.append_event("Consumed", {"key": message.key[:10]}, aggregate_type="Fuzz", aggregate_id="1")

    def call_http(self, event: Any) -> dict[str, Any]:
        self.boundary.reset()
        response: dict[str, Any] = self.http(event, DrillContext())
        status = int(response["statusCode"])
        assert status < 500, response
        if status >= 400:
            assert response["headers"]["Content-Type"] == "application/problem+json", response
            doc = json.loads(response["body"])
            assert doc["status"] == status and doc["title"], doc
            assert self.boundary.commits == [], "a refused request wrote something"
        return response


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    from moto import mock_aws

    with mock_aws():
        yield World()


def event_with(key: str | None, body: str | None = '{"a": 1}', base64_body: bool = False) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", **({names.IDEMPOTENCY_KEY_HEADER: key} if key is not None else {})}
    return api_event(body, headers=headers, base64=base64_body)


def valid(key: str) -> bool:
    value = key.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return False  # quoted forms are checked by their own test
    return 0 < len(value) <= MAX_KEY_LENGTH and all(0x21 <= ord(c) <= 0x7E for c in value)


@FUZZ
@given(key=st.text(max_size=300) | st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1,
                                           max_size=300))
def test_any_key_is_accepted_exactly_when_valid(world: World, key: str) -> None:
    response = world.call_http(event_with(key))
    if valid(key):
        assert response["statusCode"] == 201
    elif not (len(key.strip()) >= 2 and key.strip()[0] == key.strip()[-1] == '"'):
        assert response["statusCode"] == 400


@FUZZ
@given(inner=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=200))
def test_quoted_and_bare_forms_name_the_same_intent(world: World, inner: str) -> None:
    escaped = inner.replace("\\", "\\\\").replace('"', '\\"')
    first = world.call_http(event_with(f'"{escaped}"'))
    assert first["statusCode"] == 201
    bare = world.call_http(event_with(inner)) if not (inner[0] == inner[-1] == '"' and len(inner) > 1) else first
    assert bare["statusCode"] == 201 and bare["body"] == first["body"]
    if bare is not first:
        assert bare["headers"].get(names.REPLAYED_HEADER) == "true"


@FUZZ
@given(body=st.one_of(st.none(), st.just(""), st.text(max_size=500), st.binary(max_size=500),
                      st.just("{" * 2000), st.just(json.dumps({"big": "x" * 300_000}))),
       encode=st.booleans(), mangle=st.booleans())
def test_bodies_of_any_shape(world: World, body: Any, encode: bool, mangle: bool) -> None:
    if isinstance(body, bytes):
        text = base64.b64encode(body).decode()
        encode = True
    else:
        text = base64.b64encode(body.encode("utf-8", "surrogatepass")).decode() if encode and body else body
    if mangle and encode and text:
        text = "%" + text  # not base64
    response = world.call_http(event_with(next(KEYS), text, encode))
    assert response["statusCode"] in (201, 400)
    if response["statusCode"] == 400:
        assert mangle and encode


API_FIELDS = ["version", "httpMethod", "headers", "body", "isBase64Encoded", "requestContext", "routeKey",
              "rawPath", "queryStringParameters", "multiValueQueryStringParameters", "resource", "path"]


@FUZZ
@given(version=st.sampled_from(["1.0", "2.0"]),
       changes=st.dictionaries(st.sampled_from(API_FIELDS), json_values, max_size=4), drop=st.booleans())
def test_malformed_api_gateway_events(world: World, version: str, changes: dict[str, Any], drop: bool) -> None:
    event = api_event('{"a": 1}', headers={names.IDEMPOTENCY_KEY_HEADER: next(KEYS)}, version=version)
    for name, value in changes.items():
        if drop:
            event.pop(name, None)
        else:
            event[name] = value
    world.call_http(event)


@FUZZ
@given(event=st.one_of(json_values, st.just({"Records": None}), st.just(42)))
def test_non_events(world: World, event: Any) -> None:
    world.call_http(event)


SQS_FIELDS = ["messageId", "body", "messageAttributes", "attributes", "eventSourceARN", "receiptHandle"]


@FUZZ
@given(body=st.one_of(st.text(max_size=300), json_values.map(json.dumps)),
       changes=st.dictionaries(st.sampled_from(SQS_FIELDS), json_values, max_size=3),
       attribute=st.one_of(st.none(), st.text(max_size=300)))
def test_malformed_sqs_records_are_reported_not_raised(world: World, body: str, changes: dict[str, Any],
                                                       attribute: str | None) -> None:
    record = sqs_record(body, attributes={names.KEY_MESSAGE_ATTRIBUTE: attribute} if attribute is not None else None)
    record.update(changes)
    world.boundary.reset()
    result = world.sqs({"Records": [record]}, DrillContext())
    failures = result["batchItemFailures"]
    assert len(failures) <= 1
    if failures:
        assert world.boundary.commits == []


@FUZZ
@example(records=[{"eventName": "INSERT", "dynamodb": []}])  # regression: used to raise AttributeError
@example(records=[{"eventName": "INSERT", "dynamodb": {"NewImage": {"kind": {"S": "outbox"}}}}])
@example(records=[{"eventName": "INSERT", "dynamodb": {"SequenceNumber": "7", "NewImage": {"kind": {"S": "outbox"}}}}])
@given(records=st.lists(st.fixed_dictionaries({"eventName": st.sampled_from(["INSERT", "MODIFY", "REMOVE", 3]),
                                               "dynamodb": json_values}), max_size=4))
def test_malformed_stream_events_publish_nothing_and_are_reported_not_raised(world: World, records: list[Any]) -> None:
    class Nowhere:
        def send(self, messages: Any) -> set[str]:
            raise AssertionError(f"published {messages}")

    from retrysafe.outbox.publisher import Publisher

    result = publish_stream({"Records": records}, None, publisher=Publisher(Nowhere(), world.store))
    # An unreadable outbox INSERT is reported (it reaches the on-failure destination), never dropped silently.
    sequences = [r["dynamodb"].get("SequenceNumber") for r in records if isinstance(r.get("dynamodb"), dict)]
    assert len(result["batchItemFailures"]) <= 1
    assert all(f["itemIdentifier"] in sequences for f in result["batchItemFailures"])
