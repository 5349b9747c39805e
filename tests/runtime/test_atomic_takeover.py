"""An atomic first execution that meets a lapsed claim answers with what it committed, on every atomic adapter.

The claim is left by the previous deployment of the same consumer, which ran claim-first and died
holding it (the process crashed right after its claim's ``PutItem`` applied). Once its lease lapsed,
the next delivery runs atomic: its handler runs, its transaction meets the lapsed claim, the engine
takes the claim over and commits. The handler runs once in that invocation, and what the caller gets
(the handler's result, the HTTP response, what the per-record path returns to Powertools' batch
processor) is the committed record's result: the handler's results here are random per run, so an
answer from a discarded run would differ. Round trips are those of a takeover: the atomic transaction
that met the claim, the claim's ``PutItem`` and takeover ``UpdateItem``, the completing transaction.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.utilities.data_classes import SQSRecord
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import KinesisStreamRecord
from retrysafe import (
    TRANSACTION_KEY,
    Engine,
    IdempotencyMiddleware,
    Transaction,
    idempotent,
    idempotent_function,
    idempotent_http,
    idempotent_sqs,
    names,
)
from retrysafe._record import from_item
from retrysafe.http._core import StoredResponse
from retrysafe.names import RECORD_PREFIX
from retrysafe.streams import idempotent_dynamodb_stream, idempotent_kinesis
from retrysafe.testing import Boundary, Clock
from retrysafe.testing._events import (
    DrillContext,
    api_event,
    dynamodb_stream_record,
    http_event,
    kinesis_record,
    sqs_record,
)

from tests.helpers import ORDERS, TABLE

#: Past the claim's lease (``DrillContext``'s 30 s remaining time plus the lease margin).
LAPSE_SECONDS = 60.0
#: A takeover's round trips: the atomic transaction meets the claim, claim PutItem + takeover UpdateItem, commit.
TAKEOVER_CALLS = {"TransactWriteItems": 2, "PutItem": 1, "UpdateItem": 1}


def effect(txn: Transaction) -> dict[str, str]:
    """The business effect (an ``ADD`` only a committed transaction moves) and a result unique to this run."""
    txn.update({"pk": "effect"}, "ADD n :one", values={":one": 1}, table=ORDERS)
    return {"run": os.urandom(8).hex()}


@dataclass(frozen=True)
class Case:
    """An adapter: ``build(mode, engine, runs)`` returns one delivery's call, answering what its caller gets;
    ``read(stored result)`` is what a replay answers from the committed record."""

    name: str
    build: Callable[[str, Engine, list[str]], Callable[[], Any]]
    read: Callable[[Any], Any]


def _event(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    @idempotent(subscriber="fulfilment", operation="Ship", mode=mode, engine=engine)
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, str]:
        runs.append(mode)
        return effect(txn)

    event = {"version": "0", "id": "event-1", "detail-type": "OrderPlaced", "source": "shop", "account": "123456789012",
             "time": "2026-12-01T00:00:00Z", "region": "eu-west-1", "resources": [], "detail": {"order": "o-1"}}
    return lambda: ship(event, DrillContext())


def _function(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order", mode=mode,
                         lease_seconds=30, engine=engine)
    def charge(order: dict[str, Any], txn: Transaction) -> dict[str, str]:
        runs.append(mode)
        return effect(txn)

    return lambda: charge(order={"order": "o-1"})


def _http(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    @idempotent_http(operation="CreateOrder", mode=mode, engine=engine)
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        runs.append(mode)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": json.dumps(effect(txn))}

    request = api_event(json.dumps({"order": "o-1"}),
                        headers={"Content-Type": "application/json", names.IDEMPOTENCY_KEY_HEADER: "key-1"})
    return lambda: json.loads(create(request, DrillContext())["body"])


def _middleware(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    app = APIGatewayHttpResolver()

    @app.post("/orders", middlewares=[IdempotencyMiddleware(operation="CreateOrder", mode=mode, engine=engine)])
    def create() -> Response[str]:
        runs.append(mode)
        return Response(201, content_types.APPLICATION_JSON, json.dumps(effect(app.context[TRANSACTION_KEY])))

    request = {**http_event({"order": "o-1"}, route="/orders"), "routeKey": "POST /orders"}
    return lambda: json.loads(app.resolve(request, DrillContext())["body"])


def _sqs(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    def consume(message: Any, txn: Transaction) -> dict[str, str]:
        runs.append(mode)
        return effect(txn)

    consumer = idempotent_sqs(consume, subscriber="billing", operation="Bill", mode=mode,
                              lease_seconds=30, engine=engine).consumer
    record = sqs_record({"order": "o-1"}, message_id="m-1")
    return lambda: consumer.process(SQSRecord(record), DrillContext())  # what the batch processor is given


def _kinesis(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    @idempotent_kinesis(subscriber="ledger", operation="Post", mode=mode, engine=engine)
    def post(message: Any, txn: Transaction) -> dict[str, str]:
        runs.append(mode)
        return effect(txn)

    record = kinesis_record({"order": "o-1"}, sequence_number="1", partition_key="o-1")
    return lambda: post.consumer.process(KinesisStreamRecord(record), DrillContext())


def _dynamodb_stream(mode: str, engine: Engine, runs: list[str]) -> Callable[[], Any]:
    @idempotent_dynamodb_stream(subscriber="index", operation="Index", mode=mode, engine=engine)
    def index(change: Any, txn: Transaction) -> dict[str, str]:
        runs.append(mode)
        return effect(txn)

    record = dynamodb_stream_record("INSERT", {"pk": {"S": "order#1"}}, sequence_number="1".zfill(21),
                                    new_image={"pk": {"S": "order#1"}})
    return lambda: index.consumer.process(DynamoDBRecord(record), DrillContext())


def _http_body(result: Any) -> Any:
    return json.loads(StoredResponse.from_result(result).body)


CASES = [
    Case("event", _event, lambda result: result),  # JSON results: the serializer stores them as they are
    Case("function", _function, lambda result: result),
    Case("http", _http, _http_body),
    Case("middleware", _middleware, _http_body),
    Case("sqs", _sqs, lambda result: result),
    Case("kinesis", _kinesis, lambda result: result),
    Case("dynamodb-stream", _dynamodb_stream, lambda result: result),
]


def committed(ddb: Any) -> Any:
    """The result of the one idempotency record, as committed."""
    items = [i for i in ddb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
             if i["pk"]["S"].startswith(RECORD_PREFIX)]
    assert len(items) == 1
    record = from_item(items[0])
    assert record.state == "completed"
    return record.result


def applied(ddb: Any) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "effect"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_an_atomic_takeover_answers_with_what_it_committed(ddb, store, calls, case):
    clock = Clock(1_800_000_000.0)
    engine = Engine(store, cache=None, clock=clock)
    runs: list[str] = []
    boundary = Boundary(store.client)
    try:
        boundary.crash("PutItem", when="after")  # the claim applied; the process died holding it
        with pytest.raises(BaseException, match="crash"):
            case.build("claim_first", engine, runs)()
        boundary.revive()
        clock.advance(LAPSE_SECONDS)
        atomic = case.build("atomic", engine, runs)
        calls.reset()
        answer = atomic()
        assert calls.calls == TAKEOVER_CALLS
    finally:
        boundary.close()
    assert runs == ["atomic"]  # the takeover commits the run that met the claim: the handler runs once
    assert case.read(committed(ddb)) == answer
    assert applied(ddb) == 1
    calls.reset()
    assert atomic() == answer  # a redelivery replays the committed answer (its own run's writes are refused)
    assert calls.total == 1 and applied(ddb) == 1
