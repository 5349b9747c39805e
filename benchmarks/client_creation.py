"""CPU of creating the store's DynamoDB client in a fresh process: a stock botocore session's vs the store's.

``python -m benchmarks.client_creation [RUNS]`` prints one JSON line: the median and minimum CPU
milliseconds (``time.process_time``) of ``botocore.session.Session().create_client("dynamodb", ...)``
(``stock``) and of :func:`retrysafe._botodata.dynamodb_client` (``retrysafe``, the store's session on
botocore's data for DynamoDB alone), both with the store's ``Config``, each run a new
interpreter, the two alternating. botocore is imported before the clock starts (its import is the
same for both). ``awscrt`` is hidden from botocore, as in Lambda's runtime, which has none
(:mod:`benchmarks.lambda_botocore`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run in each fresh interpreter: hide awscrt, import botocore, then time one client's creation.
_ONE = """
import json, sys, time

from benchmarks.lambda_botocore import hide_awscrt

hide_awscrt()
import botocore.config, botocore.session
from retrysafe._store import client_config
from retrysafe._botodata import dynamodb_client
side = sys.argv[1]
start = time.process_time()
if side == "stock":
    botocore.session.Session().create_client("dynamodb", region_name="eu-west-1", config=client_config())
else:
    dynamodb_client("eu-west-1", client_config())
print(json.dumps({"side": side, "cpu_ms": (time.process_time() - start) * 1000,
                  "awscrt": "awscrt" in sys.modules}))
"""


def measure(runs: int) -> dict[str, dict[str, float]]:
    """``runs`` fresh-process client creations of each side, alternating; CPU milliseconds per side."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "runtime"), str(ROOT)]),
           "AWS_ACCESS_KEY_ID": "benchmark", "AWS_SECRET_ACCESS_KEY": "benchmark"}
    samples: dict[str, list[float]] = {"stock": [], "retrysafe": []}
    for index in range(runs):
        for side in (("stock", "retrysafe") if index % 2 == 0 else ("retrysafe", "stock")):
            proc = subprocess.run([sys.executable, "-c", _ONE, side], cwd=ROOT, env=env, capture_output=True,
                                  text=True, check=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            if row["awscrt"]:
                raise SystemExit("client_creation: awscrt was loaded despite the blocker")
            samples[side].append(row["cpu_ms"])
    return {side: {"cpu_median_ms": round(statistics.median(values), 1), "cpu_min_ms": round(min(values), 1)}
            for side, values in samples.items()}


if __name__ == "__main__":
    RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(json.dumps({"runs": RUNS, **measure(RUNS)}))
