"""``on_replay=`` on every adapter (issue 32, item 5), on moto with events in their real shapes.

For each adapter: the hook runs on replays only, never on a first execution or a refusal; it gets the
answer as the adapter would return it and a :class:`~retrysafe.ReplayInfo` that matches the stored
record and holds neither the raw key (a sentinel, looked for in every field) nor the fingerprint; what
it returns is what the caller gets; a change it makes reaches neither the record nor the next replay;
and a replay costs the same DynamoDB calls with and without a hook.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from retrysafe import (
    TRANSACTION_KEY,
    DynamoStore,
    Engine,
    IdempotencyMiddleware,
    ReplayInfo,
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
from retrysafe.sqs import Message
from retrysafe.streams import DynamoDBChange, KinesisMessage
from retrysafe.testing._events import (
    DrillContext,
    dynamodb_stream_record,
    http_event,
    kinesis_record,
    rest_event,
    sqs_record,
    task_payload,
)
from retrysafe.webhook import GitHub, WebhookReceiver

from tests.helpers import ORDERS, TABLE, CallCounter

#: The idempotency key of every request here: it must appear in no field of the metadata.
SENTINEL = "sentinel-key-5f0c2e9a"


class Hook:
    """An ``on_replay`` hook that records what it was given and returns ``transform(answer, info)``."""

    def __init__(self, transform: Callable[[Any, ReplayInfo], Any] = lambda answer, info: answer) -> None:
        self.seen: list[tuple[Any, ReplayInfo]] = []
        self.transform = transform

    def __call__(self, answer: Any, info: ReplayInfo) -> Any:
        self.seen.append((copy.deepcopy(answer), info))
        return self.transform(answer, info)


def public(info: ReplayInfo, ddb: Any) -> None:
    """``info`` describes the stored record and carries no raw key and no fingerprint."""
    assert isinstance(info, ReplayInfo) and info.source == "retrysafe"
    fields = [getattr(info, name) for name in ReplayInfo.__slots__]
    assert SENTINEL not in repr(info) and all(SENTINEL not in str(value) for value in fields)
    assert info.record_id is not None and info.record_id.startswith(names.RECORD_PREFIX)
    item = ddb.get_item(TableName=TABLE, Key={"pk": {"S": info.record_id}}, ConsistentRead=True)["Item"]
    assert item["fp"]["S"] not in repr(info)
    assert info.expires_at == int(item[names.TTL_ATTRIBUTE]["N"])
    assert info.executed_at == int(item["ca"]["N"]) / 1000


def record_item(ddb: Any, info: ReplayInfo) -> dict[str, Any]:
    item: dict[str, Any] = ddb.get_item(TableName=TABLE, Key={"pk": {"S": str(info.record_id)}},
                                        ConsistentRead=True)["Item"]
    return item


def replay_calls(build: Callable[[Hook | None], Callable[[int], Any]], counter: CallCounter) -> list[dict[str, int]]:
    """The DynamoDB calls of a replay, without a hook and with one (each on its own key: ``call(n)``)."""
    found = []
    for n, hook in enumerate((None, Hook())):
        call = build(hook)
        call(n)
        counter.reset()
        call(n)
        found.append(dict(counter.calls))
    return found


# -- @idempotent ------------------------------------------------------------------------------------------


def eventbridge(event_id: str, order: str = "o-1") -> dict[str, Any]:
    return {"version": "0", "id": event_id, "detail-type": "OrderPlaced", "source": "shop", "account": "123456789012",
            "time": "2026-12-01T00:00:00Z", "region": "eu-west-1", "resources": [], "detail": {"order": order}}


def test_idempotent_hook_runs_on_replays_only(ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(lambda result, info: {**result, "replayed_until": info.expires_at})

    @idempotent(on_replay=hook, store=store)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": f"shipment#{event['detail']['order']}"}, table=ORDERS)
        return {"shipped": event["detail"]["order"]}

    first = ship(eventbridge(SENTINEL), DrillContext())
    assert first == {"shipped": "o-1"} and hook.seen == []
    again = ship(eventbridge(SENTINEL), DrillContext())
    ((answer, info),) = hook.seen
    assert answer == first
    assert again == {"shipped": "o-1", "replayed_until": info.expires_at}
    public(info, ddb)

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        handler = idempotent(on_replay=with_hook, store=store)(
            lambda event, context, txn: {"ok": event["id"]})
        return lambda n: handler(eventbridge(f"{SENTINEL}-{n}"), DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


def test_a_hook_that_raises_fails_the_call_and_nothing_runs_or_is_written_again(
        ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    runs: list[int] = []
    failing = [True]

    def hook(result: Any, info: ReplayInfo) -> Any:
        if failing[0]:
            raise RuntimeError("metrics backend down")
        return result

    @idempotent_function(data_keyword_argument="order", key="order_id", on_replay=hook, store=store)
    def charge(order: dict[str, Any]) -> dict[str, Any]:
        runs.append(1)
        return {"charged": order["amount"]}

    assert charge(order={"order_id": SENTINEL, "amount": 3}) == {"charged": 3}
    (item,) = ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    calls.reset()
    with pytest.raises(RuntimeError, match="metrics backend down"):
        charge(order={"order_id": SENTINEL, "amount": 3})
    assert calls.calls == {"PutItem": 1}  # the claim that met the record: no release, no rewrite
    assert ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"] == [item] and runs == [1]
    failing[0] = False
    assert charge(order={"order_id": SENTINEL, "amount": 3}) == {"charged": 3} and runs == [1]


# -- @idempotent_function -----------------------------------------------------------------------------------


@dataclass
class Receipt:
    order_id: str
    amount: int


def test_idempotent_function_hook_gets_the_result_as_its_type(
        ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(lambda receipt, info: Receipt(receipt.order_id, -receipt.amount))

    @idempotent_function(data_keyword_argument="order", key="order_id", on_replay=hook, store=store)
    def charge(order: dict[str, Any], txn: Transaction) -> Receipt:
        txn.put({"pk": f"charge#{order['order_id']}"}, table=ORDERS)
        return Receipt(order["order_id"], order["amount"])

    assert charge(order={"order_id": SENTINEL, "amount": 5}) == Receipt(SENTINEL, 5) and hook.seen == []
    assert charge(order={"order_id": SENTINEL, "amount": 5}) == Receipt(SENTINEL, -5)
    ((answer, info),) = hook.seen
    assert answer == Receipt(SENTINEL, 5)
    public(info, ddb)
    assert charge(order={"order_id": SENTINEL, "amount": 5}) == Receipt(SENTINEL, -5)
    assert hook.seen[1][0] == Receipt(SENTINEL, 5)  # what the first hook returned was not stored

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        function = idempotent_function(data_keyword_argument="order", key="order_id", on_replay=with_hook,
                                       store=store)(lambda order, txn: order["order_id"])
        return lambda n: function(order={"order_id": f"{SENTINEL}-{n}"})

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


# -- @idempotent_http and IdempotencyMiddleware -------------------------------------------------------------


def expiry_header(response: dict[str, Any], info: ReplayInfo) -> dict[str, Any]:
    response["headers"]["X-Idempotency-Expires"] = str(info.expires_at)
    return response


def test_idempotent_http_hook_adds_a_header_to_replays(ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(expiry_header)

    @idempotent_http(on_replay=hook, store=store)
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": f"order#{txn.derive_key('order')}"}, table=ORDERS)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": '{"id": 1}'}

    first = create(rest_event({"amount": 10}, key=SENTINEL), DrillContext())
    assert first["statusCode"] == 201 and "X-Idempotency-Expires" not in first["headers"] and hook.seen == []
    refused = create(rest_event({"amount": 11}, key=SENTINEL), DrillContext())
    assert refused["statusCode"] == 422 and hook.seen == []  # a refusal is not a replay
    again = create(rest_event({"amount": 10}, key=SENTINEL), DrillContext())
    ((answer, info),) = hook.seen
    assert answer["headers"][names.REPLAYED_HEADER] == "true" and "X-Idempotency-Expires" not in answer["headers"]
    assert again["headers"]["X-Idempotency-Expires"] == str(info.expires_at) and again["body"] == first["body"]
    public(info, ddb)
    create(rest_event({"amount": 10}, key=SENTINEL), DrillContext())
    assert "X-Idempotency-Expires" not in hook.seen[1][0]["headers"]  # the record holds the stored answer only

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        handler = idempotent_http(on_replay=with_hook, store=store)(
            lambda event, context, txn: {"statusCode": 200, "body": "ok"})
        return lambda n: handler(rest_event({"n": n}, key=f"{SENTINEL}-{n}"), DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


def test_an_http_hook_that_raises_fails_the_invocation_and_leaves_the_record(ddb: Any, store: DynamoStore) -> None:
    def hook(response: dict[str, Any], info: ReplayInfo) -> dict[str, Any]:
        raise RuntimeError("metrics backend down")

    runs: list[int] = []

    @idempotent_http(on_replay=hook, store=store)
    def create(event: dict[str, Any], context: Any) -> dict[str, Any]:  # claim first: a replay does not run it
        runs.append(1)
        return {"statusCode": 201, "body": "{}"}

    assert create(rest_event({"amount": 1}, key=SENTINEL), DrillContext())["statusCode"] == 201
    (item,) = ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    with pytest.raises(RuntimeError, match="metrics backend down"):  # Lambda's error: API Gateway answers 502
        create(rest_event({"amount": 1}, key=SENTINEL), DrillContext())
    assert runs == [1] and ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"] == [item]


def test_the_middleware_hook_gets_the_powertools_response(ddb: Any, store: DynamoStore) -> None:
    def header(response: Response[Any], info: ReplayInfo) -> Response[Any]:
        response.headers["X-Idempotency-Expires"] = str(info.expires_at)
        return response

    hook = Hook(header)
    app = APIGatewayRestResolver()

    @app.post("/orders", middlewares=[IdempotencyMiddleware(on_replay=hook, engine=Engine(store))])
    def create() -> Response[str]:
        app.context[TRANSACTION_KEY].put({"pk": "order#1"}, table=ORDERS)
        return Response(201, content_types.APPLICATION_JSON, '{"id": 1}')

    first = app.resolve(rest_event({"amount": 10}, key=SENTINEL), DrillContext())
    assert first["statusCode"] == 201 and hook.seen == []
    again = app.resolve(rest_event({"amount": 10}, key=SENTINEL), DrillContext())
    ((answer, info),) = hook.seen
    assert isinstance(answer, Response) and answer.status_code == 201
    assert again["statusCode"] == 201 and again["body"] == first["body"]
    assert again["multiValueHeaders"]["X-Idempotency-Expires"] == [str(info.expires_at)]
    public(info, ddb)


# -- @idempotent_sqs -----------------------------------------------------------------------------------------


def test_idempotent_sqs_hook_runs_per_replayed_message(ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(lambda result, info: {"replayed": result})

    @idempotent_sqs(on_replay=hook, store=store)
    def consume(message: Message, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": f"invoice#{message.content['n']}"}, table=ORDERS)
        return {"n": message.content["n"]}

    old = sqs_record({"n": 1}, attributes={names.KEY_MESSAGE_ATTRIBUTE: SENTINEL})
    new = sqs_record({"n": 2})
    assert consume({"Records": [old]}, DrillContext()) == {"batchItemFailures": []} and hook.seen == []
    assert consume({"Records": [old, new]}, DrillContext()) == {"batchItemFailures": []}
    ((answer, info),) = hook.seen  # the redelivered message only
    assert answer == {"n": 1}
    public(info, ddb)
    assert consume.consumer.process(SQSRecord(old)) == {"replayed": {"n": 1}}

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        handler = idempotent_sqs(on_replay=with_hook, store=store)(lambda message, txn: None)
        return lambda n: handler({"Records": [sqs_record({"n": n}, message_id=f"{SENTINEL}-{n}")]}, DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


def test_an_sqs_hook_that_raises_fails_the_message_without_running_it_again(ddb: Any, store: DynamoStore) -> None:
    runs: list[int] = []

    def hook(result: Any, info: ReplayInfo) -> Any:
        raise RuntimeError("metrics backend down")

    @idempotent_sqs(on_replay=hook, store=store)
    def consume(message: Message) -> None:  # claim first: a replay does not run the handler
        runs.append(1)

    record = sqs_record({"n": 1}, message_id=SENTINEL)
    consume({"Records": [record]}, DrillContext())
    (item,) = ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    assert consume({"Records": [record]}, DrillContext()) == {"batchItemFailures": [{"itemIdentifier": SENTINEL}]}
    assert runs == [1] and ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"] == [item]


# -- streams ------------------------------------------------------------------------------------------------


def test_idempotent_kinesis_hook_runs_per_replayed_record(ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(lambda result, info: f"again:{result}")

    @idempotent_kinesis(key="kinesis.data.order", on_replay=hook, store=store)
    def consume(message: KinesisMessage, txn: Transaction) -> str:
        txn.put({"pk": f"account#{message.content['order']}"}, table=ORDERS)
        return str(message.content["order"])

    record = kinesis_record({"order": SENTINEL}, sequence_number="1001")
    assert consume({"Records": [record]}, DrillContext()) == {"batchItemFailures": []} and hook.seen == []
    assert consume({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    ((answer, info),) = hook.seen
    assert answer == SENTINEL
    public(info, ddb)
    from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import KinesisStreamRecord

    assert consume.consumer.process(KinesisStreamRecord(record)) == f"again:{SENTINEL}"

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        handler = idempotent_kinesis(on_replay=with_hook, store=store)(lambda message, txn: None)
        return lambda n: handler({"Records": [kinesis_record({"n": n}, sequence_number=f"20{n}")]}, DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


def test_idempotent_dynamodb_stream_hook_runs_per_replayed_record(
        ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(lambda result, info: None)

    @idempotent_dynamodb_stream(key="dynamodb.Keys.pk.S", on_replay=hook, store=store)
    def consume(change: DynamoDBChange, txn: Transaction) -> str:
        txn.put({"pk": f"doc#{change.keys['pk']}"}, table=ORDERS)
        return change.event_name

    record = dynamodb_stream_record("INSERT", {"pk": {"S": SENTINEL}}, new_image={"pk": {"S": SENTINEL}},
                                    sequence_number="301")
    assert consume({"Records": [record]}, DrillContext()) == {"batchItemFailures": []} and hook.seen == []
    assert consume({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    ((answer, info),) = hook.seen
    assert answer == "INSERT"
    public(info, ddb)
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

    assert consume.consumer.process(DynamoDBRecord(record)) is None

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        handler = idempotent_dynamodb_stream(on_replay=with_hook, store=store)(lambda change, txn: None)
        return lambda n: handler({"Records": [dynamodb_stream_record("INSERT", {"pk": {"S": str(n)}},
                                                                     sequence_number=f"40{n}")]}, DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


# -- @idempotent_task -----------------------------------------------------------------------------------------


def test_idempotent_task_hook_gets_the_stored_output(ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    runs: list[int] = []
    hook = Hook(lambda output, info: {**output, "replayed": True})

    @idempotent_task(on_replay=hook, store=store)
    def charge(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        runs.append(1)
        return {"charged": order["amount"]}

    payload = task_payload({"amount": 7}, execution=f"arn:aws:states:eu-west-1:123456789012:execution:M:{SENTINEL}")
    assert charge(payload, DrillContext()) == {"charged": 7} and hook.seen == []
    assert charge({**payload, names.TASK_RETRY_COUNT: 1}, DrillContext()) == {"charged": 7, "replayed": True}
    ((answer, info),) = hook.seen
    assert answer == {"charged": 7} and runs == [1]
    public(info, ddb)

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        task = idempotent_task(on_replay=with_hook, store=store)(lambda task_input, context, txn: task_input)
        return lambda n: task(task_payload(n, execution=f"arn:aws:states:eu-west-1:123456789012:execution:M:x{n}"),
                              DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"PutItem": 1}


# -- WebhookReceiver --------------------------------------------------------------------------------------------

SECRET = b"webhook secret"


def github_delivery(delivery: str, body: str = '{"action": "opened"}') -> dict[str, Any]:
    signature = "sha256=" + hmac.new(SECRET, body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Delivery": delivery, "X-GitHub-Hook-ID": "h-1", "X-GitHub-Event": "pull_request",
               "X-Hub-Signature-256": signature}
    return rest_event(raw_body=body, key=None, tenant=None, resource="/hooks/github", headers=headers)


def test_webhook_receiver_hook_runs_on_redeliveries(ddb: Any, store: DynamoStore, calls: CallCounter) -> None:
    hook = Hook(expiry_header)
    receiver = WebhookReceiver(GitHub(), secrets=lambda: [SECRET], on_replay=hook, store=store)
    first = receiver(github_delivery(SENTINEL), DrillContext())
    assert first["statusCode"] == 202 and hook.seen == []
    forged = github_delivery(SENTINEL)
    forged["headers"]["X-Hub-Signature-256"] = "sha256=" + "0" * 64
    assert receiver(forged, DrillContext())["statusCode"] == 401 and hook.seen == []
    again = receiver(github_delivery(SENTINEL), DrillContext())
    ((answer, info),) = hook.seen
    assert answer["headers"][names.REPLAYED_HEADER] == "true" and answer["body"] == first["body"]
    assert again["headers"]["X-Idempotency-Expires"] == str(info.expires_at)
    public(info, ddb)
    # GitHub signs only the body: the delivery's key is the body's digest, which is not in the metadata either
    assert hashlib.sha256(b'{"action": "opened"}').hexdigest() not in repr(info)

    def build(with_hook: Hook | None) -> Callable[[int], Any]:
        own = WebhookReceiver(GitHub(), secrets=lambda: [SECRET], on_replay=with_hook, store=store)
        return lambda n: own(github_delivery(f"{SENTINEL}-{n}"), DrillContext())

    without, with_hook = replay_calls(build, calls)
    assert without == with_hook == {"TransactWriteItems": 1}


# -- the warm container ---------------------------------------------------------------------------------------


def test_a_replay_from_the_record_cache_gives_the_same_metadata_with_no_call(ddb: Any, store: DynamoStore) -> None:
    from retrysafe import RecordCache

    cached = DynamoStore(TABLE, client=store.client, cache=RecordCache())
    counter = CallCounter(cached.client)
    hook = Hook()
    function = idempotent_function(data_keyword_argument="order", key="order_id", on_replay=hook,
                                   store=cached)(lambda order: {"id": order["order_id"]})
    function(order={"order_id": SENTINEL})
    counter.reset()
    function(order={"order_id": SENTINEL})
    function(order={"order_id": SENTINEL})
    assert counter.total == 0 and len(hook.seen) == 2 and hook.seen[0][1] == hook.seen[1][1]
    public(hook.seen[0][1], ddb)


def test_replay_metadata_is_a_frozen_value() -> None:
    info = ReplayInfo("idem#abc", 1_800_000_000, 1_700_000_000.5)
    with pytest.raises(AttributeError):
        info.expires_at = 0
    assert info == ReplayInfo("idem#abc", 1_800_000_000, 1_700_000_000.5, source="retrysafe")
    assert json.dumps(info.expires_at)  # epoch seconds, as the table's TTL attribute


# -- a cut-over: the answer of Powertools' record ---------------------------------------------------------------


def test_an_answer_adopted_from_powertools_is_a_replay_of_source_powertools(
        store: DynamoStore, ddb: Any, calls: CallCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
    from retrysafe import PowertoolsCutover

    from tests.runtime import test_powertools_cutover as cutover

    ddb.create_table(TableName=cutover.POWERTOOLS_TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, cutover.FUNCTION)  # what Powertools keys on
    old = cutover.old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=cutover.HEADER_KEY))
    assert old(http_event({"item": "book"}, key=SENTINEL), DrillContext())["statusCode"] == 201
    (powertools_item,) = cutover.powertools_items(ddb)
    hook = Hook(expiry_header)

    @idempotent_http(operation="CreateOrder", on_replay=hook, store=store, powertools_cutover=PowertoolsCutover(
        function_name=f"{cutover.__name__}.old_http_handler.<locals>.lambda_handler",
        table_name=cutover.POWERTOOLS_TABLE, event_key_jmespath=cutover.HEADER_KEY, until=cutover.window()))
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        raise AssertionError("Powertools completed this request: it must not run again")

    calls.reset()
    retry = handler(http_event({"item": "book"}, key=SENTINEL), DrillContext())
    assert dict(calls.calls) == {"GetItem": 1, "PutItem": 1}  # what the cut-over costs without a hook
    ((answer, info),) = hook.seen
    assert info.source == "powertools" and info.executed_at is None
    assert SENTINEL not in repr(info) and powertools_item["id"]["S"] not in repr(info)
    assert info.expires_at == int(record_item(ddb, info)[names.TTL_ATTRIBUTE]["N"])
    assert info.expires_at is not None and info.expires_at <= int(powertools_item["expiration"]["N"])
    assert retry["headers"]["X-Idempotency-Expires"] == str(info.expires_at) and answer["statusCode"] == 201


def test_an_adopted_answer_recorded_nowhere_has_no_record_id(
        store: DynamoStore, ddb: Any, calls: CallCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request without a key that Powertools completed (``key_required=False``): answered from its record,
    recorded nowhere, so the hook gets Powertools' expiry and no record id."""
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
    from retrysafe import PowertoolsCutover

    from tests.runtime import test_powertools_cutover as cutover

    ddb.create_table(TableName=cutover.POWERTOOLS_TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, cutover.FUNCTION)
    body = "powertools_json(body)"
    cutover.old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=body))(
        http_event({"item": SENTINEL}, key=None), DrillContext())
    (powertools_item,) = cutover.powertools_items(ddb)
    hook = Hook()

    @idempotent_http(operation="CreateOrder", key_required=False, on_replay=hook, store=store,
                     powertools_cutover=PowertoolsCutover(
                         function_name=f"{cutover.__name__}.old_http_handler.<locals>.lambda_handler",
                         table_name=cutover.POWERTOOLS_TABLE, event_key_jmespath=body, until=cutover.window()))
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        raise AssertionError("Powertools completed this request: it must not run again")

    calls.reset()
    handler(http_event({"item": SENTINEL}, key=None), DrillContext())
    assert dict(calls.calls) == {"GetItem": 1}
    ((answer, info),) = hook.seen
    assert info == ReplayInfo(None, int(powertools_item["expiration"]["N"]), None, source="powertools")
    assert answer["statusCode"] == 201 and ddb.scan(TableName=TABLE)["Items"] == []


def test_an_adopted_5xx_is_replayed_recorded_nowhere_with_powertools_expiry(
        store: DynamoStore, ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Powertools stored a 503 as completed; retrysafe answers it and records it nowhere (it never stores a 5xx)."""
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig
    from aws_lambda_powertools.utilities.idempotency import idempotent as powertools_idempotent
    from retrysafe import PowertoolsCutover

    from tests.runtime import test_powertools_cutover as cutover

    ddb.create_table(TableName=cutover.POWERTOOLS_TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, cutover.FUNCTION)

    @powertools_idempotent(config=IdempotencyConfig(event_key_jmespath=cutover.HEADER_KEY),
                           persistence_store=cutover.old_layer())
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"statusCode": 503, "headers": {"Content-Type": "application/json"}, "body": '{"error": "down"}'}

    lambda_handler(http_event({}, key=SENTINEL), DrillContext())
    (powertools_item,) = cutover.powertools_items(ddb)
    hook = Hook()

    @idempotent_http(operation="CreateOrder", on_replay=hook, store=store, powertools_cutover=PowertoolsCutover(
        function_name=f"{__name__}.{test_an_adopted_5xx_is_replayed_recorded_nowhere_with_powertools_expiry.__name__}"
                      ".<locals>.lambda_handler",
        table_name=cutover.POWERTOOLS_TABLE, event_key_jmespath=cutover.HEADER_KEY, until=cutover.window()))
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        raise AssertionError("Powertools completed this request: it must not run again")

    assert handler(http_event({}, key=SENTINEL), DrillContext())["statusCode"] == 503
    ((answer, info),) = hook.seen
    assert info == ReplayInfo(None, int(powertools_item["expiration"]["N"]), None, source="powertools")
    assert answer["statusCode"] == 503 and ddb.scan(TableName=TABLE)["Items"] == []
