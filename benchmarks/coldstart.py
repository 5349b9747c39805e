"""One cold start, in this fresh process: import a handler module, then its first invocation.

``python -m benchmarks.coldstart retrysafe|powertools [KEY]`` prints one JSON line. DynamoDB is answered
in-process by :mod:`benchmarks.ddb_model`, hooked into every botocore session the libraries create
(``BUILTIN_HANDLERS``), so client creation, endpoint resolution, signing and parsing are paid as in
Lambda; the model's own time is subtracted. With ``AWS_ENDPOINT_URL_DYNAMODB`` set (the socket variant)
nothing is hooked: the calls go to that endpoint (:mod:`benchmarks.ddb_server`, another process), the
connection included, and ``KEY`` (a new one per run) keeps the first invocation a first request. What Lambda's runtime has loaded before it imports a
handler (``json``, ``decimal``, ``threading``...) is loaded here before the clock starts.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
import time
from typing import Any

from benchmarks import ddb_model, lambda_botocore, workload

MODEL = ddb_model.DynamoModel(workload.model_tables())


class _HookBotocore(importlib.abc.MetaPathFinder):
    """Adds the model's ``before-send`` handler to botocore's built-in handlers when botocore loads."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "botocore.handlers":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        original = spec.loader.exec_module  # type: ignore[union-attr]

        def exec_module(module: Any) -> None:
            original(module)
            module.BUILTIN_HANDLERS.append(("before-send.dynamodb", MODEL.before_send))

        spec.loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec


def main() -> None:
    side = sys.argv[1]
    key = sys.argv[2] if len(sys.argv) > 2 else "cold-start-key"
    if not side.endswith("_awscrt"):  # botocore as Lambda's runtime has it; retrysafe[crt] installs awscrt
        lambda_botocore.hide_awscrt()
    if "AWS_ENDPOINT_URL_DYNAMODB" not in os.environ:
        sys.meta_path.insert(0, _HookBotocore())
    out = sys.stdout
    event, context = workload.order_event(key), workload.Context()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        w0, c0 = time.perf_counter(), time.process_time()
        module = importlib.import_module(f"benchmarks.handlers.{side}_orders")
        w1 = time.perf_counter()
        response = module.handler(event, context)
        w2, c2 = time.perf_counter(), time.process_time()
    if response.get("statusCode") != 201:
        raise SystemExit(f"{side}: the first invocation answered {response}")
    model_wall, model_cpu = MODEL.wall_ns / 1e6, MODEL.cpu_ns / 1e6
    out.write(json.dumps({
        "side": side, "import_ms": (w1 - w0) * 1000, "first_invocation_ms": (w2 - w1) * 1000 - model_wall,
        "total_ms": (w2 - w0) * 1000 - model_wall, "total_cpu_ms": (c2 - c0) * 1000 - model_cpu,
        "calls": MODEL.usage.calls, "awscrt_loaded": "awscrt" in sys.modules,
    }) + "\n")


if __name__ == "__main__":
    main()
