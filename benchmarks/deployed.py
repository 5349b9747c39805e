"""Cold start as deployed: the layer's files from source (no bytecode, a read-only folder) or compiled.

``python -m benchmarks.deployed [RUNS] > benchmarks/profiles/deployed.json`` builds the runtime layer the constructs build
(``retrysafe_cdk.layer``: retrysafe's sources and the pinned Powertools wheel, no bytecode), and two
variants of it, then runs :mod:`benchmarks.coldstart` in fresh processes, the variants interleaved:

``retrysafe_source``
    the layer as shipped. Lambda's ``/opt`` is read-only, so every cold start compiles each module it
    imports from the layer and cannot keep the bytecode: the folder is made read-only here and
    ``PYTHONDONTWRITEBYTECODE`` is set.
``retrysafe_bytecode``
    the same files plus hash-based bytecode (PEP 552, ``unchecked-hash``) compiled by this interpreter.
``powertools_pip``
    Powertools as its users install it: ``pip install`` of the pinned wheel into the function's folder,
    which compiles bytecode.

botocore and boto3 import from the interpreter's compiled site-packages in every variant, as they come
compiled with Lambda's runtime. Prints one JSON object (median and minimum CPU and wall time, ms).
"""

from __future__ import annotations

import compileall
import json
import os
import py_compile
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

VARIANTS = ("retrysafe_source", "retrysafe_bytecode", "powertools_pip")


def build(folder: Path) -> dict[str, Path]:
    """The three variants' ``python`` folders under ``folder``, each read-only."""
    from retrysafe_cdk.layer import LAYER_PINS, _PinnedLayer, pinned_wheel, wheels_folder

    source, compiled, pip = folder / "source", folder / "bytecode", folder / "pip"
    _PinnedLayer(LAYER_PINS).try_bundle(str(source), None)  # type: ignore[arg-type]
    shutil.copytree(source, compiled)
    compileall.compile_dir(compiled / "python", quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    wheels = [str(pinned_wheel(pin, wheels_folder())) for pin in LAYER_PINS]
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(pip / "python"), *wheels], check=True)
    for tree in (source, compiled, pip):
        for path in tree.rglob("*"):
            path.chmod(0o555 if path.is_dir() else 0o444)
    return {"retrysafe_source": source / "python", "retrysafe_bytecode": compiled / "python",
            "powertools_pip": pip / "python"}


def run(runs: int) -> dict[str, Any]:
    """``runs`` cold starts per variant, interleaved (the order rotates each round)."""
    compileall.compile_dir(HERE, quiet=1)  # the harness itself imports from bytecode in every variant
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    folder = Path(tempfile.mkdtemp(prefix="retrysafe-deployed-"))
    try:
        paths = build(folder)
        from benchmarks.bench import ENV

        env = {**os.environ, **ENV, "PYTHONDONTWRITEBYTECODE": "1", "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"}
        for index in range(runs):
            order = VARIANTS[index % 3:] + VARIANTS[:index % 3]
            for variant in order:
                side = variant.split("_", 1)[0]
                proc = subprocess.run([sys.executable, "-m", "benchmarks.coldstart", side, f"deployed-{index}"],
                                      cwd=ROOT, capture_output=True, text=True, check=False,
                                      env={**env, "PYTHONPATH": os.pathsep.join([str(paths[variant]), str(ROOT)])})
                if proc.returncode:
                    raise RuntimeError(f"{variant}: {proc.stderr[-2000:]}")
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                if row["awscrt_loaded"]:  # botocore as Lambda's runtime has it (benchmarks/lambda_botocore.py)
                    raise RuntimeError(f"{variant}: awscrt was loaded")
                rows[variant].append(row)
    finally:
        for path in folder.rglob("*"):
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder)
    result: dict[str, Any] = {"measured": time.strftime("%Y-%m-%d", time.gmtime()), "runs": runs,
                              "load_average": os.getloadavg()}
    for variant, values in rows.items():
        result[variant] = {
            "cpu_median_ms": statistics.median(r["total_cpu_ms"] for r in values),
            "cpu_min_ms": min(r["total_cpu_ms"] for r in values),
            "wall_median_ms": statistics.median(r["total_ms"] for r in values),
            "import_median_ms": statistics.median(r["import_ms"] for r in values),
            "first_invocation_median_ms": statistics.median(r["first_invocation_ms"] for r in values),
        }
    powertools = result["powertools_pip"]["cpu_median_ms"]
    result["ratios"] = {v: result[v]["cpu_median_ms"] / powertools for v in VARIANTS[:2]}
    return result


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 15), indent=1))
