"""The benchmark measures botocore as Lambda's runtime has it: without awscrt, even where awscrt is installed.

Each case runs in a fresh interpreter: what botocore picks (awscrt's signers or its own) is decided when
it is first imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from retrysafe import names

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("awscrt", reason="awscrt is what is hidden; without it there is nothing to hide")


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "runtime"), str(ROOT)]),
                               **(env or {})}, timeout=120)
    return proc.stdout.strip().splitlines()[-1]


def test_botocore_loads_awscrt_when_nothing_hides_it() -> None:
    """The premise: in this environment a plain botocore import loads awscrt and signs with it."""
    out = _run("-c", "import sys, botocore.session, botocore.compat as c; "
                     "print(c.HAS_CRT, 'awscrt' in sys.modules)")
    assert out == "True True"


def test_the_benchmark_process_loads_botocore_with_its_own_signers_and_keeps_awscrt_importable() -> None:
    out = _run("-c", "from benchmarks.lambda_botocore import load_botocore_without_awscrt, botocore_uses_awscrt\n"
                     "load_botocore_without_awscrt()\n"
                     "import sys, botocore.auth as a\n"
                     "before = 'awscrt' in sys.modules\n"
                     "import awscrt.auth\n"  # the fast transport's side still gets awscrt
                     "print(botocore_uses_awscrt(), a.AUTH_TYPE_MAPS['v4'].__module__, before)")
    assert out == "False botocore.auth False"


def test_a_process_that_already_signs_with_awscrt_is_refused() -> None:
    script = ("import botocore.session\n"
              "from benchmarks import lambda_botocore as b\n"
              "b.load_botocore_without_awscrt()\n"
              "b.require_botocore_without_awscrt()")
    proc = subprocess.run([sys.executable, "-c", script], check=False, cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode != 0
    assert "before the benchmark could hide it" in proc.stderr


@pytest.fixture
def bench_env() -> dict[str, str]:
    """:data:`benchmarks.bench.ENV`, read without importing the module (importing it sets the variables)."""
    out = _run("-c", "import json; from benchmarks.bench import ENV; print(json.dumps(ENV))")
    return dict(json.loads(out))


@pytest.mark.parametrize(("side", "loaded"), [("retrysafe", False), ("powertools", False),
                                              ("retrysafe_awscrt", True)])
def test_a_cold_start_loads_awscrt_only_on_the_fast_transports_side(side: str, loaded: bool,
                                                                     bench_env: dict[str, str]) -> None:
    env = {names.TRANSPORT_ENV: "crt"} if loaded else {}
    env.update(bench_env)
    row = json.loads(_run("-m", "benchmarks.coldstart", side, f"lambda-botocore-{side}", env=env))
    assert row["awscrt_loaded"] is loaded
    assert row["side"] == side
