"""``async def`` handlers under every handler decorator, ``async def`` functions under ``@idempotent_function``.

Each adapter's async handler is run next to its sync twin (same options, same events) on moto: the
same records (compared item by item), the same business writes, the same DynamoDB round trips, the
same replay, refusal of a changed payload and release on an exception.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from retrysafe import (
    Engine,
    Transaction,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_function,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
    idempotent_task,
)
from retrysafe.errors import ConfigurationError, KeyReuseMismatchError
from retrysafe.testing import Clock
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

from tests.helpers import ORDERS, TABLE

SECRET = b"async-secret"

#: Attributes that differ between two runs by construction: the random owner and instance tokens, and
#: when an outbox event occurred (the wall clock, not the engine's).
_RANDOM = frozenset({"ow", "ii", "occ"})


@dataclass
class Effects:
    """What the handlers did: each run appends; ``fail`` makes the next runs raise."""

    runs: list[Any] = field(default_factory=list)
    fail: bool = False

    def run(self, content: Any, txn: Transaction | None) -> dict[str, Any]:
        if self.fail:
            raise RuntimeError("the handler failed")
        self.runs.append(content)
        if txn is not None:
            txn.put({"pk": "order#1", "content": json.dumps(content, sort_keys=True)}, table=ORDERS)
        return {"done": len(self.runs)}


@dataclass
class Case:
    """One adapter: its entry point built sync or async, an event of a payload, and whether an answer failed."""

    name: str
    build: Callable[[bool, Engine, Effects], Callable[[Any, Any], Any]]
    event: Callable[[str], Any]
    failed: Callable[[Any], bool]
    #: A changed payload under the same key is another intent (a webhook's key is its signed identity).
    changed_is_new: bool = False


def _event_handler(is_async: bool, engine: Engine, effects: Effects, *, txn: bool) -> Any:
    options: dict[str, Any] = {"operation": "Ship", "subscriber": "s", "engine": engine}
    if txn:
        if is_async:
            async def atomic(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
                await asyncio.sleep(0)
                return effects.run(event["detail"], txn)
            return idempotent(**options)(atomic)

        def atomic_sync(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
            return effects.run(event["detail"], txn)
        return idempotent(**options)(atomic_sync)
    if is_async:
        async def claim(event: Any, context: Any) -> dict[str, Any]:
            await asyncio.sleep(0)
            return effects.run(event["detail"], None)
        return idempotent(**options)(claim)

    def claim_sync(event: Any, context: Any) -> dict[str, Any]:
        return effects.run(event["detail"], None)
    return idempotent(**options)(claim_sync)


def _eventbridge(payload: str) -> dict[str, Any]:
    return {"version": "0", "id": "evt-1", "detail-type": "OrderPlaced", "source": "shop", "account": "123456789012",
            "time": "2026-12-01T10:00:00Z", "region": "eu-west-1", "resources": [], "detail": {"order": payload}}


def _record_handler(decorator: Callable[..., Any], *, txn: bool, content: Callable[[Any], Any]) -> Any:
    def build(is_async: bool, engine: Engine, effects: Effects) -> Any:
        options = decorator(operation="Book", subscriber="s", engine=engine)
        if txn and is_async:
            async def atomic(message: Any, txn: Transaction) -> Any:
                await asyncio.sleep(0)
                return effects.run(content(message), txn)
            return options(atomic)
        if txn:
            def atomic_sync(message: Any, txn: Transaction) -> Any:
                return effects.run(content(message), txn)
            return options(atomic_sync)
        if is_async:
            async def claim(message: Any) -> Any:
                await asyncio.sleep(0)
                return effects.run(content(message), None)
            return options(claim)

        def claim_sync(message: Any) -> Any:
            return effects.run(content(message), None)
        return options(claim_sync)
    return build


def _batch_failed(answer: Any) -> bool:
    return bool(answer["batchItemFailures"])


def _http(is_async: bool, engine: Engine, effects: Effects) -> Any:
    options = idempotent_http(operation="CreateOrder", subscriber="s", engine=engine)
    if is_async:
        async def create(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"statusCode": 201, "body": json.dumps(effects.run(json.loads(event["body"]), txn))}
        return options(create)

    def create_sync(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        return {"statusCode": 201, "body": json.dumps(effects.run(json.loads(event["body"]), txn))}
    return options(create_sync)


def _task(is_async: bool, engine: Engine, effects: Effects) -> Any:
    options = idempotent_task(subscriber="s", tenant="t", engine=engine)
    if is_async:
        async def charge(state_input: Any, context: Any, txn: Transaction) -> Any:
            await asyncio.sleep(0)
            return effects.run(state_input, txn)
        return options(charge)

    def charge_sync(state_input: Any, context: Any, txn: Transaction) -> Any:
        return effects.run(state_input, txn)
    return options(charge_sync)


def _webhook(is_async: bool, engine: Engine, effects: Effects) -> Any:
    if is_async:
        async def on_receipt(receipt: Any, txn: Transaction) -> None:
            await asyncio.sleep(0)
            effects.run(receipt.delivery_id, txn)
        return WebhookReceiver(GitHub(), subscriber="s", secrets=lambda: [SECRET], on_receipt=on_receipt,
                               engine=engine)

    def on_receipt_sync(receipt: Any, txn: Transaction) -> None:
        effects.run(receipt.delivery_id, txn)
    return WebhookReceiver(GitHub(), subscriber="s", secrets=lambda: [SECRET], on_receipt=on_receipt_sync,
                           engine=engine)


def _github(payload: str) -> dict[str, Any]:
    body = json.dumps({"action": "opened", "number": payload})
    headers = {"X-GitHub-Delivery": "d-1", "X-GitHub-Hook-ID": "h-1", "X-GitHub-Event": "pull_request",
               "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, body.encode(), hashlib.sha256).hexdigest()}
    return rest_event(raw_body=body, key=None, tenant=None, resource="/hooks/github", headers=headers)


def _status_failed(answer: Any) -> bool:
    return isinstance(answer, BaseException) or int(answer["statusCode"]) >= 400


def _raised(answer: Any) -> bool:
    return isinstance(answer, BaseException)


CASES = [
    Case("idempotent atomic", lambda a, e, f: _event_handler(a, e, f, txn=True), _eventbridge, _raised),
    Case("idempotent claim-first", lambda a, e, f: _event_handler(a, e, f, txn=False), _eventbridge, _raised),
    Case("idempotent_sqs atomic", _record_handler(idempotent_sqs, txn=True, content=lambda m: m.content),
         lambda p: {"Records": [sqs_record({"order": p}, message_id="m-1")]}, _batch_failed),
    Case("idempotent_kinesis claim-first", _record_handler(idempotent_kinesis, txn=False, content=lambda m: m.content),
         lambda p: {"Records": [kinesis_record({"order": p}, sequence_number="1", arrival=1_764_583_200.0)]},
         _batch_failed),
    Case("idempotent_dynamodb_stream atomic",
         _record_handler(idempotent_dynamodb_stream, txn=True, content=lambda c: c.new_image),
         lambda p: {"Records": [dynamodb_stream_record("INSERT", {"pk": {"S": "o-1"}}, sequence_number="1",
                                                       new_image={"pk": {"S": "o-1"}, "n": {"S": p}})]},
         _batch_failed),
    Case("idempotent_http atomic", _http, lambda p: http_event({"order": p}, key="k-1"), _status_failed),
    Case("idempotent_task", _task, lambda p: task_payload({"order": p}, execution="exec-1"), _raised),
    Case("WebhookReceiver on_receipt", _webhook, _github, _status_failed, changed_is_new=True),
]


def _call(entry: Callable[[Any, Any], Any], event: Any) -> Any:
    try:
        return entry(event, DrillContext())
    except Exception as error:  # noqa: BLE001  # the answer of an entry point that raises (compared like any other)
        return error


def _items(ddb: Any, table: str) -> list[dict[str, Any]]:
    items = ddb.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(({k: v for k, v in item.items() if k not in _RANDOM} for item in items),
                  key=lambda item: json.dumps(item, sort_keys=True))


def _clear(ddb: Any) -> None:
    for table in (TABLE, ORDERS):
        for item in ddb.scan(TableName=table)["Items"]:
            key = {"pk": item["pk"], "sk": item["sk"]} if "sk" in item else {"pk": item["pk"]}
            ddb.delete_item(TableName=table, Key=key)


def _comparable(answer: Any) -> Any:
    if isinstance(answer, BaseException):
        return type(answer).__name__
    if isinstance(answer, dict) and "statusCode" in answer:
        return answer["statusCode"], answer.get("body")
    return answer


@pytest.fixture
def engine(store: Any, clock: Clock) -> Engine:
    return Engine(store, cache=None, clock=clock)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_async_handler_writes_what_its_sync_twin_writes(case: Case, ddb: Any, engine: Engine, calls: Any) -> None:
    seen: dict[bool, tuple[Any, ...]] = {}
    for is_async in (False, True):
        _clear(ddb)
        effects = Effects()
        entry = case.build(is_async, engine, effects)
        calls.reset()
        first = _call(entry, case.event("a"))
        first_calls = dict(calls.calls)
        records, orders = _items(ddb, TABLE), _items(ddb, ORDERS)
        calls.reset()
        again = _call(entry, case.event("a"))
        replay_calls = dict(calls.calls)
        assert not case.failed(first) and not case.failed(again)
        assert _items(ddb, TABLE) == records and _items(ddb, ORDERS) == orders  # the replay wrote nothing
        changed = _call(entry, case.event("b"))
        assert case.failed(changed) is not case.changed_is_new
        # atomic work runs on a replay (its writes are refused with the transaction); claim-first work does not
        seen[is_async] = (_comparable(first), first_calls, records, orders, _comparable(again), replay_calls,
                          _comparable(changed), len(effects.runs))
    assert seen[True] == seen[False]
    assert seen[True][2], "a record was written"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_async_handler_that_raises_releases_its_key(case: Case, ddb: Any, engine: Engine, calls: Any) -> None:
    effects = Effects(fail=True)
    entry = case.build(True, engine, effects)
    calls.reset()
    failed = _call(entry, case.event("a"))
    assert case.failed(failed)
    released_calls = dict(calls.calls)
    assert _items(ddb, ORDERS) == []
    assert all(item.get("state", {}).get("S") != "completed" for item in _items(ddb, TABLE))
    effects.fail = False
    assert not case.failed(_call(entry, case.event("a")))  # the retry runs (nothing holds the key)
    assert len(effects.runs) == 1
    # the sync twin's failure costs the same round trips
    _clear(ddb)
    twin = case.build(False, engine, Effects(fail=True))
    calls.reset()
    _call(twin, case.event("a"))
    assert dict(calls.calls) == released_calls


def test_the_round_trips_of_an_async_handler_are_the_documented_ones(ddb: Any, engine: Engine, calls: Any) -> None:
    atomic = _event_handler(True, engine, Effects(), txn=True)
    claim_first = _event_handler(True, engine, Effects(), txn=False)
    calls.reset()
    atomic(_eventbridge("a"), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}  # atomic: the record with the handler's write
    calls.reset()
    atomic(_eventbridge("a"), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1}  # the replay: the refused transaction returns the record
    calls.reset()
    claim_first({**_eventbridge("a"), "id": "evt-2"}, DrillContext())
    assert calls.calls == {"PutItem": 2}  # the claim, then its owner-conditioned completion


def test_the_mode_of_an_async_handler_follows_its_signature(engine: Engine) -> None:
    assert _event_handler(True, engine, Effects(), txn=True).idempotency.mode.value == "atomic"
    assert _event_handler(True, engine, Effects(), txn=False).idempotency.mode.value == "claim_first"


def test_an_async_lambda_handler_called_inside_a_running_loop_is_refused(ddb: Any, engine: Engine) -> None:
    effects = Effects()
    entry = _event_handler(True, engine, effects, txn=True)

    async def caller() -> Any:
        return entry(_eventbridge("a"), DrillContext())

    with pytest.raises(ConfigurationError, match="event loop is already running"):
        asyncio.run(caller())
    assert effects.runs == [] and _items(ddb, TABLE) == []


def test_warm_invocations_share_one_loop_and_see_the_invocations_context(ddb: Any, engine: Engine) -> None:
    import contextvars

    request: contextvars.ContextVar[str] = contextvars.ContextVar("request")
    loops: list[asyncio.AbstractEventLoop] = []
    seen: list[str] = []

    @idempotent(operation="Loop", subscriber="s", engine=engine)
    async def handler(event: Any, context: Any) -> None:
        loops.append(asyncio.get_running_loop())
        seen.append(request.get())

    for n in ("1", "2"):
        request.set(f"req-{n}")
        handler({**_eventbridge("a"), "id": f"evt-{n}"}, DrillContext())
    assert seen == ["req-1", "req-2"]
    assert loops[0] is loops[1] and not loops[0].is_closed()  # a client made on it in the first still works


# -- @idempotent_function on an async def ---------------------------------------------------------------------


def test_an_async_function_is_awaited_once_with_the_round_trips_and_record_of_its_sync_twin(
        ddb: Any, engine: Engine, calls: Any) -> None:
    effects = Effects()

    @idempotent_function(data_keyword_argument="order", subscriber="s", operation="Charge", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return effects.run(order, None)

    @idempotent_function(data_keyword_argument="order", subscriber="s", operation="Charge", key="id", engine=engine)
    def charge_sync(order: dict[str, Any]) -> dict[str, Any]:
        return twin.run(order, None)

    assert asyncio.iscoroutinefunction(charge)
    calls.reset()
    first = asyncio.run(charge(order={"id": "o-1", "total": 3}))
    assert calls.calls == {"PutItem": 2}  # claim-first: the claim, then its completion
    records = _items(ddb, TABLE)
    calls.reset()
    assert asyncio.run(charge({"id": "o-1", "total": 3})) == first == {"done": 1}
    assert calls.calls == {"PutItem": 1}  # the replay: the refused claim returns the record
    with pytest.raises(KeyReuseMismatchError):
        asyncio.run(charge(order={"id": "o-1", "total": 4}))
    _clear(ddb)
    twin = Effects()
    assert charge_sync(order={"id": "o-1", "total": 3}) == {"done": 1}
    assert _items(ddb, TABLE) == records


def test_an_async_function_taking_txn_is_atomic_in_one_round_trip(ddb: Any, engine: Engine, calls: Any) -> None:
    effects = Effects()

    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def invoice(order: dict[str, Any], txn: Transaction) -> dict[str, Any]:
        await asyncio.sleep(0)
        return effects.run(order, txn)

    assert invoice.idempotency.mode.value == "atomic"  # type: ignore[attr-defined]
    calls.reset()
    assert asyncio.run(invoice(order={"id": "o-1"})) == {"done": 1}
    assert calls.calls == {"TransactWriteItems": 1}
    assert len(_items(ddb, ORDERS)) == 1


def test_an_async_function_that_raises_releases_its_claim(ddb: Any, engine: Engine, calls: Any) -> None:
    effects = Effects(fail=True)

    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        return effects.run(order, None)

    calls.reset()
    with pytest.raises(RuntimeError, match="the handler failed"):
        asyncio.run(charge(order={"id": "o-1"}))
    assert calls.calls == {"PutItem": 1, "DeleteItem": 1}  # the claim, then its release
    assert _items(ddb, TABLE) == []
    effects.fail = False
    assert asyncio.run(charge(order={"id": "o-1"})) == {"done": 1}


def test_an_async_function_runs_on_the_callers_loop_and_dynamodb_calls_do_not(ddb: Any, engine: Engine) -> None:
    threads: list[str] = []
    engine.store.client.meta.events.register(
        "before-call.dynamodb", lambda **_: threads.append(threading.current_thread().name))

    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> int:
        return id(asyncio.get_running_loop())

    async def main() -> None:
        assert await charge(order={"id": "o-1"}) == id(asyncio.get_running_loop())
        assert threads and threading.main_thread().name not in threads

    asyncio.run(main())


def test_a_cancelled_caller_never_commits_and_frees_the_key(ddb: Any, engine: Engine, calls: Any) -> None:
    gate = asyncio.Event()
    runs: list[str] = []

    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> str:
        runs.append("started")
        gate.set()
        await asyncio.sleep(3600)  # cancelled long before
        runs.append("finished")
        return "charged"

    async def main() -> None:
        task = asyncio.ensure_future(charge(order={"id": "o-1"}))
        await gate.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # the cancellation reached the caller after the claim was released
        assert _items(ddb, TABLE) == []

    calls.reset()
    asyncio.run(main())
    assert runs == ["started"]
    assert calls.calls == {"PutItem": 1, "DeleteItem": 1}


def test_a_function_that_swallows_its_cancellation_is_still_not_committed(ddb: Any, engine: Engine) -> None:
    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> str:
        gate.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            return "swallowed"  # its caller is gone all the same
        return "charged"

    async def main() -> None:
        task = asyncio.ensure_future(charge(order={"id": "o-1"}))
        await gate.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    gate = asyncio.Event()
    asyncio.run(main())
    assert _items(ddb, TABLE) == []


def test_async_functions_nest_and_run_concurrently(ddb: Any, engine: Engine) -> None:
    @idempotent_function(data_keyword_argument="order", subscriber="s", operation="Inner", key="id", engine=engine)
    async def inner(order: dict[str, Any]) -> int:
        await asyncio.sleep(0)
        return int(order["id"])

    @idempotent_function(data_keyword_argument="order", subscriber="s", operation="Outer", key="id", engine=engine)
    async def outer(order: dict[str, Any]) -> int:
        return await inner(order=order) * 10

    async def main() -> list[int]:
        # more than a default thread pool holds: one thread per call, so nesting cannot deadlock
        return list(await asyncio.gather(*(outer(order={"id": str(n)}) for n in range(40))))

    assert asyncio.run(main()) == [n * 10 for n in range(40)]
    assert len(_items(ddb, TABLE)) == 80


def test_a_caller_cancelled_while_the_engine_commits_gets_its_cancellation_after_the_commit(
        ddb: Any, engine: Engine) -> None:
    committing = threading.Event()
    proceed = threading.Event()
    puts: list[str] = []

    def hold_the_completion(**_: Any) -> None:
        puts.append("PutItem")
        if len(puts) == 2:  # the completing PutItem: the function has returned
            committing.set()
            proceed.wait(30)

    engine.store.client.meta.events.register("before-call.dynamodb.PutItem", hold_the_completion)

    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> str:
        return "charged"

    async def main() -> None:
        task = asyncio.ensure_future(charge(order={"id": "o-1"}))
        while not committing.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0)
        proceed.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [item["st"]["S"] for item in _items(ddb, TABLE)] == ["completed"]  # a retry replays it
    assert asyncio.run(charge(order={"id": "o-1"})) == "charged" and len(puts) == 3


def test_an_async_function_inside_an_async_handler_leases_its_claim_for_the_invocation(
        ddb: Any, engine: Engine, clock: Clock) -> None:
    from retrysafe.names import LEASE_MARGIN_SECONDS

    leases: list[int] = []

    @idempotent_function(data_keyword_argument="order", subscriber="s", key="id", engine=engine)
    async def charge(order: dict[str, Any]) -> str:
        leases.extend(int(item["le"]["N"]) for item in _items(ddb, TABLE) if "le" in item)
        return "charged"

    @idempotent(operation="Checkout", subscriber="s", key="detail.order", engine=engine)
    async def handler(event: Any, context: Any) -> str:
        return await charge(order={"id": event["detail"]["order"]})

    assert handler(_eventbridge("o-1"), DrillContext(remaining_ms=600_000)) == "charged"
    # two claims: the handler's and the function's, both the invocation's remaining time plus the margin
    assert leases == [int((clock() + 600 + LEASE_MARGIN_SECONDS) * 1000)] * 2
