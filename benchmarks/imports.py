"""What each adapter costs a cold process before its first request: import, and import + decorate.

``python -m benchmarks.imports [RUNS]`` runs every adapter's snippet in RUNS fresh processes (default 15,
the adapters interleaved) and prints one JSON object: per adapter the best and the median time of the
import alone and of import + decorate, in ms, wall and CPU (``time.process_time``, steadier on a loaded
machine), and how many modules the process loaded. No client is created
(outside Lambda's init phase the store creates its botocore client on the first request): this is
retrysafe's own import cost, which the handler's import pays on every cold start. What Lambda's runtime has
loaded before it imports a handler (``json``, ``decimal``, ``threading``) is loaded before the clock starts.
Both snippets import from bytecode, as after a pip install.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: Adapter -> (its import, the decoration that follows it).
ADAPTERS: dict[str, tuple[str, str]] = {
    "idempotent_http": ("from retrysafe import idempotent_http",
                        "idempotent_http(lambda event, context, txn: {'statusCode': 200}, operation='bench')"),
    "IdempotencyMiddleware": ("from retrysafe import IdempotencyMiddleware",
                              "IdempotencyMiddleware(operation='bench')"),
    "idempotent": ("from retrysafe import idempotent",
                   "idempotent(**{SUBSCRIBER: 'bench'})(lambda event, context, txn: None)"),
    "idempotent_function": ("from retrysafe import idempotent_function",
                            ("idempotent_function(data_keyword_argument='order', **{SUBSCRIBER: 'bench'})"
                             "(lambda order, txn: None)")),
    "idempotent_sqs": ("from retrysafe import idempotent_sqs",
                       "idempotent_sqs(lambda message, txn: None, subscriber='bench')"),
    "idempotent_task": ("from retrysafe import idempotent_task", "idempotent_task(lambda task, context, txn: None)"),
    "idempotent_kinesis": ("from retrysafe import idempotent_kinesis",
                           "idempotent_kinesis(subscriber='bench')(lambda message, txn: None)"),
    "idempotent_dynamodb_stream": ("from retrysafe import idempotent_dynamodb_stream",
                                   "idempotent_dynamodb_stream(subscriber='bench')(lambda change, txn: None)"),
    "webhook.handler": ("from retrysafe.webhook import handler", "None"),
    "outbox.publisher.handler": ("from retrysafe.outbox.publisher import handler", "None"),
}

_PROBE = """
import json, decimal, threading, sys, time
before = set(sys.modules)
t0, c0 = time.perf_counter(), time.process_time()
{import_line}
t1, c1 = time.perf_counter(), time.process_time()
SUBSCRIBER = {subscriber!r}
{decoration}
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({{"import_ms": (t1 - t0) * 1000, "decorate_ms": (t2 - t0) * 1000,
                  "import_cpu_ms": (c1 - c0) * 1000, "decorate_cpu_ms": (c2 - c0) * 1000,
                  "modules": sorted(set(sys.modules) - before)}}))
"""


def subscriber_option() -> str:
    """The name ``idempotent`` gives its subscriber option (``namespace=`` is being renamed ``subscriber=``)."""
    import inspect

    from retrysafe._generic import idempotent

    return "subscriber" if "subscriber" in inspect.signature(idempotent).parameters else "namespace"


def probe(adapter: str, env: dict[str, str], subscriber: str) -> dict[str, Any]:
    """One fresh process importing and decorating ``adapter``."""
    import_line, decoration = ADAPTERS[adapter]
    script = _PROBE.format(import_line=import_line, decoration=decoration, subscriber=subscriber)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure every adapter ``RUNS`` times and print the JSON summary."""
    args = sys.argv[1:] if argv is None else argv
    runs = int(args[0]) if args else 15
    import retrysafe
    from retrysafe import names

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(retrysafe.__file__).parent)], check=True)
    env = {key: value for key, value in os.environ.items() if key != "AWS_LAMBDA_INITIALIZATION_TYPE"}
    env |= {"PYTHONPATH": os.pathsep.join(sys.path), names.TABLE_ENV: "bench", "AWS_DEFAULT_REGION": "eu-west-1"}
    subscriber = subscriber_option()
    rows: dict[str, list[dict[str, Any]]] = {adapter: [] for adapter in ADAPTERS}
    for index in range(runs):
        order = list(ADAPTERS) if index % 2 == 0 else list(ADAPTERS)[::-1]
        for adapter in order:
            rows[adapter].append(probe(adapter, env, subscriber))
    result: dict[str, Any] = {"runs": runs, "load_average": os.getloadavg()}
    for adapter, values in rows.items():
        summary: dict[str, Any] = {}
        for name in ("import_ms", "decorate_ms", "import_cpu_ms", "decorate_cpu_ms"):
            figures = [row[name] for row in values]
            stem = name.removesuffix("_ms")
            summary |= {f"{stem}_min_ms": round(min(figures), 2), f"{stem}_median_ms": round(statistics.median(figures), 2)}
        result[adapter] = summary | {"modules": len(values[0]["modules"])}
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
