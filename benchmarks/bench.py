"""Side-by-side benchmark of retrysafe and Powertools idempotency (``make bench``).

Writes ``benchmarks/results.json``, ``benchmarks/RESULTS.md`` and ``benchmarks/comparison.png``.
Every ratio is retrysafe / Powertools from runs interleaved in this one invocation.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REGION = "eu-west-1"
os.environ.update({"AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "bench",
                   "AWS_SECRET_ACCESS_KEY": "bench", "RETRYSAFE_TABLE": "bench-idempotency",
                   "POWERTOOLS_IDEMPOTENCY_DISABLED": "0", "AWS_LAMBDA_FUNCTION_NAME": "bench"})
sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402
from benchmarks.stub import InstantDynamoDB  # noqa: E402

SIDES = ("retrysafe_atomic", "retrysafe_claim_first", "powertools")


_SINK = open(os.devnull, "w")  # noqa: SIM115 - kept open: loggers created inside quiet() hold on to it


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Swallow the EMF/log lines both libraries print, at the cost of a real write call."""
    with contextlib.redirect_stdout(_SINK):
        yield


def make_handler(side: str, client: Any) -> Callable[[dict[str, Any], Any], Any]:
    """The workload handler of ``side`` on ``client``."""
    if side == "powertools":
        return workload.powertools_handler(client)
    from retrysafe import DynamoStore, Engine

    engine = Engine(DynamoStore(workload.TABLE, client=client))
    return workload.retrysafe_handler("atomic" if side == "retrysafe_atomic" else "claim_first", engine)


# -- 1. round trips -----------------------------------------------------------
def round_trips() -> dict[str, dict[str, int]]:
    """DynamoDB API calls per request (botocore before-call hooks), against in-process moto."""
    import boto3
    from moto import mock_aws

    results: dict[str, dict[str, int]] = {}
    with mock_aws(), quiet():
        client = boto3.client("dynamodb", region_name=REGION)
        workload.create_tables(client)
        count = [0]
        client.meta.events.register("before-call.dynamodb", lambda **_: count.__setitem__(0, count[0] + 1))
        for side in SIDES:
            handler = make_handler(side, client)
            key = f"{side}-{uuid.uuid4()}"
            first = _count_call(count, lambda: handler(workload.order_event(key), workload.Context()))
            replay = _count_call(count, lambda: handler(workload.order_event(key), workload.Context()))
            # In-flight duplicate: the duplicate arrives while the first request is inside its handler.
            in_flight = _in_flight(side, client, count, f"{side}-{uuid.uuid4()}")
            results[side] = {"first": first, "replay": replay, "in_flight_duplicate": in_flight}
    return results


def _in_flight(side: str, client: Any, count: list[int], key: str) -> int:
    """Calls made by a duplicate that arrives while the first request is still inside the same handler."""
    measured: list[int] = []
    state = {"entered": False}

    def body(event: dict[str, Any], again: Callable[[], Any]) -> dict[str, Any]:
        if not state["entered"]:
            state["entered"] = True
            measured.append(_count_call(count, lambda: _swallow(again)))
        return {"statusCode": 201, "body": "{}"}

    if side == "powertools":
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
            idempotent,
        )

        config = IdempotencyConfig(event_key_jmespath='headers."Idempotency-Key"', payload_validation_jmespath="body")
        persistence = DynamoDBPersistenceLayer(table_name=workload.POWERTOOLS_TABLE, boto3_client=client)

        @idempotent(persistence_store=persistence, config=config)
        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return body(event, lambda: handler(event, context))
    else:
        from retrysafe import DynamoStore, Engine, idempotent_http

        mode = "atomic" if side == "retrysafe_atomic" else "claim_first"
        engine = Engine(DynamoStore(workload.TABLE, client=client))

        @idempotent_http(operation="InFlight", mode=mode, engine=engine)
        def handler(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
            return body(event, lambda: handler(event, context))

    handler(workload.order_event(key), workload.Context())
    return measured[0]


def _count_call(count: list[int], call: Callable[[], Any]) -> int:
    before = count[0]
    call()
    return count[0] - before


def _swallow(call: Callable[[], Any]) -> None:
    try:
        call()
    except Exception:  # Powertools raises IdempotencyAlreadyInProgressError for an in-flight duplicate
        pass


# -- 2. library overhead ----------------------------------------------------------
def overhead(calls: int) -> dict[str, Any]:
    """Per-call time with DynamoDB answered instantly by a stub (first requests and replays), interleaved."""
    existing = _captured_records()
    timings: dict[str, dict[str, list[float]]] = {s: {"first": [], "replay": []} for s in SIDES}
    block = 250
    with quiet():
        handlers = {}
        for side in SIDES:
            handlers[side] = {"first": make_handler(side, InstantDynamoDB()),
                              "replay": make_handler(side, InstantDynamoDB(existing[side]))}
        events = {s: [workload.order_event(f"k-{s}-{i}") for i in range(calls)] for s in SIDES}
        replay_event = workload.order_event("replayed-key")
        ctx = workload.Context()
        for side in SIDES:  # warm-up
            for i in range(50):
                handlers[side]["first"](workload.order_event(f"warm-{side}-{i}"), ctx)
                handlers[side]["replay"](replay_event, ctx)
        for start in range(0, calls, block):
            for side in SIDES:
                first, replay, out = handlers[side]["first"], handlers[side]["replay"], timings[side]
                for event in events[side][start:start + block]:
                    t0 = time.perf_counter_ns()
                    first(event, ctx)
                    t1 = time.perf_counter_ns()
                    replay(replay_event, ctx)
                    t2 = time.perf_counter_ns()
                    out["first"].append((t1 - t0) / 1000)
                    out["replay"].append((t2 - t1) / 1000)
    result: dict[str, Any] = {}
    for side in SIDES:
        both = timings[side]["first"] + timings[side]["replay"]
        result[side] = {
            "mean": statistics.fmean(both), "median": statistics.median(both),
            "first_median": statistics.median(timings[side]["first"]),
            "replay_median": statistics.median(timings[side]["replay"]), "calls": len(both),
        }
    return result


def _captured_records() -> dict[str, dict[str, Any]]:
    """Real stored records of each side, captured from moto, for the stub to answer replays with."""
    import boto3
    from moto import mock_aws

    captured: dict[str, dict[str, Any]] = {}
    with mock_aws(), quiet():
        client = boto3.client("dynamodb", region_name=REGION)
        workload.create_tables(client)
        for side in SIDES:
            make_handler(side, client)(workload.order_event("replayed-key"), workload.Context())
        for item in client.scan(TableName=workload.TABLE)["Items"]:
            if item.get("op", {}).get("S") == "CreateOrder":
                # both retrysafe modes store the same completed record for the same request
                captured["retrysafe_atomic"] = captured["retrysafe_claim_first"] = item
        captured["powertools"] = next(i for i in client.scan(TableName=workload.POWERTOOLS_TABLE)["Items"]
                                      if i.get("status", {}).get("S") == "COMPLETED")
    return captured


# -- 3. import time -----------------------------------------------------------------
_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_time(runs: int) -> dict[str, Any]:
    """Median import time of a minimal decorated handler module in fresh processes (``-X importtime``)."""
    modules = {"retrysafe": "benchmarks.handlers.retrysafe_minimal",
               "powertools": "benchmarks.handlers.powertools_minimal"}
    # Both sides import from bytecode, as after a pip install (pip compiled Powertools' site-packages;
    # this checkout's sources are compiled here, since PYTHONDONTWRITEBYTECODE may be set).
    import retrysafe

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(retrysafe.__file__).parent),
                    str(HERE / "handlers")], check=True)
    totals: dict[str, list[float]] = {k: [] for k in modules}
    without_boto: dict[str, list[float]] = {k: [] for k in modules}
    for _ in range(runs):
        for side, module in modules.items():
            proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=ROOT,
                                  capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            total, boto = _parse_importtime(proc.stderr, module)
            totals[side].append(total / 1000)
            without_boto[side].append((total - boto) / 1000)
    med = {k: statistics.median(v) for k, v in totals.items()}
    return {"retrysafe": med["retrysafe"], "powertools": med["powertools"], "ratio": med["retrysafe"] / med["powertools"],
            "retrysafe_excluding_boto3": statistics.median(without_boto["retrysafe"]),
            "powertools_excluding_boto3": statistics.median(without_boto["powertools"]), "runs": runs}


def _parse_importtime(stderr: str, module: str) -> tuple[int, int]:
    """(cumulative µs of ``module``, µs spent in boto3/botocore subtrees)."""
    rows = [(int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)) for m in map(_LINE.match, stderr.splitlines()) if m]
    total = next(cum for _, cum, _, name in rows if name == module)
    boto = 0
    stack: list[tuple[int, bool]] = []
    for self_us, _, depth, name in reversed(rows):  # parents are printed after their children
        while stack and stack[-1][0] >= depth:
            stack.pop()
        inside = name.split(".")[0] in ("boto3", "botocore") or (bool(stack) and stack[-1][1])
        stack.append((depth, inside))
        if inside:
            boto += self_us
    return total, boto


# -- 4. throughput ------------------------------------------------------------------
def throughput(seconds_per_side: float, clients: int = 8, rounds: int = 10) -> dict[str, Any]:
    """Requests/s against moto's server on 127.0.0.1, 8 concurrent clients, half of the requests replays.

    moto's ``TransactWriteItems`` deep-copies every table it touches (for rollback), so its cost grows
    with the table; the tables are recreated before every slice so that both sides run on small tables.
    """
    import boto3
    from botocore.config import Config

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait_for(port)
        config = Config(max_pool_connections=clients * 2, retries={"mode": "standard", "max_attempts": 2})
        client = boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint, config=config)
        done: dict[str, int] = {s: 0 for s in SIDES}
        failed: dict[str, int] = {s: 0 for s in SIDES}
        elapsed: dict[str, float] = {s: 0.0 for s in SIDES}
        with quiet():
            handlers = {s: make_handler(s, client) for s in SIDES}
            for _ in range(rounds):
                for side in SIDES:
                    for name in (workload.TABLE, workload.ORDERS, workload.POWERTOOLS_TABLE):
                        with contextlib.suppress(client.exceptions.ResourceNotFoundException):
                            client.delete_table(TableName=name)
                    workload.create_tables(client)
                    n, errors, dt = _drive(handlers[side], clients, seconds_per_side / rounds)
                    done[side] += n
                    failed[side] += errors
                    elapsed[side] += dt
        rps = {s: done[s] / elapsed[s] for s in SIDES}
        return {"retrysafe": rps["retrysafe_atomic"], "retrysafe_claim_first": rps["retrysafe_claim_first"],
                "powertools": rps["powertools"], "ratio": rps["retrysafe_atomic"] / rps["powertools"],
                "ratio_claim_first": rps["retrysafe_claim_first"] / rps["powertools"], "clients": clients,
                "seconds_per_side": seconds_per_side, "server_errors": failed}
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:  # its request threads may hold keep-alive connections open
            server.kill()
            server.wait(5)


def _drive(handler: Any, clients: int, seconds: float) -> tuple[int, int, float]:
    """(answered requests, requests that failed with a 5xx or an exception, seconds)."""
    stop = time.monotonic() + seconds
    counts = [0] * clients
    failures = [0] * clients
    errors: list[BaseException] = []

    def client_loop(index: int) -> None:
        completed: list[str] = []
        ctx = workload.Context()
        i = 0
        try:
            while time.monotonic() < stop:
                if completed and i % 2:
                    key = completed[(i * 7919) % len(completed)]  # a replay of an earlier request
                else:
                    key = f"{index}-{uuid.uuid4()}"
                    completed.append(key)
                try:
                    ok = handler(workload.order_event(key), ctx)["statusCode"] < 500
                except Exception:  # Powertools raises where retrysafe answers 503/409 problem+json
                    ok = False
                counts[index] += ok
                failures[index] += not ok
                i += 1
        except BaseException as error:  # surfaced below: a benchmark must not hide failures
            errors.append(error)

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(counts), sum(failures), time.monotonic() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError("moto server did not start")


# -- 5. record size -----------------------------------------------------------------
def record_sizes() -> dict[str, Any]:
    """Stored record size for 1, 8 and 64 KiB JSON responses, and the write units each implies."""
    import boto3
    from moto import mock_aws

    from retrysafe import DynamoStore, Engine, idempotent_http
    from retrysafe.record import item_size

    sizes: dict[str, Any] = {}
    with mock_aws(), quiet():
        client = boto3.client("dynamodb", region_name=REGION)
        workload.create_tables(client)
        for label, kib in (("1KiB", 1), ("8KiB", 8), ("64KiB", 64)):
            body = _json_body(kib * 1024)

            def answer(*_: Any) -> dict[str, Any]:
                return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": body}

            rs = idempotent_http(answer, operation=f"Size{label}", engine=Engine(DynamoStore(workload.TABLE, client=client)))
            rs(workload.order_event(f"size-{label}"), workload.Context())
            pt = _powertools_answer(client, answer)
            pt(workload.order_event(f"size-{label}"), workload.Context())
            rs_item = next(i for i in client.scan(TableName=workload.TABLE)["Items"] if i.get("op", {}).get("S") == f"Size{label}")
            pt_item = next(i for i in client.scan(TableName=workload.POWERTOOLS_TABLE)["Items"]
                           if i.get("status", {}).get("S") == "COMPLETED")
            client.delete_item(TableName=workload.POWERTOOLS_TABLE, Key={"id": pt_item["id"]})
            rs_size, pt_size = item_size(rs_item), item_size(pt_item)
            sizes[label] = {"retrysafe_bytes": rs_size, "retrysafe_wcu": -(-rs_size // 1024),
                            "powertools_bytes": pt_size, "powertools_wcu": -(-pt_size // 1024), "response_bytes": len(body)}
    return sizes


def _json_body(size: int) -> str:
    """A realistic JSON document of about ``size`` bytes (order lines)."""
    lines: list[dict[str, Any]] = []
    while len(json.dumps({"lines": lines})) < size - 80:
        i = len(lines)
        lines.append({"sku": f"SKU-{i:05d}", "qty": 1 + i % 4, "price": f"{5 + i % 17}.90", "name": f"Item {i % 40}"})
    return json.dumps({"lines": lines})


def _powertools_answer(client: Any, answer: Callable[..., Any]) -> Any:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent

    config = IdempotencyConfig(event_key_jmespath='headers."Idempotency-Key"', payload_validation_jmespath="body")
    return idempotent(persistence_store=DynamoDBPersistenceLayer(table_name=workload.POWERTOOLS_TABLE,
                                                                 boto3_client=client), config=config)(answer)


# -- output ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every measurement and write results.json, RESULTS.md and comparison.png."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5000, help="calls per side for the overhead measurement")
    parser.add_argument("--import-runs", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=20.0, help="throughput seconds per side")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)

    started = time.time()
    trips = round_trips()
    print("round trips:", json.dumps(trips), flush=True)
    over = overhead(args.calls)
    print("overhead µs:", json.dumps(over), flush=True)
    imports = import_time(args.import_runs)
    print("import ms:", json.dumps(imports), flush=True)
    tput = throughput(args.seconds)
    print("throughput rps:", json.dumps(tput), flush=True)
    sizes = record_sizes()
    print("record bytes:", json.dumps(sizes), flush=True)

    results = {
        "round_trips": {"retrysafe_atomic": trips["retrysafe_atomic"],
                        "retrysafe_claim_first": trips["retrysafe_claim_first"], "powertools": trips["powertools"]},
        "library_overhead_us": {
            "retrysafe": over["retrysafe_atomic"]["mean"], "retrysafe_median": over["retrysafe_atomic"]["median"],
            "retrysafe_claim_first": over["retrysafe_claim_first"]["mean"],
            "powertools": over["powertools"]["mean"], "powertools_median": over["powertools"]["median"],
            "ratio": over["retrysafe_atomic"]["mean"] / over["powertools"]["mean"],
            "ratio_median": over["retrysafe_atomic"]["median"] / over["powertools"]["median"],
            "detail": over,
        },
        "import_ms": imports,
        "throughput_rps": tput,
        "record_bytes": sizes,
        "versions": {name: version(name) for name in ("retrysafe", "aws-lambda-powertools", "boto3", "botocore", "moto")}
                    | {"python": platform.python_version()},
        "machine": {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count()},
        "duration_seconds": round(time.time() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    chart = _chart(results, args.out / "comparison.png")
    (args.out / "RESULTS.md").write_text(_markdown(results, chart))
    print(f"wrote {args.out / 'results.json'} and RESULTS.md in {results['duration_seconds']} s")
    return results


def _chart(results: dict[str, Any], path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = [
        ("DynamoDB calls, first request", [results["round_trips"][s]["first"] for s in SIDES]),
        ("Overhead per call (µs, stubbed DB)", [results["library_overhead_us"]["detail"][s]["mean"] for s in SIDES]),
        ("Throughput on moto server (req/s)", [results["throughput_rps"]["retrysafe"],
                                               results["throughput_rps"]["retrysafe_claim_first"],
                                               results["throughput_rps"]["powertools"]]),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (title, values) in zip(axes, panels, strict=True):
        bars = ax.bar(["retrysafe\natomic", "retrysafe\nclaim-first", "Powertools"], values,
                      color=["#2b7a78", "#3aafa9", "#999999"])
        ax.bar_label(bars, fmt="%.1f")
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _markdown(r: dict[str, Any], chart: str | None) -> str:
    rt, ov, im, tp, rb = r["round_trips"], r["library_overhead_us"], r["import_ms"], r["throughput_rps"], r["record_bytes"]
    rows = "\n".join(
        f"| {label} | {rt['retrysafe_atomic'][k]} | {rt['retrysafe_claim_first'][k]} | {rt['powertools'][k]} |"
        for label, k in (("first request", "first"), ("replay", "replay"), ("in-flight duplicate", "in_flight_duplicate")))
    sizes = "\n".join(f"| {label} | {v['response_bytes']} | {v['retrysafe_bytes']} ({v['retrysafe_wcu']} WCU) | "
                      f"{v['powertools_bytes']} ({v['powertools_wcu']} WCU) |" for label, v in rb.items())
    d = ov["detail"]
    return f"""# retrysafe vs Powertools idempotency

Measured by `make bench` ({r['duration_seconds']} s) on {r['machine']['platform']}, {r['machine']['cpus']} CPUs;
Python {r['versions']['python']}, retrysafe {r['versions']['retrysafe']}, aws-lambda-powertools
{r['versions']['aws-lambda-powertools']}, boto3 {r['versions']['boto3']}, moto {r['versions']['moto']}.
Ratios are retrysafe (atomic) / Powertools, from runs interleaved in one invocation.

Workload (both sides): `POST /orders` writes one order item and one event item and answers ~1 KB of JSON.
retrysafe puts both in its transaction; Powertools runs `@idempotent` (DynamoDB persistence, payload
validation on) and the handler writes its own items.

{f'![comparison]({chart})' if chart else ''}

## DynamoDB round trips per request (incl. the business writes)

| | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
{rows}

The atomic in-flight duplicate runs its own transaction; whichever commits first wins and the other replays it.

## Library overhead per call, DynamoDB answered instantly by a stub

| | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
| mean (first + replay), µs | {d['retrysafe_atomic']['mean']:.1f} | {d['retrysafe_claim_first']['mean']:.1f} | {d['powertools']['mean']:.1f} |
| median first request, µs | {d['retrysafe_atomic']['first_median']:.1f} | {d['retrysafe_claim_first']['first_median']:.1f} | {d['powertools']['first_median']:.1f} |
| median replay, µs | {d['retrysafe_atomic']['replay_median']:.1f} | {d['retrysafe_claim_first']['replay_median']:.1f} | {d['powertools']['replay_median']:.1f} |

Ratio (mean): **{ov['ratio']:.2f}**; (median): {ov['ratio_median']:.2f}. Powertools' first request
includes its handler's two stubbed business writes; retrysafe's includes serialising them into the transaction.

## Import time of a minimal decorated handler module (median of {im['runs']} fresh processes)

| | retrysafe | Powertools |
|---|---|---|
| total, ms | {im['retrysafe']:.1f} | {im['powertools']:.1f} |
| excluding boto3/botocore, ms | {im['retrysafe_excluding_boto3']:.1f} | {im['powertools_excluding_boto3']:.1f} |

Ratio: **{im['ratio']:.2f}**. retrysafe defers boto3 and Powertools' Logger/Metrics to first use,
so part of this cost moves into the first invocation instead of disappearing.

## Throughput against moto's server on 127.0.0.1 ({tp['clients']} clients, half replays, {tp['seconds_per_side']:.0f} s per side)

| | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
| requests/s | {tp['retrysafe']:.0f} | {tp['retrysafe_claim_first']:.0f} | {tp['powertools']:.0f} |

Ratio atomic: **{tp['ratio']:.2f}**, claim-first: {tp['ratio_claim_first']:.2f}. Failed requests (5xx or
exception, not counted above): {", ".join(f"{k} {v}" for k, v in tp['server_errors'].items())}. moto's server is the bottleneck, and its
`TransactWriteItems` deep-copies every table it touches for rollback (tables are recreated before every
slice to keep that bounded): the number measures moto's implementation as much as the libraries, and
penalises retrysafe's single transaction against Powertools' separate single-item writes.

## Stored record size

| response | bytes | retrysafe record | Powertools record |
|---|---|---|---|
{sizes}

retrysafe compresses results over 256 bytes (zlib) and uses short attribute names.

## Reproduce

```
make bench        # about 90 seconds; writes benchmarks/results.json, RESULTS.md, comparison.png
```
"""


if __name__ == "__main__":
    main()
