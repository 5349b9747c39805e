"""Hostile input never crashes a request path, at every entry point.

Lone surrogates (``"\\ud800"``, ASCII on the wire), huge and non-ASCII digits, deep nesting, duplicate
member names, repeated and comma-holding query values, odd header casing. The answer is always one of
the contract's classes: the handler's answer or a 400 problem+json (HTTP decorator v1/v2, Powertools
middleware), a batch item failure for that record only (SQS, stream publisher), ``TaskPayloadError``
(Step Functions); never an unhandled exception, and no DynamoDB write for refused input.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, APIGatewayRestResolver, Response
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from retrysafe import (
    Engine,
    IdempotencyMiddleware,
    Transaction,
    idempotent_http,
    idempotent_sqs,
    idempotent_task,
    names,
)
from retrysafe._store import DynamoStore
from retrysafe.errors import TaskPayloadError
from retrysafe.names import IDEMPOTENCY_KEY_HEADER
from retrysafe.outbox import OutboxMessage
from retrysafe.outbox.publisher import Publisher
from retrysafe.outbox.publisher import handler as publish_stream
from retrysafe.sqs import Message
from retrysafe.testing._boundary import attempts_of
from retrysafe.testing._events import DrillContext, api_event, sqs_record, task_payload
from retrysafe.testing._plugin import create_table

KEYS = (f"hostile-{n}" for n in itertools.count())
MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:Hostile"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})

# --- what a hostile client sends ---------------------------------------------------------------------------

LONE_SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "a\ud834b", "\udfff\ud800"])
ODD_DIGITS = st.sampled_from(["\u0661\u0662\u0663", "\u00b2", "\U0001d7d9", "\uff11", "\u0967", "\u2460"])
strings = st.one_of(st.text(max_size=12), LONE_SURROGATES, ODD_DIGITS)
numbers = st.one_of(
    st.integers().map(str), st.integers(min_value=10 ** 20, max_value=10 ** 400).map(str),
    st.sampled_from(["9007199254740993", "-0", "0.10000000000000001", "1e400", "-1e-400", "1E+21",
                     "123456789012345678901234567890.5", "1e" + "9" * 20, "9" * 5000]),
)


def _member(name: str, value: str) -> str:
    return json.dumps(name) + ":" + value


json_texts = st.recursive(
    st.one_of(strings.map(json.dumps), numbers, st.sampled_from(["true", "false", "null"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(strings, inner), max_size=3).map(
            lambda members: "{" + ",".join(_member(n, v) for n, v in members) + "}"),
        st.tuples(strings, inner, inner).map(  # a duplicate member name
            lambda t: "{" + _member(t[0], t[1]) + "," + _member(t[0], t[2]) + "}"),
    ), max_leaves=8)
deep = st.sampled_from([10, 200, 100_000]).map(lambda depth: "[" * depth + "]" * depth)
not_json = st.one_of(ODD_DIGITS, st.text(max_size=40), st.sampled_from(["NaN", "{", '{"a":\u0661}', "[1,]"]))
bodies = st.one_of(json_texts, deep, not_json)


def refused(body: str) -> bool:
    """The independent oracle: a JSON text with a duplicate name, a lone surrogate, or too deep to parse."""
    class Duplicate(Exception):
        pass

    def constant(name: str) -> Any:
        raise ValueError(name)  # NaN and Infinity are not JSON

    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({n for n, _ in members}) != len(members):
            raise Duplicate
        return dict(members)

    try:
        # Numbers as text: the oracle judges structure, without the interpreter's limit on integer digits.
        doc = json.loads(body, object_pairs_hook=pairs, parse_constant=constant, parse_int=str, parse_float=str)
    except (Duplicate, RecursionError):
        return True
    except ValueError:
        return False
    stack, texts = [doc], []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            texts.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            texts.append(value)
    return any(not _is_unicode(text) for text in texts)


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


query_pairs = st.lists(st.tuples(st.sampled_from(["a", "b", "A", "amount", "tag", "x%2Cy", "%41"]),
                                 st.sampled_from(["1", "", "red,blue", "red%2Cblue", "%E2%82%AC", "+", "%zz", "a=b"])),
                       max_size=5)
casings = st.sampled_from([str.lower, str.upper, str.title, lambda name: name.swapcase().title().swapcase()])


def http_request(version: str, body: str, pairs: list[tuple[str, str]], casing: Any, key: str) -> dict[str, Any]:
    """An API Gateway event as the gateway would build it from this raw request (v2 lower-cases header names)."""
    headers = {casing(IDEMPOTENCY_KEY_HEADER): key, casing("Content-Type"): "application/json"}
    event = api_event(body, headers=headers, version=version)
    if version == "2.0":
        event["rawQueryString"] = "&".join(f"{n}={v}" for n, v in pairs)
        joined: dict[str, list[str]] = {}
        for name, value in pairs:
            joined.setdefault(name, []).append(value)
        event["queryStringParameters"] = {n: ",".join(v) for n, v in joined.items()} or None
    else:
        multi: dict[str, list[str]] = {}
        for name, value in pairs:
            multi.setdefault(name, []).append(value)
        event["multiValueQueryStringParameters"] = multi or None
        event["queryStringParameters"] = {n: v[-1] for n, v in multi.items()} or None
    return event


# --- the world: moto, one store, a write counter ------------------------------------------------------------

class World:
    """Every entry point on one moto table, and a count of DynamoDB writes by operation."""

    def __init__(self) -> None:
        import boto3

        self.client = boto3.client("dynamodb", region_name="eu-west-1")
        create_table(self.client, "hostile")
        self.store = DynamoStore("hostile", client=self.client)
        self.writes: Counter[str] = Counter()
        attempts_of(self.client).interceptors.append(self)  # counted at the transport's attempt seam
        engine = Engine(self.store)
        self.http = idempotent_http(self._create, operation="Hostile", engine=engine)
        self.sqs = idempotent_sqs(self._consume, subscriber="hostile", engine=engine)
        self.task = idempotent_task(lambda task_input, context, txn: {"ok": True}, engine=engine)
        self.resolvers = {"1.0": APIGatewayRestResolver(), "2.0": APIGatewayHttpResolver()}
        for app in self.resolvers.values():
            app.post("/orders", middlewares=[IdempotencyMiddleware(engine=engine, operation="HostileRoute")])(
                lambda: Response(201, "application/json", '{"created":true}'))

    def before_attempt(self, operation: str, params: Any) -> None:
        """Count a write attempt."""
        if operation in WRITES:
            self.writes[operation] += 1

    def after_attempt(self, operation: str, params: Any, reply: Any, applied: bool) -> None:
        """Nothing to note after it."""

    def _create(self, event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.append_event("Created", {"n": 1}, aggregate_type="Hostile", aggregate_id="1")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": '{"created":true}'}

    def _consume(self, message: Message, txn: Transaction) -> None:
        txn.append_event("Consumed", {"n": 1}, aggregate_type="Hostile", aggregate_id="1")

    def answer_class(self, response: dict[str, Any], body: str) -> None:
        """201 from the handler, or a 400 problem+json exactly when the body is refused, with no write."""
        status = int(response["statusCode"])
        headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
        headers |= {k.lower(): v[0] for k, v in (response.get("multiValueHeaders") or {}).items() if v}
        if refused(body):
            assert status == 400, response
            assert headers["content-type"] == "application/problem+json"
            doc = json.loads(response["body"])
            assert doc["status"] == 400 and doc["type"].endswith("malformed-request") and doc["detail"]
            assert sum(self.writes.values()) == 0, f"a refused request wrote: {self.writes}"
        else:
            assert status == 201, response


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    from moto import mock_aws

    with mock_aws():
        yield World()


# --- HTTP: decorator and middleware, REST v1 and HTTP API v2 -------------------------------------------------

@FUZZ
@example(version="2.0", body='{"x":"\\ud800"}', pairs=[], casing=str.lower)
@example(version="1.0", body='{"a":1,"a":2}', pairs=[("tag", "red,blue"), ("tag", "red%2Cblue")], casing=str.upper)
@given(version=st.sampled_from(["1.0", "2.0"]), body=bodies, pairs=query_pairs, casing=casings)
def test_decorator_answers_hostile_requests_with_the_handler_or_a_400(world: World, version: str, body: str,
                                                                     pairs: list[tuple[str, str]], casing: Any) -> None:
    world.writes.clear()
    response = world.http(http_request(version, body, pairs, casing, next(KEYS)), DrillContext())
    world.answer_class(response, body)


@FUZZ
@example(version="1.0", body='{"x":"\\udfff"}', pairs=[("a", "1"), ("a", "1")], casing=str.title)
@given(version=st.sampled_from(["1.0", "2.0"]), body=bodies, pairs=query_pairs, casing=casings)
def test_middleware_answers_hostile_requests_with_the_route_or_a_400(world: World, version: str, body: str,
                                                                    pairs: list[tuple[str, str]], casing: Any) -> None:
    world.writes.clear()
    response = world.resolvers[version].resolve(http_request(version, body, pairs, casing, next(KEYS)), DrillContext())
    world.answer_class(response, body)


@FUZZ
@given(tenant=st.one_of(LONE_SURROGATES, ODD_DIGITS), version=st.sampled_from(["1.0", "2.0"]))
def test_a_tenant_that_is_not_unicode_text_is_a_400(world: World, tenant: str, version: str) -> None:
    world.writes.clear()
    event = api_event('{"a":1}', headers={IDEMPOTENCY_KEY_HEADER: next(KEYS)}, tenant=tenant, version=version)
    response = world.http(event, DrillContext())
    if _is_unicode(tenant):
        assert response["statusCode"] == 201
    else:
        assert response["statusCode"] == 400 and sum(world.writes.values()) == 0


# --- SQS consumer -------------------------------------------------------------------------------------------

def envelope(kind: str, body: str) -> str:
    """The body as delivered plainly, inside an SNS notification, or as an EventBridge event's detail."""
    if kind == "eventbridge":
        return '{"detail-type":"X","source":"s","id":"1","detail":' + body + "}"
    if kind == "sns":
        return json.dumps({"Type": "Notification", "TopicArn": "arn:t", "MessageId": "1", "Message": body})
    return body


@FUZZ
@example(body='{"x":"\\ud800"}', kind="plain")
@example(body='{"a":1,"a":2}', kind="sns")
@example(body='{"":"","":' + "9" * 5000 + "}", kind="plain")  # a duplicate beside an integer json.loads refuses
@given(body=bodies, kind=st.sampled_from(["plain", "sns", "eventbridge"]))
def test_sqs_fails_exactly_the_hostile_record_and_writes_nothing_for_it(world: World, body: str, kind: str) -> None:
    hostile = sqs_record(envelope(kind, body))
    good = sqs_record({"event_id": next(KEYS), "n": 1})
    world.writes.clear()
    result = world.sqs({"Records": [hostile, good]}, DrillContext())
    failed = [f["itemIdentifier"] for f in result["batchItemFailures"]]
    bridged_not_json = kind == "eventbridge" and not _parses(body)
    if refused(body):
        assert failed == [hostile["messageId"]]
        assert dict(world.writes) == {"TransactWriteItems": 1}  # the good record only
    elif bridged_not_json:  # an EventBridge envelope around text that is not JSON is itself not JSON
        assert failed == []
    else:
        assert failed == [] and world.writes["TransactWriteItems"] == 2


def _parses(text: str) -> bool:
    try:
        json.loads(text, parse_int=str, parse_float=str)
    except (ValueError, RecursionError):
        return False
    return True


# --- the outbox stream publisher ----------------------------------------------------------------------------

class Recorder:
    """A target that accepts everything and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[OutboxMessage] = []

    def send(self, messages: Any) -> set[str]:
        for message in messages:
            message.body().encode("utf-8")  # what a real target's serialiser does
        self.sent.extend(messages)
        return set()


def outbox_image(event_id: str, payload: str, event_type: str) -> dict[str, Any]:
    return {"pk": {"S": names.OUTBOX_PREFIX + event_id}, "kind": {"S": "outbox"}, "eid": {"S": event_id},
            "etype": {"S": event_type}, "aggt": {"S": "Order"}, "aggid": {"S": "1"}, "payload": {"S": payload},
            "occ": {"S": "2026-11-30T12:00:00.000+00:00"}, "at": {"S": "2026-11-30T12:00:00.000+00:00"}}


@FUZZ
@example(payload='{"x":"\\ud800"}', event_type="Created")
@example(payload="[" * 100_000 + "]" * 100_000, event_type="Created")
@given(payload=bodies, event_type=strings)
def test_stream_publisher_reports_unreadable_outbox_records_and_publishes_the_rest(world: World, payload: str,
                                                                                  event_type: str) -> None:
    records = [{"eventID": str(seq), "eventName": "INSERT", "eventSource": "aws:dynamodb",
                "dynamodb": {"SequenceNumber": str(seq), "NewImage": image}}
               for seq, image in ((1, outbox_image("e-good", "{}", "Ok")),
                                  (2, outbox_image("e-hostile", payload, event_type)))]
    target = Recorder()
    result = publish_stream({"Records": records}, None, publisher=Publisher(target, world.store))
    sent = [m.event_id for m in target.sent]
    if _readable(payload, event_type):
        assert result["batchItemFailures"] == [] and sent == ["e-good", "e-hostile"]
    else:
        assert result["batchItemFailures"] == [{"itemIdentifier": "2"}] and sent == ["e-good"]


def _readable(payload: str, event_type: str) -> bool:
    try:
        doc = json.loads(payload)
        json.dumps([doc, event_type], ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):
        return False
    return True


# --- Step Functions task ------------------------------------------------------------------------------------

def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


task_inputs = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), strings),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3), max_leaves=8,
) | st.sampled_from([10, 100_000]).map(nested)


@FUZZ
@example(task_input={"x": "\ud800"}, execution="exec", state="Charge", machine=MACHINE)
@example(task_input=float("nan"), execution="exec", state="Charge", machine=MACHINE)
@example(task_input={"ok": 1}, execution="exec\udc00", state="Charge", machine=MACHINE)
@example(task_input={"ok": 1}, execution="exec", state="Charge", machine=7)
@given(task_input=task_inputs, execution=strings, state=strings,
       machine=st.one_of(st.just(MACHINE), strings, st.integers()))
def test_task_answers_hostile_payloads_with_its_result_or_task_payload_error(world: World, task_input: Any,
                                                                            execution: str, state: str,
                                                                            machine: Any) -> None:
    payload = task_payload(task_input, execution=f"{execution}-{next(KEYS)}", state=state or "S")
    payload["stateMachine"] = machine
    valid = _task_input_ok(task_input) and _is_unicode(execution) and _is_unicode(state or "S") \
        and isinstance(machine, str) and bool(machine) and _is_unicode(machine)
    world.writes.clear()
    try:
        result = world.task(payload, DrillContext())
    except TaskPayloadError:
        assert not valid and sum(world.writes.values()) == 0
    else:
        assert valid and result == {"ok": True}


def _task_input_ok(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, RecursionError):
        return False
    return True
