"""Run many simulation schedules: ``python -m tests.drills.soak --schedules 10000 --workers 2``.

Prints the number of schedules run and every violation (with its seed); exits 1 on any.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from retrysafe import names


def run_range(start: int, count: int) -> tuple[int, list[str]]:
    """Run ``count`` schedules from seed ``start`` in one in-process moto; returns (run, violations)."""
    for name, value in (("AWS_DEFAULT_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                        ("AWS_SECRET_ACCESS_KEY", "testing"), (names.TABLE_ENV, "idempotency"),
                        ("POWERTOOLS_METRICS_NAMESPACE", "retrysafe-soak"), ("POWERTOOLS_LOG_LEVEL", "ERROR"),
                        ("POWERTOOLS_METRICS_DISABLED", "true")):
        os.environ.setdefault(name, value)
    import logging
    import warnings

    from moto import mock_aws

    from tests.drills.simulation import Violation, run_schedule, setup

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    violations: list[str] = []
    with mock_aws(), open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # metrics/log lines
        store, boundary = setup()
        for seed in range(start, start + count):
            try:
                run_schedule(seed, store, boundary)
            except Violation as violation:
                violations.append(str(violation))
            except Exception as error:  # noqa: BLE001 - an unhandled exception is a violation too
                violations.append(f"seed {seed}: unhandled {type(error).__name__}: {error}\n"
                                  f"replay with RETRYSAFE_SIM_SEED={seed}")
    return count, violations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("RETRYSAFE_SIM_BASE_SEED", "1")))
    args = parser.parse_args(argv)
    started = time.monotonic()
    share = -(-args.schedules // args.workers)
    chunks = [(args.seed + i * share, min(share, args.schedules - i * share)) for i in range(args.workers)]
    results: list[Any]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(run_range, *zip(*[c for c in chunks if c[1] > 0], strict=True)))
    total = sum(r[0] for r in results)
    violations = [v for r in results for v in r[1]]
    for violation in violations:
        print(violation, file=sys.stderr)
    print(f"soak: {total} schedules (seeds {args.seed}..{args.seed + total - 1}) in "
          f"{time.monotonic() - started:.0f}s, {len(violations)} violations")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
