"""The engine's paths as the exploration drives them: real decorators, engine, store and adapters.

Every handler marks its business effect with a non-idempotent ``ADD n :1`` on
an item of the business table named after the intent (``effect#<intent>#<segment>``),
so the table itself counts how often each part of the work was committed. The
Step Functions task commits three segments around two recovery points
(``txn.step``); its foreign calls answer with the intent they were made for, so
a step that returns another intent's result is seen.

The hinted paths take atomic mode's claim-first route: ``http-atomic-hinted`` sends
``Retry-Attempt: 2`` on every request, ``sqs-hinted`` delivers every message with a
receive count of 2, and ``sqs-redelivered`` counts deliveries as SQS does (the first
invocation un-hinted, every later one hinted), so both routes meet on one key.

The generic paths: ``@idempotent`` on an EventBridge event (atomic), and a plain
``@idempotent_function`` in claim-first mode, once returning a ``Decimal`` (the
record codec's tagged form) and once returning a value that cannot be stored:
that intent's documented final answer is ``UnstorableResultError``, its record is
parked (never released before its ``exp``) and its effect never commits.

The async paths (``event-async-atomic``, ``function-async-claim-first``, ``takeover-event-async``,
``takeover-function-async`` and their ``-live`` twins): the same handlers as ``async def``. The event
handler's coroutine runs where the engine calls it; the function's engine flow runs in a worker thread
while the coroutine runs on the caller's loop, so the scheduler follows an invocation by its context
(``contextvars``), not its thread.

The cut-over paths (``http-cutover``, ``http-cutover-claim-first``): the code before retrysafe
(Powertools ``@idempotent``) completed intent A before the schedule starts (its record written by
Powertools' own persistence layer, its effect counted); every explored invocation is a retry under
retrysafe with ``powertools_cutover`` on. None may commit the effect again, and each answers
Powertools' stored response, whatever fault hits the lookup or the write that records the answer.

The takeover paths (``takeover-<adapter>``, on every atomic adapter: ``@idempotent``,
``@idempotent_function``, ``@idempotent_http``, ``IdempotencyMiddleware``, and the per-record path of
SQS, Kinesis and DynamoDB Streams consumers, i.e. what Powertools' batch processor is given): the
previous deployment of the handler ran claim-first and died holding intent A's claim (its process
crashed right after the claim's ``PutItem`` applied; the lease has lapsed when the schedule starts).
Every explored invocation runs atomic: its transaction meets the lapsed claim, it takes the claim
over and commits the run it already made. Each run answers a result of its own (a random token), so
an answer from a run that did not commit differs from the record. ``takeover-<adapter>-live``: the
previous deployment's invocation is explored too (the schedule's first invocation runs claim-first,
every later one atomic), so it may resume after its lease lapsed and its successor took over.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from retrysafe import (
    Engine,
    PowertoolsCutover,
    Transaction,
    idempotent,
    idempotent_function,
    idempotent_http,
    idempotent_sqs,
    idempotent_task,
    names,
)
from retrysafe._store import DynamoStore
from retrysafe.errors import KeyReuseMismatchError, RequestInFlightError
from retrysafe.http._core import StoredResponse
from retrysafe.sqs import Message
from retrysafe.testing._adapters import (
    Answer,
    EventAdapter,
    FunctionAdapter,
    HttpAdapter,
    SqsAdapter,
    TaskAdapter,
    WebhookAdapter,
    classify_http,
)
from retrysafe.testing._events import DrillContext, api_event, http_event
from retrysafe.webhook import GitHub, WebhookReceiver

from tests.helpers import create_business_table

TABLE = "idempotency"
BUSINESS = "business"
#: The table of the code before retrysafe (Powertools idempotency), read by the cut-over paths.
POWERTOOLS = "powertools-idempotency"
KEY = "key-1"
#: The tenant and operation an HTTP caller and an SQS subscriber share on the ``http-sqs`` path.
SHARED_TENANT = "billing"
SHARED_OPERATION = "Settle"
SECRET = b"exploration-secret"

#: Builds one invocation's call: ``(intent, engine, notes) -> call``; ``notes`` collects what the handler saw.
Maker = Callable[[str, Engine, list[str]], Callable[[], Answer]]


def effect(txn: Transaction, intent: str, segment: str = "main") -> None:
    """The business effect: a counter only a committed transaction moves."""
    txn.update({"pk": f"effect#{intent}#{segment}"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1},
               table=BUSINESS)


def payload(intent: str) -> dict[str, Any]:
    """The request of an intent (another intent reusing the key sends another payload)."""
    return {"intent": intent, "amount": 10 if intent == "A" else 500}


def _http(intent: str, engine: Engine, notes: list[str], mode: str, hinted: bool = False) -> Callable[[], Answer]:
    """``hinted``: every request carries ``Retry-Attempt: 2`` (a retry hint), so atomic mode claims first."""
    def handle(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        body = json.loads(event["body"])
        if mode == "claim_first":
            notes.append(f"foreign call for {body['intent']}")
        effect(txn, body["intent"])
        txn.append_event("OrderPlaced", body, aggregate_type="Order", aggregate_id=KEY, sequence=1)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{KEY}"},
                "body": json.dumps({"order": KEY, "intent": body["intent"]})}

    adapter = HttpAdapter(idempotent_http(handle, operation=f"Http-{mode}", mode=mode, engine=engine),
                          lambda variant: payload(intent))

    def call() -> Answer:
        request = adapter.request(KEY)
        if hinted:
            request["headers"][names.RETRY_ATTEMPT_HEADER] = "2"
        return adapter.invoke(request)

    return call


def _http_record_only(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    """Nothing written but the record: the answer is the effect. Atomic mode commits it with one conditional
    ``PutItem``; claim-first claims, then completes with a ``PutItem`` conditioned on its owner token.

    Its quote number is random (derived keys are the same in every run), so an answer from a second
    execution differs from the first one's."""
    def quote(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        body = json.loads(event["body"])
        if mode == "claim_first":
            notes.append(f"foreign call for {body['intent']}")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"quote": os.urandom(12).hex(), "intent": body["intent"]})}

    adapter = HttpAdapter(idempotent_http(quote, operation=f"Http-record-only-{mode}", mode=mode, engine=engine),
                          lambda variant: payload(intent))
    return lambda: adapter.invoke(adapter.request(KEY))


def _sqs(intent: str, engine: Engine, notes: list[str], receive_count: int = 1) -> Callable[[], Answer]:
    """``receive_count`` 2: every delivery is a redelivery (a retry hint), so atomic mode claims first."""
    def consume(message: Message, txn: Transaction) -> None:
        effect(txn, message.content["intent"])

    adapter = SqsAdapter(idempotent_sqs(consume, subscriber="billing", engine=engine), lambda variant: payload(intent),
                         receive_count=receive_count)
    return lambda: adapter.invoke(adapter.request(KEY))


def _sqs_redelivered(intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
    """The receive count as SQS keeps it: the schedule's first invocation is delivery 1 (no hint, one
    atomic transaction), every later one (a duplicate, a replay, a retry) the next count (hinted: it
    claims first), so un-hinted and hinted invocations of one message meet."""
    notes.append("an SQS delivery")
    return _sqs(intent, engine, notes, receive_count=notes.count("an SQS delivery"))


def _task(intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
    def foreign(name: str, label: str) -> dict[str, str]:
        notes.append(f"foreign call {name} for {label}")
        return {"step": name, "for": label}

    def task(order: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        label = order["intent"]
        effect(txn, label, "a")
        charge = txn.step("charge", lambda: foreign("charge", label))
        effect(txn, label, "b")
        ship = txn.step("ship", lambda: foreign("ship", label))
        effect(txn, label, "c")
        for result in (charge, ship):
            if result["for"] != label:
                notes.append(f"VIOLATION: intent {label} received intent {result['for']}'s checkpoint "
                             f"{result['step']!r}")
        return {"intent": label, "charge": charge, "ship": ship}

    adapter = TaskAdapter(idempotent_task(task, tenant="explore", engine=engine), lambda variant: payload(intent))
    return lambda: adapter.invoke(adapter.request(KEY))


def run_token() -> str:
    """A result unique to one run of a handler: an answer from a run that did not commit differs from the record."""
    return os.urandom(8).hex()


def _event(intent: str, engine: Engine, notes: list[str], mode: str = "atomic",
           is_async: bool = False) -> Callable[[], Answer]:
    """``is_async``: the handler is an ``async def`` (Lambda's sync handler runs it on the environment's loop)."""
    def ship(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effect(txn, event["detail"]["intent"])
        return {"intent": event["detail"]["intent"], "amount": Decimal(event["detail"]["amount"]) / 4,
                "run": run_token()}

    async def ship_async(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        await asyncio.sleep(0)
        return ship(event, context, txn)

    decorate = idempotent(subscriber="explore", mode=mode, engine=engine)
    adapter = EventAdapter(decorate(ship_async) if is_async else decorate(ship), lambda variant: payload(intent))
    return lambda: adapter.invoke(adapter.request(KEY))


class _Unstorable:
    """A provider's response object: not a value a record can store."""


def _function(intent: str, engine: Engine, notes: list[str], storable: bool,
              mode: str = "claim_first", is_async: bool = False) -> Callable[[], Answer]:
    """``is_async``: the function is an ``async def``, awaited on its caller's loop (the engine in a worker thread)."""
    def charge(order: dict[str, Any], txn: Transaction) -> Any:
        if mode == "claim_first":
            notes.append(f"foreign call for {order['intent']}")
        effect(txn, order["intent"])
        return {"intent": order["intent"], "charged": Decimal(order["amount"]) / 4, "run": run_token()} \
            if storable else _Unstorable()

    async def charge_async(order: dict[str, Any], txn: Transaction) -> Any:
        await asyncio.sleep(0)
        return charge(order, txn)

    decorate = idempotent_function(data_keyword_argument="order", subscriber="explore", key="id", mode=mode,
                                   lease_seconds=30, engine=engine)
    function = decorate(charge_async) if is_async else decorate(charge)
    adapter = FunctionAdapter(function, lambda variant: payload(intent))
    return lambda: adapter.invoke(adapter.request(KEY))


def _webhook(intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
    def on_receipt(receipt: Any, txn: Transaction) -> None:
        effect(txn, json.loads(receipt.body)["intent"])

    receiver = WebhookReceiver(GitHub(), secrets=lambda: [SECRET], on_receipt=on_receipt, engine=engine)
    adapter = WebhookAdapter(receiver, lambda variant: payload(intent))
    return lambda: adapter.invoke(adapter.request(KEY))


def _kinesis(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    """A Kinesis batch of three records of one shard; the middle one fails the first time it runs.

    The batch is always delivered whole (a crashed invocation's batch comes back whole; the
    retry after a reported failure is a subset of it). A record running after an earlier record
    of its batch failed in that same invocation breaks the shard's order.
    """
    from retrysafe.errors import ShardHaltedError
    from retrysafe.streams import KinesisMessage, idempotent_kinesis
    from retrysafe.testing._events import kinesis_record

    failed_here: list[str] = []

    def consume(message: KinesisMessage, txn: Transaction) -> None:
        segment = message.content["segment"]
        if failed_here:
            notes.append(f"VIOLATION out-of-order: record {segment} of intent {intent} ran after record "
                         f"{failed_here[0]} of its shard failed in the same batch")
        if mode == "claim_first":
            notes.append(f"foreign call for {intent} {segment}")
        if segment == "r2" and f"r2 of {intent} failed once" not in notes:
            notes.append(f"r2 of {intent} failed once")
            failed_here.append(segment)
            raise RuntimeError("the downstream service refused once")
        effect(txn, message.content["intent"], segment)

    handler = idempotent_kinesis(subscriber="ledger", operation=f"Kinesis-{mode}", mode=mode, engine=engine)(consume)
    event = {"Records": [kinesis_record({**payload(intent), "segment": f"r{n}"}, sequence_number=str(n),
                                        partition_key=KEY) for n in (1, 2, 3)]}

    def call() -> Answer:
        from retrysafe.errors import KeyReuseMismatchError, RequestInFlightError

        failed_here.clear()
        processor = handler.consumer.run(event, DrillContext())
        failures = processor.response()["batchItemFailures"]
        if not failures:
            return Answer("executed", value={"records": len(event["Records"])})
        first = next(e[1] for e in processor.exceptions if not isinstance(e[1], ShardHaltedError))
        kind = "mismatch" if isinstance(first, KeyReuseMismatchError) else \
            "in_flight" if isinstance(first, RequestInFlightError) else "failed"
        return Answer(kind, value=[f["itemIdentifier"] for f in failures])

    return call


def _dynamodb_stream(intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
    """A DynamoDB Streams batch of three INSERTs of one stream; the middle one fails the first time it runs."""
    from retrysafe.errors import KeyReuseMismatchError, RequestInFlightError, ShardHaltedError
    from retrysafe.streams import DynamoDBChange, idempotent_dynamodb_stream
    from retrysafe.testing._events import dynamodb_stream_record

    failed_here: list[str] = []

    def consume(change: DynamoDBChange, txn: Transaction) -> None:
        segment = change.new_image["segment"]
        if failed_here:
            notes.append(f"VIOLATION out-of-order: record {segment} of intent {intent} ran after record "
                         f"{failed_here[0]} of its stream failed in the same batch")
        if segment == "r2" and f"r2 of {intent} failed once" not in notes:
            notes.append(f"r2 of {intent} failed once")
            failed_here.append(segment)
            raise RuntimeError("the index refused once")
        effect(txn, change.new_image["intent"], segment)

    handler = idempotent_dynamodb_stream(subscriber="index", engine=engine)(consume)
    records = [dynamodb_stream_record("INSERT", {"pk": {"S": f"order#{n}"}}, sequence_number=f"{n:021d}",
                                      new_image={"pk": {"S": f"order#{n}"}, "segment": {"S": f"r{n}"},
                                                 "intent": {"S": intent},
                                                 "amount": {"N": str(payload(intent)["amount"])}})
               for n in (1, 2, 3)]

    def call() -> Answer:
        failed_here.clear()
        processor = handler.consumer.run({"Records": records}, DrillContext())
        failures = processor.response()["batchItemFailures"]
        if not failures:
            return Answer("executed", value={"records": len(records)})
        first = next(e[1] for e in processor.exceptions if not isinstance(e[1], ShardHaltedError))
        kind = "mismatch" if isinstance(first, KeyReuseMismatchError) else \
            "in_flight" if isinstance(first, RequestInFlightError) else "failed"
        return Answer(kind, value=[f["itemIdentifier"] for f in failures])

    return call


def _http_and_sqs(intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
    """Intent ``A`` is an HTTP request of tenant ``billing``, any other an SQS message of subscriber ``billing``:
    same operation, same key. They are two intents (two record namespaces), never a reused key."""
    if intent == "A":
        def handle(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
            effect(txn, json.loads(event["body"])["intent"])
            return {"statusCode": 201, "body": json.dumps({"intent": intent})}

        http = HttpAdapter(idempotent_http(handle, operation=SHARED_OPERATION, engine=engine),
                           lambda variant: payload(intent), tenant=SHARED_TENANT)
        return lambda: http.invoke(http.request(KEY))

    def consume(message: Message, txn: Transaction) -> None:
        effect(txn, message.content["intent"])

    sqs = SqsAdapter(idempotent_sqs(consume, subscriber=SHARED_TENANT, operation=SHARED_OPERATION, engine=engine),
                     lambda variant: payload(intent))
    return lambda: sqs.invoke(sqs.request(KEY))


# -- the takeover paths (module docstring) ----------------------------------------------------------------
#: Builds one invocation's call of a takeover path in a mode: ``(intent, engine, notes, mode) -> call``.
class TakeoverMaker(Protocol):
    def __call__(self, intent: str, engine: Engine, notes: list[str], mode: str, /) -> Callable[[], Answer]: ...


#: Past the previous deployment's lease (``DrillContext``'s 30 s remaining time plus the lease margin).
TAKEOVER_LAPSE_SECONDS = 120.0


def _work(txn: Transaction, intent: str) -> dict[str, str]:
    """What a takeover path's handler does: the effect, and a result of this run only."""
    effect(txn, intent)
    return {"intent": intent, "run": run_token()}


def _per_record(process: Callable[[], Any]) -> Answer:
    """One record through its consumer's per-record path: what the batch processor is given, or the error it
    reports in ``batchItemFailures`` (classified by type, as :class:`~retrysafe.testing._adapters.SqsAdapter` does)."""
    try:
        return Answer("executed", value=process())
    except RequestInFlightError:
        return Answer("in_flight")
    except KeyReuseMismatchError:
        return Answer("mismatch")
    except Exception as error:  # noqa: BLE001 - a batch item failure
        return Answer("failed", value=f"{type(error).__name__}: {error}")


def _takeover_http(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        body = json.dumps(_work(txn, json.loads(event["body"])["intent"]))
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": body}

    adapter = HttpAdapter(idempotent_http(create, operation="TakeOverOrder", mode=mode, engine=engine),
                          lambda variant: payload(intent))
    return lambda: adapter.invoke(adapter.request(KEY))


def _takeover_middleware(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
    from retrysafe import TRANSACTION_KEY, IdempotencyMiddleware

    app = APIGatewayHttpResolver()

    @app.post("/orders", middlewares=[IdempotencyMiddleware(operation="TakeOverOrder", mode=mode, engine=engine)])
    def create() -> Response[str]:
        body = app.current_event.json_body
        return Response(201, content_types.APPLICATION_JSON, json.dumps(_work(app.context[TRANSACTION_KEY],
                                                                              body["intent"])))

    request = {**http_event(payload(intent), key=KEY, route="/orders"), "routeKey": "POST /orders"}
    return lambda: classify_http(app.resolve(request, DrillContext()))


def _takeover_sqs(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    from aws_lambda_powertools.utilities.data_classes import SQSRecord
    from retrysafe.testing._events import sqs_record

    def consume(message: Message, txn: Transaction) -> dict[str, str]:
        return _work(txn, message.content["intent"])

    consumer = idempotent_sqs(consume, subscriber="billing", mode=mode, lease_seconds=30,
                              engine=engine).consumer
    record = sqs_record(payload(intent), attributes={names.KEY_MESSAGE_ATTRIBUTE: KEY})
    return lambda: _per_record(lambda: consumer.process(SQSRecord(record), DrillContext()))


def _takeover_kinesis(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    from aws_lambda_powertools.utilities.data_classes.kinesis_stream_event import KinesisStreamRecord
    from retrysafe.streams import KinesisMessage, idempotent_kinesis
    from retrysafe.testing._events import kinesis_record

    @idempotent_kinesis(subscriber="ledger", mode=mode, engine=engine)
    def post(message: KinesisMessage, txn: Transaction) -> dict[str, str]:
        return _work(txn, message.content["intent"])

    record = kinesis_record(payload(intent), sequence_number="1", partition_key=KEY)
    return lambda: _per_record(lambda: post.consumer.process(KinesisStreamRecord(record), DrillContext()))


def _takeover_dynamodb_stream(intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
    from retrysafe.streams import DynamoDBChange, idempotent_dynamodb_stream
    from retrysafe.testing._events import dynamodb_stream_record

    @idempotent_dynamodb_stream(subscriber="index", mode=mode, engine=engine)
    def index(change: DynamoDBChange, txn: Transaction) -> dict[str, str]:
        return _work(txn, change.new_image["intent"])

    record = dynamodb_stream_record("INSERT", {"pk": {"S": "order#1"}}, sequence_number="1".zfill(21),
                                    new_image={"pk": {"S": "order#1"}, "intent": {"S": intent}})
    return lambda: _per_record(lambda: index.consumer.process(DynamoDBRecord(record), DrillContext()))


#: The atomic adapters of the takeover paths (``takeover-<name>``).
TAKEOVER_ADAPTERS: dict[str, TakeoverMaker] = {
    "event": _event,
    "function": lambda i, e, n, mode: _function(i, e, n, storable=True, mode=mode),
    "event-async": lambda i, e, n, mode: _event(i, e, n, mode=mode, is_async=True),
    "function-async": lambda i, e, n, mode: _function(i, e, n, storable=True, mode=mode, is_async=True),
    "http": _takeover_http,
    "middleware": _takeover_middleware,
    "sqs": _takeover_sqs,
    "kinesis": _takeover_kinesis,
    "dynamodb-stream": _takeover_dynamodb_stream,
}


class Takeover:
    """A takeover path (module docstring): ``live`` explores the previous deployment's invocation too."""

    def __init__(self, build: TakeoverMaker, live: bool) -> None:
        self.build, self.live = build, live

    def prepare(self, client: Any, clock: Any) -> None:
        """Intent A's claim, left by the previous deployment (claim-first), which crashed after its claim applied."""
        from retrysafe.testing import Boundary, SimulatedCrash

        boundary = Boundary(client)
        try:
            boundary.crash("PutItem", when="after")
            try:
                self.build("A", Engine(store_for(client), cache=None, clock=clock), [], "claim_first")()
            except SimulatedCrash:
                pass
            else:
                raise AssertionError("the previous deployment's invocation did not crash after its claim")
        finally:
            boundary.close()
        clock.advance(TAKEOVER_LAPSE_SECONDS)

    def make(self, intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
        """The schedule's first invocation of a live path is the previous deployment's (claim-first)."""
        notes.append("a delivery")
        first = self.live and notes.count("a delivery") == 1
        return self.build(intent, engine, notes, "claim_first" if first else "atomic")


def _stored_http(result: Any) -> Answer:
    """The answer a stored HTTP response replays as."""
    stored = StoredResponse.from_result(result)
    return classify_http({"statusCode": stored.status, "headers": stored.headers, "body": stored.body})


def _stored_as_is(result: Any) -> Answer:
    """The answer a stored result replays as when the adapter returns the result itself."""
    return Answer("executed", value=result)


def _acknowledged(result: Any) -> Answer:
    """An SQS consumer's answer (its acknowledgement) carries nothing of the result."""
    return Answer("executed")


class MemoryQueue:
    """The publisher's target: an SQS-like queue in memory (bodies in send order)."""

    kind = "sqs"
    max_entries = 10
    max_entry_bytes = 256 * 1024
    max_request_bytes = 256 * 1024

    def __init__(self, bodies: list[str]) -> None:
        self.bodies = bodies

    def entry_size(self, message: Any) -> int:
        """The size SQS counts (body and attributes)."""
        from retrysafe._limits import message_size

        return message_size(message)

    def send(self, messages: Any) -> set[str]:
        """Accept every message."""
        self.bodies.extend(m.body() for m in messages)
        return set()


class Outbox:
    """The outbox path: publishers of one stream batch race; the consumer then applies each event once.

    :meth:`prepare` commits an intent with two outbox events (fault-free) and
    builds the stream batch DynamoDB Streams would deliver; each explored
    invocation publishes that batch (the real publisher: send to a queue, then
    the conditional mark-published ``UpdateItem`` per event), as a retried
    batch or the sweeper would. :meth:`settle` publishes what is still
    unpublished and delivers every queued message, duplicates included, to an
    idempotent consumer; it returns how often each event was applied.
    """

    def __init__(self) -> None:
        self.queue: list[str] = []
        self.batch: dict[str, Any] = {"Records": []}

    def prepare(self, client: Any, clock: Any) -> None:
        self.queue.clear()
        engine = Engine(store_for(client), clock=clock)

        def produce(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
            for n in range(2):
                txn.append_event("OrderPlaced", {"n": n}, aggregate_type="Order", aggregate_id=KEY, sequence=n + 1)
            return {"statusCode": 201, "body": "{}"}

        adapter = HttpAdapter(idempotent_http(produce, operation="Produce", engine=engine), lambda variant: payload("A"))
        adapter.invoke(adapter.request(KEY))
        self.batch = {"Records": [{"eventName": "INSERT", "eventSource": "aws:dynamodb",
                                   "dynamodb": {"NewImage": item, "SequenceNumber": str(i + 1)}}
                                  for i, item in enumerate(self.unpublished(client))]}

    def unpublished(self, client: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = client.scan(TableName=TABLE, ConsistentRead=True,
                                                  FilterExpression="attribute_exists(obq)")["Items"]
        return sorted(items, key=lambda i: str(i["pk"]["S"]))

    def make(self, intent: str, engine: Engine, notes: list[str]) -> Callable[[], Answer]:
        from retrysafe.outbox.publisher import Publisher
        from retrysafe.outbox.publisher import handler as publish

        publisher = Publisher(MemoryQueue(self.queue), engine.store)

        def call() -> Answer:
            failures = publish(self.batch, None, publisher=publisher)["batchItemFailures"]
            return Answer("failed" if failures else "executed", value={"published": len(self.batch["Records"])})

        return call

    def settle(self, client: Any, clock: Any) -> dict[str, int]:
        from retrysafe.outbox import OutboxMessage
        from retrysafe.outbox.publisher import Publisher
        from retrysafe.testing._events import sqs_record
        from retrysafe.testing._outbox import outbox_stream_event

        queue = self.queue
        store = store_for(client)
        leftover = outbox_stream_event(store)["Records"]
        if leftover:
            from boto3.dynamodb.types import TypeDeserializer

            plain = TypeDeserializer()
            Publisher(MemoryQueue(queue), store).publish([OutboxMessage.from_item(
                {k: plain.deserialize(v) for k, v in r["dynamodb"]["NewImage"].items()}) for r in leftover])

        def consume(message: Message, txn: Transaction) -> None:
            effect(txn, f"event-{message.key}")

        consumer = SqsAdapter(idempotent_sqs(consume, subscriber="billing", engine=Engine(store, clock=clock)),
                              lambda variant: {})
        for body in list(queue):
            event_id = json.loads(body)["event_id"]
            consumer.invoke({"Records": [sqs_record(body, attributes={names.KEY_MESSAGE_ATTRIBUTE: event_id})]})
        counts: dict[str, int] = {}
        for item in client.scan(TableName=BUSINESS, ConsistentRead=True)["Items"]:
            counts[item["pk"]["S"]] = int(item["n"]["N"])
        for item in client.scan(TableName=TABLE, ConsistentRead=True)["Items"]:
            if item["pk"]["S"].startswith(names.OUTBOX_PREFIX):
                counts.setdefault(f"effect#event-{item['pk']['S'][len(names.OUTBOX_PREFIX):]}#main", 0)
        return counts


class Cutover:
    """The cut-over paths (module docstring): Powertools completed intent A, retrysafe answers its retries."""

    key_path = 'headers."idempotency-key"'
    function_name = "orders.lambda_handler"
    #: The end of the window, on the exploration's clock (it starts at 2027-01-15).
    until = 1_800_000_000.0 + 10 * 86_400

    def prepare(self, client: Any, clock: Any) -> None:
        """A's COMPLETED record, as Powertools' own persistence layer writes it, and the old code's effect."""
        from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig

        layer = DynamoDBPersistenceLayer(table_name=POWERTOOLS, boto3_client=client)
        layer.configure(IdempotencyConfig(event_key_jmespath=self.key_path), function_name=self.function_name)
        request = api_event(json.dumps(payload("A")), headers={"Content-Type": "application/json",
                                                               names.IDEMPOTENCY_KEY_HEADER: KEY})  # as HttpAdapter
        layer.save_success(data=request, result=_order_response("A"))
        # Powertools dated its expiry by the wall clock; the old code ran at the exploration's time instead
        [record] = client.scan(TableName=POWERTOOLS, ConsistentRead=True)["Items"]
        client.update_item(TableName=POWERTOOLS, Key={"id": record["id"]}, UpdateExpression="SET expiration = :exp",
                           ExpressionAttributeValues={":exp": {"N": str(int(clock()) + 3600)}})
        client.update_item(TableName=BUSINESS, Key={"pk": {"S": "effect#A#main"}}, UpdateExpression="ADD #n :one",
                           ExpressionAttributeNames={"#n": "n"}, ExpressionAttributeValues={":one": {"N": "1"}})

    def make(self, intent: str, engine: Engine, notes: list[str], mode: str) -> Callable[[], Answer]:
        def handle(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
            body = json.loads(event["body"])
            effect(txn, body["intent"])
            return _order_response(body["intent"])

        cutover = PowertoolsCutover(function_name=self.function_name, event_key_jmespath=self.key_path,
                                    table_name=POWERTOOLS, until=self.until)
        adapter = HttpAdapter(idempotent_http(handle, operation=f"Cutover-{mode}", mode=mode, tenant=None,
                                              powertools_cutover=cutover, engine=engine),
                              lambda variant: payload(intent))
        return lambda: adapter.invoke(adapter.request(KEY))


def _order_response(intent: str) -> dict[str, Any]:
    return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{KEY}"},
            "body": json.dumps({"order": KEY, "intent": intent})}


CUTOVER = Cutover()


@dataclass(frozen=True)
class Path:
    """One engine path: how to build an invocation, and the effect segments an intent must commit once."""

    name: str
    make: Maker
    segments: tuple[str, ...] = ("main",)
    #: The outbox path's publishers and settlement (``None`` for a request path).
    outbox: Outbox | None = None
    #: The problem type a request may be refused with, as a documented final answer, once an earlier
    #: intent's record with the same key expired (a webhook receipt is once per delivery id while the
    #: earlier receipt event is still in the outbox).
    refused_after_expiry: str | None = None
    #: The named error that is a documented final answer of this path (``failed`` with it ends the intent),
    #: with the record parked and no effect committed.
    final_error: str | None = None
    #: The intents reach different adapters (record namespaces): one never refuses another as a reused key.
    independent: bool = False
    #: Writes what exists before the schedule starts (the cut-over's Powertools record), on the observer's client.
    prepare: Callable[[Any, Any], None] | None = None
    #: The answer a stored result replays as: every 2xx answer (a first execution's, a replay's) must be what
    #: the completed record holds when it is given. ``None``: the answer is not one record's (a batch, two
    #: records, the outbox publisher).
    stored: Callable[[Any], Answer] | None = None


OUTBOX = Outbox()


def _takeover_path(name: str, live: bool) -> Path:
    """``takeover-<name>`` (the previous deployment's lapsed claim prepared) or ``takeover-<name>-live``."""
    takeover = Takeover(TAKEOVER_ADAPTERS[name], live)
    return Path(f"takeover-{name}{'-live' if live else ''}", takeover.make,
                prepare=None if live else takeover.prepare,
                stored=_stored_http if name in ("http", "middleware") else _stored_as_is)


PATHS: dict[str, Path] = {p.name: p for p in (
    Path("http-atomic", lambda i, e, n: _http(i, e, n, "atomic"), stored=_stored_http),
    Path("http-atomic-hinted", lambda i, e, n: _http(i, e, n, "atomic", hinted=True), stored=_stored_http),
    Path("http-atomic-record-only", lambda i, e, n: _http_record_only(i, e, n, "atomic"), (), stored=_stored_http),
    Path("http-claim-first-record-only", lambda i, e, n: _http_record_only(i, e, n, "claim_first"), (),
         stored=_stored_http),
    Path("http-claim-first", lambda i, e, n: _http(i, e, n, "claim_first"), stored=_stored_http),
    Path("sqs", _sqs, stored=_acknowledged),
    Path("sqs-hinted", lambda i, e, n: _sqs(i, e, n, receive_count=2), stored=_acknowledged),
    Path("sqs-redelivered", _sqs_redelivered, stored=_acknowledged),
    Path("kinesis", lambda i, e, n: _kinesis(i, e, n, "atomic"), ("r1", "r2", "r3")),
    Path("kinesis-claim-first", lambda i, e, n: _kinesis(i, e, n, "claim_first"), ("r1", "r2", "r3")),
    Path("dynamodb-stream", _dynamodb_stream, ("r1", "r2", "r3")),
    Path("task", _task, ("a", "b", "c"), stored=_stored_as_is),
    Path("webhook", _webhook, refused_after_expiry="urn:retrysafe:problem:state-conflict", stored=_stored_http),
    Path("event-atomic", _event, stored=_stored_as_is),
    Path("function-claim-first", lambda i, e, n: _function(i, e, n, storable=True), stored=_stored_as_is),
    Path("event-async-atomic", lambda i, e, n: _event(i, e, n, is_async=True), stored=_stored_as_is),
    Path("function-async-claim-first", lambda i, e, n: _function(i, e, n, storable=True, is_async=True),
         stored=_stored_as_is),
    Path("function-unstorable", lambda i, e, n: _function(i, e, n, storable=False),
         final_error="UnstorableResultError"),
    Path("outbox", OUTBOX.make, outbox=OUTBOX),
    Path("http-sqs", _http_and_sqs, independent=True),
    Path("http-cutover", lambda i, e, n: CUTOVER.make(i, e, n, "atomic"), prepare=CUTOVER.prepare,
         stored=_stored_http),
    Path("http-cutover-claim-first", lambda i, e, n: CUTOVER.make(i, e, n, "claim_first"), prepare=CUTOVER.prepare,
         stored=_stored_http),
    *(_takeover_path(name, live) for live in (False, True) for name in TAKEOVER_ADAPTERS),
)}


def create_tables(client: Any) -> None:
    """The idempotency table as the constructs deploy it, the business table and Powertools' table."""
    from retrysafe.testing._plugin import create_table

    create_table(client, TABLE)
    create_business_table(client, BUSINESS)
    client.create_table(TableName=POWERTOOLS, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")


def store_for(client: Any) -> DynamoStore:
    """The idempotency store of one invocation's client."""
    return DynamoStore(TABLE, client=client)
