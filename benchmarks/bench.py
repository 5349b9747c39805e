"""Side-by-side benchmark of retrysafe and Powertools idempotency (``make bench``).

Both libraries run the same create-order workload (HTTP API v2 request, one order write, one event
write, ~1 KiB JSON answer) on real botocore clients, in two variants. In process: their HTTP layer is
answered by a small DynamoDB model (:mod:`benchmarks.ddb_model`), so request building, validation,
signing and parsing are paid by both sides, the HTTP stack by neither (kept for regression tracking).
Over a socket: the same model answers on 127.0.0.1 from another process (:mod:`benchmarks.ddb_server`),
so each call also pays urllib3, the socket and reading the reply, as in Lambda (TLS excepted).
Every ratio is retrysafe (atomic) / Powertools from measurements interleaved in this one run. Writes
``benchmarks/results.json``, ``benchmarks/RESULTS.md`` and ``benchmarks/comparison.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

from retrysafe import names

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REGION = "eu-west-1"
#: The environment of every measurement (the fresh cold-start processes inherit it).
ENV = {"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "bench",
       "AWS_SECRET_ACCESS_KEY": "bench", names.TABLE_ENV: "bench-idempotency",
       "POWERTOOLS_IDEMPOTENCY_DISABLED": "0", names.LAMBDA_FUNCTION_NAME_ENV: "bench"}
os.environ.update(ENV)
# Lambda sets no CA bundle nor proxy: this machine's would make the fast transport fall back to botocore.
for _name in ("AWS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
    os.environ.pop(_name, None)
sys.path.insert(0, str(ROOT))

from benchmarks.lambda_botocore import load_botocore_without_awscrt, require_botocore_without_awscrt

# botocore as Lambda's runtime has it (no awscrt): see benchmarks/lambda_botocore.py.
load_botocore_without_awscrt()

from benchmarks import moto_server, report, workload
from benchmarks.ddb_model import DynamoModel, item_size
from benchmarks.ddb_server import ENDPOINT_ENV, ModelServer, pointed_at

SIDES = ("retrysafe_atomic", "retrysafe_claim_first", "powertools")
#: retrysafe (atomic) on a client like the Powertools user's (botocore's parameter validation on): CPU only.
VALIDATING = "retrysafe_atomic_validating"
#: The latency model: one request at a time, as in one Lambda container.
CALL_MS = 4.0
TRANSACTION_MS = 8.0
REPLAY_SHARES = (0.0, 0.05, 0.5)
#: retrysafe (atomic) / Powertools, and whether lower is better.
#: ``*_other``: the same targets with every replay landing on a container that has not seen its key.
TARGETS = {"first_cpu": (0.35, "<="), "replay_cpu": (0.8, "<="), "replay_cpu_other": (0.8, "<="),
           "cold_start": (0.7, "<="), "throughput_5": (2.2, ">="), "throughput_5_other": (2.2, ">="),
           "throughput_50": (1.35, ">="), "throughput_50_other": (1.35, ">="), "sqs_redelivery_cpu": (0.5, "<=")}

_MADE = itertools.count()
_SINK = open(os.devnull, "w")  # noqa: SIM115 - kept open: loggers created inside quiet() hold on to it


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Swallow the EMF/log lines both libraries print, at the cost of a real write call."""
    with contextlib.redirect_stdout(_SINK):
        yield


class Side:
    """One library on its own model tables: its handler, the keys it completed, its DynamoDB calls.

    retrysafe's handler runs on a store built as :meth:`DynamoStore.from_env` builds it, with its container
    cache; ``other`` is the same handler in another container (no cache), so a replay there is answered
    by DynamoDB. Powertools keeps no local cache by default: both of its replays go to DynamoDB.
    With ``server`` the clients talk to it over 127.0.0.1 (the sides share its tables; their keys differ).
    """

    def __init__(self, side: str, server: ModelServer | None = None) -> None:
        self.side = side
        self.server = server
        self.model = None if server is not None else DynamoModel(workload.model_tables())
        with pointed_at(server.endpoint) if server is not None else contextlib.nullcontext():
            self.handler = make_handler(side, self.model)
            self.other = make_handler(side, self.model, cache=False) if side != "powertools" else self.handler
        self.completed: list[str] = []
        self.replays = 0
        self.prefix = f"{side}-{next(_MADE)}"  # a server's tables outlive a Side: its keys are its own

    def run(self, key: str, handler: Callable[..., Any] | None = None) -> tuple[float, list[str], dict[str, Any]]:
        """(thread CPU µs of one request, the in-process model's own time excluded; its DynamoDB calls, or none
        listed over a socket (see :meth:`usage`); the response)."""
        model = self.model
        calls_before, model_before = (len(model.usage.calls), model.cpu_ns) if model is not None else (0, 0)
        start = time.thread_time_ns()
        response = (handler or self.handler)(workload.order_event(key), workload.Context())
        spent = time.thread_time_ns() - start - ((model.cpu_ns - model_before) if model is not None else 0)
        if response.get("statusCode") != 201:
            raise RuntimeError(f"{self.side}: request {key} answered {response}")
        return spent / 1000, model.usage.calls[calls_before:] if model is not None else [], response

    def usage(self) -> dict[str, Any]:
        """The calls and capacity units since the previous :meth:`usage` (then counted from zero)."""
        if self.server is not None:
            return self.server.usage()
        assert self.model is not None
        return self.model.reset_usage().as_dict()

    def first(self) -> tuple[float, list[str], dict[str, Any]]:
        key = f"{self.prefix}-{len(self.completed)}"
        self.completed.append(key)
        return self.run(key)

    def replay(self, other: bool = False) -> tuple[float, list[str], dict[str, Any]]:
        """A replay of a completed key in this container, or (``other``) in a container that has not seen it."""
        self.replays += 1
        response = self.run(self.completed[(self.replays * 7919) % len(self.completed)],
                            self.other if other else None)
        if response[2].get("headers", {}).get(names.REPLAYED_HEADER) != "true" and self.side != "powertools":
            raise RuntimeError(f"{self.side}: a replay was not answered as one: {response[2]}")
        return response


def make_handler(side: str, model: DynamoModel | None = None, client: Any = None,
                 cache: bool = True) -> Callable[..., Any]:
    """The workload handler of ``side``; its clients answered by ``model`` (or ``client`` as given).

    retrysafe's store has the container cache :meth:`DynamoStore.from_env` gives it, unless ``cache`` is false.
    """
    if side == "powertools":
        if client is None:
            client = workload.user_client()
        if model is not None:
            model.install(client)
        return workload.powertools_handler(client)
    from retrysafe import DynamoStore, Engine, RecordCache

    if side == VALIDATING:
        client = workload.user_client()
    # Without a client: the store's own, as deployed (created now, as in Lambda's init phase).
    store = DynamoStore(workload.TABLE, client=client, cache=RecordCache() if cache else None)
    store.client  # noqa: B018
    if model is not None:
        model.install(store.client)
    mode = "claim_first" if side == "retrysafe_claim_first" else "atomic"
    return workload.retrysafe_handler(mode, Engine(store))


# -- 1. round trips and capacity units ---------------------------------------------
def round_trips_and_units(server: ModelServer | None = None) -> dict[str, Any]:
    """DynamoDB calls and capacity units of a first request, its replays and (in process) an in-flight duplicate."""
    result: dict[str, Any] = {}
    with quiet():
        for side in SIDES:
            runner = Side(side, server)
            runner.usage()
            runner.first()
            first = runner.usage()
            runner.replay()
            replay = runner.usage()
            runner.replay(other=True)
            other = runner.usage()
            result[side] = {"first": first, "replay": replay, "replay_other_container": other}
            if server is None:
                result[side]["in_flight_duplicate"] = _in_flight(side)
    return result


def record_only_units() -> dict[str, Any]:
    """Calls and capacity units of a first request whose handler writes nothing but the idempotency record
    (:func:`workload.quote`), and of its replay in another container."""
    from retrysafe import DynamoStore, Engine, idempotent_http

    result: dict[str, Any] = {}
    with quiet():
        for side in ("retrysafe_atomic", "retrysafe_claim_first", "powertools"):
            model = DynamoModel(workload.model_tables())
            if side == "powertools":
                handlers = [workload.powertools_quote_handler(model.install(workload.user_client()))] * 2
            else:
                mode = "atomic" if side == "retrysafe_atomic" else "claim_first"
                handlers = []
                for _ in range(2):  # two containers: the second has not seen the key
                    store = DynamoStore(workload.TABLE)
                    model.install(store.client)
                    handlers.append(idempotent_http(workload.quote, operation="Quote", mode=mode, engine=Engine(store)))
            entry: dict[str, Any] = {}
            for kind, handler in (("first", handlers[0]), ("replay_other_container", handlers[1])):
                response = handler(workload.order_event("quote-1"), workload.Context())
                if response.get("statusCode") != 201:
                    raise RuntimeError(f"{side}: a quote answered {response}")
                entry[kind] = model.reset_usage().as_dict()
            result[side] = entry
    return result


def cutover_units() -> dict[str, Any]:
    """The cut-over from Powertools (``powertools_cutover=``) while its window is open, per retrysafe mode:
    a first request Powertools never saw, the retry of one it completed (answered from Powertools' record),
    and that retry again in another container. Calls and units, in process."""
    from retrysafe import DynamoStore, Engine, PowertoolsCutover, idempotent_http

    cutover = PowertoolsCutover(function_name="benchmarks.workload.powertools_handler.<locals>.handler",
                                event_key_jmespath='headers."idempotency-key"', payload_validation_jmespath="body",
                                table_name=workload.POWERTOOLS_TABLE, until=time.time() + 3600)
    result: dict[str, Any] = {}
    with quiet():
        for mode in ("atomic", "claim_first"):
            model = DynamoModel(workload.model_tables())
            old = workload.powertools_handler(model.install(workload.user_client()))
            old(workload.order_event("before-the-deploy"), workload.Context())
            handlers = []
            for _ in range(2):  # two containers: the second has not seen the key
                store = DynamoStore(workload.TABLE)
                model.install(store.client)
                handlers.append(idempotent_http(workload.create_order, operation="CreateOrder", mode=mode,
                                                powertools_cutover=cutover, engine=Engine(store)))
            model.reset_usage()
            entry: dict[str, Any] = {}
            for kind, handler, key in (("first", handlers[0], "after-the-deploy"),
                                       ("retry_of_a_powertools_request", handlers[0], "before-the-deploy"),
                                       ("that_retry_in_another_container", handlers[1], "before-the-deploy")):
                response = handler(workload.order_event(key), workload.Context())
                if response.get("statusCode") != 201:
                    raise RuntimeError(f"cut-over {mode}: {key} answered {response}")
                entry[kind] = model.reset_usage().as_dict()
            result[f"retrysafe_{mode}"] = entry
    return result


def _in_flight(side: str) -> list[str]:
    """Calls made by a duplicate that arrives while the first request is still inside the same handler."""
    model = DynamoModel(workload.model_tables())
    measured: list[list[str]] = []
    state = {"entered": False}

    def body(again: Callable[[], Any]) -> dict[str, Any]:
        if not state["entered"]:
            state["entered"] = True
            before = len(model.usage.calls)
            with contextlib.suppress(Exception):  # Powertools raises IdempotencyAlreadyInProgressError
                again()
            measured.append(model.usage.calls[before:])
        return {"statusCode": 201, "body": "{}"}

    event = workload.order_event("in-flight")
    if side == "powertools":
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent,
        )

        client = model.install(workload.user_client())
        config = IdempotencyConfig(event_key_jmespath='headers."idempotency-key"', payload_validation_jmespath="body")

        @idempotent(persistence_store=DynamoDBPersistenceLayer(table_name=workload.POWERTOOLS_TABLE,
                                                               boto3_client=client), config=config)
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return body(lambda: handler(event, context))
    else:
        from retrysafe import DynamoStore, Engine, idempotent_http

        store = DynamoStore(workload.TABLE)
        model.install(store.client)

        @idempotent_http(operation="InFlight", mode="atomic" if side == "retrysafe_atomic" else "claim_first",
                         engine=Engine(store))
        def handler(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
            return body(lambda: handler(event, context))

    handler(event, workload.Context())
    return measured[0]


# -- 2. CPU per request ------------------------------------------------------------
def cpu_per_request(requests: int, block: int = 20, server: ModelServer | None = None) -> dict[str, Any]:
    """Thread CPU time per request (µs): first requests, replays in the same container and replays in
    another container (``replay_other``), sides interleaved block by block; with ``server``, over its socket
    (the server's CPU is in its own process, outside this thread's)."""
    sides = (*SIDES, VALIDATING)
    kinds = ("first", "replay", "replay_other")
    samples: dict[str, dict[str, list[float]]] = {s: {k: [] for k in kinds} for s in sides}
    calls: dict[str, dict[str, list[str]]] = {s: {} for s in sides}
    with quiet():
        runners = {s: Side(s, server) for s in sides}
        for runner in runners.values():  # warm-up: imports, caches, branch predictors
            for _ in range(30):
                runner.first()
                runner.replay()
                runner.replay(other=True)
        for round_index in range(max(1, requests // block)):
            order = sides[round_index % len(sides):] + sides[:round_index % len(sides)]
            for side in order:
                runner = runners[side]
                for _ in range(block):
                    for kind in kinds:
                        spent, made, _ = runner.replay(other=True) if kind == "replay_other" else getattr(runner, kind)()
                        samples[side][kind].append(spent)
                        calls[side][kind] = made
        if server is not None:  # the calls of one more request of each kind, as the server saw them
            for side, runner in runners.items():
                for kind in kinds:
                    runner.usage()
                    if kind == "replay_other":
                        runner.replay(other=True)
                    else:
                        getattr(runner, kind)()
                    calls[side][kind] = runner.usage()["calls"]
    result: dict[str, Any] = {}
    for side in sides:
        result[side] = {"requests": sum(len(v) for v in samples[side].values())}
        for kind in kinds:
            values = samples[side][kind]
            result[side] |= {f"{kind}_median": statistics.median(values), f"{kind}_p90": _percentile(values, 0.9),
                             f"{kind}_calls": calls[side][kind]}
    return result


#: The SQS consumers measured by :func:`sqs_redelivery`: retrysafe (atomic) with its retry hints (the
#: default) and without them, and Powertools.
SQS_SIDES = ("retrysafe_atomic", "retrysafe_atomic_no_hints", "powertools")


def sqs_handler(side: str, model: DynamoModel | None, cache: bool) -> Callable[..., Any]:
    """The SQS consumer of ``side`` on ``model`` (over a socket when ``model`` is ``None``)."""
    if side == "powertools":
        client = workload.user_client()
        if model is not None:
            model.install(client)
        return cast(Callable[..., Any], workload.powertools_sqs_handler(client))
    from retrysafe import DynamoStore, Engine, RecordCache

    store = DynamoStore(workload.TABLE, cache=RecordCache() if cache else None)
    store.client  # noqa: B018
    if model is not None:
        model.install(store.client)
    return cast(Callable[..., Any], workload.retrysafe_sqs_handler(Engine(store),
                                                                   retry_hints=side == "retrysafe_atomic"))


def sqs_redelivery(requests: int, block: int = 20, server: ModelServer | None = None) -> dict[str, Any]:
    """Thread CPU per redelivery (receive count 2) of an already processed SQS message in a cold container
    (no record cache: every redelivery goes to DynamoDB), sides interleaved block by block; each message is
    first processed (receive count 1, not measured) by another container of the same side."""
    samples: dict[str, list[float]] = {side: [] for side in SQS_SIDES}
    calls: dict[str, Any] = {}
    made = itertools.count()
    with quiet():
        runners = {}
        for side in SQS_SIDES:
            model = None if server is not None else DynamoModel(workload.model_tables())
            with pointed_at(server.endpoint) if server is not None else contextlib.nullcontext():
                runners[side] = (model, sqs_handler(side, model, cache=True), sqs_handler(side, model, cache=False))

        def redeliver(side: str) -> tuple[float, list[str]]:
            model, first, cold = runners[side]
            message_id = f"{side}-{next(made)}"
            if first(workload.sqs_message(message_id, 1), workload.Context())["batchItemFailures"]:
                raise RuntimeError(f"{side}: the first delivery of {message_id} failed")
            event = workload.sqs_message(message_id, 2)
            calls_before, model_before = (len(model.usage.calls), model.cpu_ns) if model is not None else (0, 0)
            start = time.thread_time_ns()
            answer = cold(event, workload.Context())
            spent = time.thread_time_ns() - start - ((model.cpu_ns - model_before) if model is not None else 0)
            if answer["batchItemFailures"]:
                raise RuntimeError(f"{side}: the redelivery of {message_id} failed: {answer}")
            return spent / 1000, model.usage.calls[calls_before:] if model is not None else []

        for side in SQS_SIDES:  # warm-up
            for _ in range(30):
                redeliver(side)
        for round_index in range(max(1, requests // block)):
            order = SQS_SIDES[round_index % len(SQS_SIDES):] + SQS_SIDES[:round_index % len(SQS_SIDES)]
            for side in order:
                for _ in range(block):
                    spent, made_calls = redeliver(side)
                    samples[side].append(spent)
                    calls[side] = made_calls
        if server is not None:  # the calls of one more redelivery, as the server saw them
            for side in SQS_SIDES:
                model, first, cold = runners[side]
                first(workload.sqs_message(f"{side}-last", 1), workload.Context())
                server.usage()
                cold(workload.sqs_message(f"{side}-last", 2), workload.Context())
                calls[side] = server.usage()["calls"]
    result: dict[str, Any] = {side: {"redelivery_median": statistics.median(samples[side]),
                                     "redelivery_p90": _percentile(samples[side], 0.9),
                                     "redelivery_calls": calls[side], "requests": len(samples[side])}
                              for side in SQS_SIDES}
    if server is None:
        result["refused_put_floor"] = _refused_put(requests)
    return result


def _refused_put(requests: int) -> float:
    """Median thread CPU (µs) of botocore's work alone on one refused conditional ``PutItem`` (``ALL_OLD``),
    on a client configured as retrysafe's store's: the floor under any redelivery that makes that call."""
    from retrysafe import DynamoStore

    model = DynamoModel(workload.model_tables())
    client = model.install(DynamoStore(workload.TABLE).client)
    item = {"pk": {"S": "idem#floor"}, "st": {"S": "completed"}, "exp": {"N": "4102444800"}}
    client.put_item(TableName=workload.TABLE, Item=item)
    values = []
    for _ in range(max(requests, 50)):
        model_before = model.cpu_ns
        start = time.thread_time_ns()
        with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):
            client.put_item(TableName=workload.TABLE, Item=item, ConditionExpression="attribute_not_exists(pk)",
                            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        values.append((time.thread_time_ns() - start - (model.cpu_ns - model_before)) / 1000)
    return statistics.median(values)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def where_the_cpu_goes(requests: int = 400) -> dict[str, Any]:
    """retrysafe (atomic) per-request CPU split (median µs): botocore's call, the handler's own work
    (:func:`workload.create_order`, its ``txn`` calls included), building the test event, and the rest:
    what retrysafe does around the handler (HTTP parsing, key and fingerprint, record, cache, answer)."""
    from retrysafe import DynamoStore

    original = DynamoStore._call
    inside = {"call": 0, "handler": 0}

    def timed(store: Any, operation: str, **kwargs: Any) -> Any:
        start = time.thread_time_ns()
        try:
            return original(store, operation, **kwargs)
        finally:
            inside["call"] += time.thread_time_ns() - start

    def timed_handler(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        start = time.thread_time_ns()
        try:
            return workload.create_order(event, context, txn)
        finally:
            inside["handler"] += time.thread_time_ns() - start

    result: dict[str, Any] = {}
    with quiet():
        runner = Side("retrysafe_atomic")
        here, there = cast(Any, runner.handler), cast(Any, runner.other)  # idempotent_http's entry points
        runner.handler = workload.retrysafe_handler("atomic", here.idempotency.engine, timed_handler)
        runner.other = workload.retrysafe_handler("atomic", there.idempotency.engine, timed_handler)
        for _ in range(30):
            runner.first()
            runner.replay()
        DynamoStore._call = timed  # type: ignore[method-assign]
        try:
            for kind in ("first", "replay", "replay_other"):
                totals, calls, handlers = [], [], []
                for _ in range(requests):
                    inside["call"] = inside["handler"] = 0
                    model_before = runner.model.cpu_ns
                    spent, _, _ = runner.replay(other=True) if kind == "replay_other" else getattr(runner, kind)()
                    totals.append(spent)
                    calls.append((inside["call"] - (runner.model.cpu_ns - model_before)) / 1000)
                    handlers.append(inside["handler"] / 1000)
                result[kind] = {"total": statistics.median(totals), "botocore_call": statistics.median(calls),
                                "handler": statistics.median(handlers)}
        finally:
            DynamoStore._call = original  # type: ignore[method-assign]
    events = []
    for index in range(requests):
        start = time.thread_time_ns()
        workload.order_event(f"event-{index}")
        events.append((time.thread_time_ns() - start) / 1000)
    result["event"] = statistics.median(events)
    for kind in ("first", "replay", "replay_other"):
        part = result[kind]
        part["around_handler"] = max(0.0, part["total"] - part["botocore_call"] - part["handler"] - result["event"])
    return result


def first_request_budget(cpu: dict[str, Any], split: dict[str, Any]) -> dict[str, float]:
    """What the first-request target leaves retrysafe's own work around the handler, in this run (µs).

    ``floor_ratio`` is the ratio a library with zero CPU around the handler would reach: botocore's one
    ``TransactWriteItems``, the handler's own work and the event, against Powertools' first request.
    """
    first, powertools = split["first"], cpu["powertools"]["first_median"]
    fixed = first["botocore_call"] + first["handler"] + split["event"]
    return {"powertools": powertools, "fixed": fixed, "floor_ratio": fixed / powertools,
            "budget": TARGETS["first_cpu"][0] * powertools - fixed, "around_handler": first["around_handler"]}


def botocore_floor(runs: int = 7) -> dict[str, Any]:
    """CPU of importing ``botocore.session`` and creating a DynamoDB client in a fresh process (median ms),
    awscrt hidden as in Lambda: a stock session's client (what Powertools' users pay) and the store's
    (:func:`retrysafe._botodata.dynamodb_client`, botocore's data for DynamoDB alone), alternating."""
    script = ("import sys, time; from benchmarks.lambda_botocore import hide_awscrt; hide_awscrt(); "
              "t = time.process_time(); import botocore.session\n"
              "if sys.argv[1] == 'stock':\n botocore.session.Session().create_client('dynamodb')\n"
              "else:\n from retrysafe._botodata import dynamodb_client; dynamodb_client(None, None)\n"
              "print((time.process_time() - t) * 1000)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "runtime"), str(ROOT)])}
    values: dict[str, list[float]] = {"stock": [], "store": []}
    for index in range(runs):
        for side in (("stock", "store") if index % 2 == 0 else ("store", "stock")):
            values[side].append(float(subprocess.run([sys.executable, "-c", script, side], capture_output=True,
                                                     text=True, check=True, cwd=ROOT, env=env).stdout))
    return {"import_and_client_cpu_ms": statistics.median(values["stock"]),
            "import_and_store_client_cpu_ms": statistics.median(values["store"]), "runs": runs}


# -- 3. cold start -------------------------------------------------------------------
def cold_start(runs: int, server: ModelServer | None = None,
               sides: tuple[str, str] = ("retrysafe", "powertools")) -> dict[str, Any]:
    """Import + first invocation (client creation included) in fresh processes, the two ``sides`` alternating
    (``benchmarks/handlers/{side}_orders.py``); with ``server``, the first invocation's calls go over a new
    connection to it (each run its own key)."""
    import retrysafe

    # Both sides import from bytecode, as after a pip install (pip compiled site-packages; this checkout
    # is compiled here, since PYTHONDONTWRITEBYTECODE may be set).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(retrysafe.__file__).parent), str(HERE)],
                   check=True)
    # This checkout's runtime first: the editable install's finder may point at another checkout (a worktree's).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(retrysafe.__file__).parents[1]), str(ROOT)]),
           "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"}  # as Lambda sets it
    if server is not None:
        env[ENDPOINT_ENV] = server.endpoint
    rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for index in range(runs):
        for side in (sides if index % 2 == 0 else sides[::-1]):
            if server is not None:
                server.usage()
            # the fast transport's side is the same handler, the transport selected as a user would
            side_env = {**env, names.TRANSPORT_ENV: "crt"} if side.endswith("_awscrt") else env
            proc = subprocess.run([sys.executable, "-m", "benchmarks.coldstart", side, f"cold-{side}-{index}"],
                                  cwd=ROOT, env=side_env, capture_output=True, text=True, check=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            if row["awscrt_loaded"] != side.endswith("_awscrt"):  # botocore's sides as in Lambda: no awscrt
                raise RuntimeError(f"cold start of {side}: awscrt loaded = {row['awscrt_loaded']}")
            if server is not None:
                row["calls"] = server.usage()["calls"]
            rows[side].append(row)
    result: dict[str, Any] = {"runs": runs}
    for side, values in rows.items():
        totals = [r["total_ms"] for r in values]
        cpu = [r["total_cpu_ms"] for r in values]
        result[side] = {"median_ms": statistics.median(totals), "min_ms": min(totals),
                        "cpu_median_ms": statistics.median(cpu), "cpu_min_ms": min(cpu),
                        "import_median_ms": statistics.median(r["import_ms"] for r in values),
                        "first_invocation_median_ms": statistics.median(r["first_invocation_ms"] for r in values),
                        "calls": values[0]["calls"]}
    return result


# -- 4. latency model -------------------------------------------------------------
def latency_model(cpu: dict[str, Any]) -> dict[str, Any]:
    """Requests/s of one container serving one request at a time: measured CPU + modelled DynamoDB latency.

    ``rps_N``: N% replays answered in the container that completed them (retrysafe's cache);
    ``rps_N_other``: every replay lands on another container (retrysafe's replay goes to DynamoDB).
    """
    result: dict[str, Any] = {"call_ms": CALL_MS, "transaction_ms": TRANSACTION_MS}
    pt = cpu["powertools"]
    rs = cpu["retrysafe_atomic"]
    for share in REPLAY_SHARES:  # the best ratio retrysafe (atomic) could reach with zero CPU of its own
        for suffix, kind in (("", "replay"), ("_other", "replay_other")):
            pt_ms = ((1 - share) * (pt["first_median"] / 1000 + _latency(pt["first_calls"]))
                     + share * (pt[f"{kind}_median"] / 1000 + _latency(pt[f"{kind}_calls"])))
            result[f"ratio_bound_{round(share * 100)}{suffix}"] = pt_ms / (
                (1 - share) * _latency(rs["first_calls"]) + share * _latency(rs[f"{kind}_calls"]))
    for side in SIDES:
        c = cpu[side]
        first_ms = c["first_median"] / 1000 + _latency(c["first_calls"])
        entry: dict[str, Any] = {"first_ms": first_ms}
        for suffix, kind in (("", "replay"), ("_other", "replay_other")):
            replay_ms = c[f"{kind}_median"] / 1000 + _latency(c[f"{kind}_calls"])
            entry[f"{kind}_ms"] = replay_ms
            entry |= {f"rps_{round(share * 100)}{suffix}": 1000 / ((1 - share) * first_ms + share * replay_ms)
                      for share in REPLAY_SHARES}
        result[side] = entry
    return result


def _latency(calls: list[str]) -> float:
    return sum(TRANSACTION_MS if call == "TransactWriteItems" else CALL_MS for call in calls)


# -- 5. stored record size ------------------------------------------------------------
def record_sizes() -> dict[str, Any]:
    """Stored record size for 1, 8 and 64 KiB JSON responses, and the write units it implies."""
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent,
    )
    from retrysafe import DynamoStore, Engine, idempotent_http

    sizes: dict[str, Any] = {}
    with quiet():
        for label, kib in (("1KiB", 1), ("8KiB", 8), ("64KiB", 64)):
            model = DynamoModel(workload.model_tables())
            body = _json_body(kib * 1024)

            def answer(*_: Any, body: str = body) -> dict[str, Any]:
                return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": body}

            store = DynamoStore(workload.TABLE)
            model.install(store.client)
            idempotent_http(answer, operation="Size", engine=Engine(store))(workload.order_event("size"), workload.Context())
            client = model.install(workload.user_client())
            config = IdempotencyConfig(event_key_jmespath='headers."idempotency-key"', payload_validation_jmespath="body")
            idempotent(persistence_store=DynamoDBPersistenceLayer(table_name=workload.POWERTOOLS_TABLE, boto3_client=client),
                       config=config)(answer)(workload.order_event("size"), workload.Context())
            rs = item_size(next(iter(model.tables[workload.TABLE].items.values())))
            pt = item_size(next(iter(model.tables[workload.POWERTOOLS_TABLE].items.values())))
            sizes[label] = {"response_bytes": len(body), "retrysafe_bytes": rs, "retrysafe_kib_units": -(-rs // 1024),
                            "powertools_bytes": pt, "powertools_kib_units": -(-pt // 1024)}
    return sizes


def _json_body(size: int) -> str:
    """A realistic JSON document of about ``size`` bytes (order lines)."""
    lines: list[dict[str, Any]] = []
    while len(json.dumps({"lines": lines})) < size - 80:
        i = len(lines)
        lines.append({"sku": f"SKU-{i:05d}", "qty": 1 + i % 4, "price": f"{5 + i % 17}.90", "name": f"Item {i % 40}"})
    return json.dumps({"lines": lines})


# -- output ---------------------------------------------------------------------------
def ratios(r: dict[str, Any]) -> dict[str, float]:
    """retrysafe (atomic) / Powertools for each target, in process (``r``) or over the socket (``r["socket"]``)."""
    cpu, cold, tput, sqs = r["cpu_us"], r["cold_start"], r["latency_model"], r["sqs_redelivery_us"]
    rs, pt = cpu["retrysafe_atomic"], cpu["powertools"]
    return {"first_cpu": rs["first_median"] / pt["first_median"], "replay_cpu": rs["replay_median"] / pt["replay_median"],
            "cold_start": cold["retrysafe"]["cpu_median_ms"] / cold["powertools"]["cpu_median_ms"],
            "cold_start_wall": cold["retrysafe"]["median_ms"] / cold["powertools"]["median_ms"],
            "throughput_0": tput["retrysafe_atomic"]["rps_0"] / tput["powertools"]["rps_0"],
            "throughput_5": tput["retrysafe_atomic"]["rps_5"] / tput["powertools"]["rps_5"],
            "throughput_50": tput["retrysafe_atomic"]["rps_50"] / tput["powertools"]["rps_50"],
            "replay_cpu_other": rs["replay_other_median"] / pt["replay_other_median"],
            "throughput_5_other": tput["retrysafe_atomic"]["rps_5_other"] / tput["powertools"]["rps_5_other"],
            "throughput_50_other": tput["retrysafe_atomic"]["rps_50_other"] / tput["powertools"]["rps_50_other"],
            "first_cpu_validating": cpu[VALIDATING]["first_median"] / pt["first_median"],
            "replay_cpu_validating": cpu[VALIDATING]["replay_median"] / pt["replay_median"],
            "sqs_redelivery_cpu": sqs["retrysafe_atomic"]["redelivery_median"] / sqs["powertools"]["redelivery_median"],
            "sqs_redelivery_cpu_no_hints": (sqs["retrysafe_atomic_no_hints"]["redelivery_median"]
                                            / sqs["powertools"]["redelivery_median"])}


def over_a_socket(requests: int, cold_runs: int) -> dict[str, Any]:
    """The socket variant: round trips and units, cold start, CPU per request and the latency model, with
    every DynamoDB call sent to :mod:`benchmarks.ddb_server` on 127.0.0.1."""
    with ModelServer() as server:
        trips = round_trips_and_units(server)
        print("socket: round trips and units:", json.dumps(trips), flush=True)
        cold = cold_start(cold_runs, server)
        print("socket: cold start ms:", json.dumps(cold), flush=True)
        cpu = cpu_per_request(requests, server=server)
        print("socket: CPU µs per request:", json.dumps(cpu), flush=True)
        sqs = sqs_redelivery(requests // 2, server=server)
        print("socket: SQS redelivery at a cold container, CPU µs:", json.dumps(sqs), flush=True)
        crt = transport(server, requests, cold_runs)
        print("socket: awscrt transport:", json.dumps(crt), flush=True)
    result: dict[str, Any] = {"round_trips_and_units": trips, "cold_start": cold, "cpu_us": cpu,
                              "latency_model": latency_model(cpu), "sqs_redelivery_us": sqs, "requests": requests,
                              "transport": crt}
    result["ratios"] = ratios(result)
    result["targets_met"] = verdicts(result["ratios"])
    return result


#: Issue 34 item 4's bar for the opt-in transport: awscrt / botocore at most this, both figures.
TRANSPORT_TARGET = 0.5


def transport(server: ModelServer, requests: int, cold_runs: int) -> dict[str, Any]:
    """Issue 34 item 4: retrysafe (atomic) on botocore and on the fast transport (:mod:`retrysafe._crt`, awscrt)
    over the socket, interleaved block by block. Process CPU per first request and per replay in another
    container (awscrt works on its own threads, so thread CPU would flatter it), and cold start in fresh
    processes (``RETRYSAFE_TRANSPORT=crt`` on its side)."""
    from retrysafe import DynamoStore, Engine, RecordCache
    from retrysafe._crt import CrtTransport
    with quiet():
        with pointed_at(server.endpoint):
            botocore_side = Side("retrysafe_atomic", server)
        crt_side = Side("retrysafe_atomic", server)
        for handler, cache in (("handler", True), ("other", False)):
            store = DynamoStore(workload.TABLE, client=CrtTransport(REGION, server.endpoint),
                                cache=RecordCache() if cache else None)
            setattr(crt_side, handler, workload.retrysafe_handler("atomic", Engine(store)))
        runners = {"botocore": botocore_side, "awscrt": crt_side}
        samples: dict[str, dict[str, list[float]]] = {name: {"first": [], "replay_other": []} for name in runners}
        for runner in runners.values():  # warm-up
            for _ in range(30):
                runner.first()
                runner.replay(other=True)
        block = 20
        for round_index in range(max(1, requests // block)):
            for name in (("botocore", "awscrt") if round_index % 2 == 0 else ("awscrt", "botocore")):
                runner = runners[name]
                for _ in range(block):
                    for kind in ("first", "replay_other"):
                        start = time.process_time_ns()
                        runner.replay(other=True) if kind == "replay_other" else runner.first()
                        samples[name][kind].append((time.process_time_ns() - start) / 1000)
        server.usage()
        crt_side.first()
        calls = server.usage()["calls"]
    cold = cold_start(cold_runs, server, ("retrysafe", "retrysafe_awscrt"))
    result: dict[str, Any] = {"cpu_us": {name: {f"{kind}_median": statistics.median(values)
                                                for kind, values in kinds.items()}
                                         for name, kinds in samples.items()},
                              "awscrt_first_calls": calls, "requests": requests, "cold_start": cold}
    cpu = result["cpu_us"]
    result["ratios"] = {
        "first_cpu": cpu["awscrt"]["first_median"] / cpu["botocore"]["first_median"],
        "replay_other_cpu": cpu["awscrt"]["replay_other_median"] / cpu["botocore"]["replay_other_median"],
        "cold_start": cold["retrysafe_awscrt"]["cpu_median_ms"] / cold["retrysafe"]["cpu_median_ms"],
        "cold_start_wall": cold["retrysafe_awscrt"]["median_ms"] / cold["retrysafe"]["median_ms"]}
    result["target"] = TRANSPORT_TARGET
    result["target_met"] = all(result["ratios"][name] <= TRANSPORT_TARGET for name in ("first_cpu", "cold_start"))
    return result


def verdicts(ratio: dict[str, float]) -> dict[str, bool]:
    """Whether each target is met in this run."""
    return {name: (ratio[name] <= target if op == "<=" else ratio[name] >= target)
            for name, (target, op) in TARGETS.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every measurement and write results.json, RESULTS.md and comparison.png."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1200, help="first requests (and as many replays) per side")
    parser.add_argument("--cold-runs", type=int, default=17, help="fresh processes per side (>= 15)")
    parser.add_argument("--moto-seconds", type=float, default=6.0, help="moto-server throughput seconds per side")
    parser.add_argument("--socket-requests", type=int, default=600,
                        help="first requests (and as many replays) per side over the socket")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    require_botocore_without_awscrt()

    started, load_before = time.time(), os.getloadavg()
    trips = round_trips_and_units()
    print("round trips and units:", json.dumps(trips), flush=True)
    cold = cold_start(args.cold_runs)
    print("cold start ms:", json.dumps(cold), flush=True)
    cpu = cpu_per_request(args.requests)
    print("CPU µs per request:", json.dumps(cpu), flush=True)
    sqs = sqs_redelivery(args.requests // 2)
    print("SQS redelivery at a cold container, CPU µs:", json.dumps(sqs), flush=True)
    split = where_the_cpu_goes()
    print("retrysafe atomic CPU split µs:", json.dumps(split), flush=True)
    budget = first_request_budget(cpu, split)
    print("first-request budget µs:", json.dumps(budget), flush=True)
    floor = botocore_floor()
    print("botocore floor:", json.dumps(floor), flush=True)
    model = latency_model(cpu)
    print("latency model:", json.dumps(model), flush=True)
    sizes = record_sizes()
    print("record bytes:", json.dumps(sizes), flush=True)
    quotes = record_only_units()
    print("record-only first request, units:", json.dumps(quotes), flush=True)
    cutover = cutover_units()
    print("cut-over from Powertools, calls and units:", json.dumps(cutover), flush=True)
    socket = over_a_socket(args.socket_requests, args.cold_runs)
    print("socket ratios:", json.dumps(socket["ratios"]), flush=True)
    # Without retrysafe's record cache: this line is about how moto's server answers each library's calls.
    moto = moto_server.throughput(lambda side, client: make_handler(side, client=client, cache=False), SIDES,
                                  args.moto_seconds, quiet)
    print("moto server (informative):", json.dumps(moto), flush=True)

    results: dict[str, Any] = {
        "round_trips_and_units": trips, "cpu_us": cpu, "sqs_redelivery_us": sqs, "cold_start": cold,
        "latency_model": model, "record_bytes": sizes, "record_only_units": quotes, "cutover_units": cutover,
        "socket": socket, "moto_server_rps": moto, "cpu_split_us": split, "first_request_budget_us": budget,
        "botocore_floor": floor,
        "versions": {name: version(name) for name in ("retrysafe", "aws-lambda-powertools", "boto3", "botocore", "moto",
                                                      "awscrt")}
                    | {"python": platform.python_version()},
        "machine": {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "duration_seconds": round(time.time() - started, 1),
        "measured": time.strftime("%Y-%m-%d", time.gmtime(started)),
    }
    from botocore.validate import ParamValidationDecorator
    from retrysafe import DynamoStore

    results["retrysafe_client_validates"] = isinstance(DynamoStore(workload.TABLE).client._serializer,
                                                       ParamValidationDecorator)
    results["ratios"] = ratios(results)
    results["targets_met"] = verdicts(results["ratios"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    chart = report.chart(results, args.out / "comparison.png")
    (args.out / "RESULTS.md").write_text(report.markdown(results, chart, TARGETS))
    print(report.summary(results, TARGETS))
    print(f"wrote {args.out / 'results.json'}, RESULTS.md and the chart in {results['duration_seconds']} s")
    return results


if __name__ == "__main__":
    main()
