"""Where the CPU of an atomic replay in another container goes, next to Powertools' replay (cProfile).

``python -m benchmarks.profile_replay [--requests N] [--out FILE]``: both sides on real botocore clients
answered in process by :mod:`benchmarks.ddb_model` (as ``make bench`` measures them), each replay landing
on a container that has not seen its key (retrysafe without its record cache; Powertools keeps none).
Prints, per side, the median thread CPU per replay (sides interleaved) and the functions with the most
cumulative time under one profiled pass; ``--out`` writes the same text to a file.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
from pathlib import Path

from benchmarks.bench import Side, quiet

SIDES = ("retrysafe_atomic", "powertools")


def medians(runners: dict[str, Side], requests: int, block: int = 20) -> dict[str, float]:
    """Median thread CPU (µs) of a replay in another container per side, sides interleaved block by block."""
    samples: dict[str, list[float]] = {side: [] for side in runners}
    for round_index in range(max(1, requests // block)):
        order = SIDES[round_index % 2:] + SIDES[:round_index % 2]
        for side in order:
            for _ in range(block):
                samples[side].append(runners[side].replay(other=True)[0])
    return {side: statistics.median(values) for side, values in samples.items()}


def profile(runner: Side, requests: int, limit: int) -> str:
    """The top of a cProfile of ``requests`` replays in another container, by cumulative and by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(requests):
        runner.replay(other=True)
    profiler.disable()
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text).strip_dirs()
    stats.sort_stats("cumulative").print_stats(limit)
    stats.sort_stats("tottime").print_stats(limit)
    return text.getvalue()


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--limit", type=int, default=45, help="functions listed per profile")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    with quiet():
        runners = {side: Side(side) for side in SIDES}
        for runner in runners.values():
            for _ in range(200):
                runner.first()
            for _ in range(30):
                runner.replay(other=True)
        cpu = medians(runners, args.requests)
        profiles = {side: profile(runner, args.requests // 3, args.limit) for side, runner in runners.items()}
    lines = [f"replay in another container, median thread CPU µs: "
             + ", ".join(f"{side} {value:.0f}" for side, value in cpu.items())
             + f"; ratio {cpu['retrysafe_atomic'] / cpu['powertools']:.2f}"]
    for side, text in profiles.items():
        lines += [f"\n===== {side} =====", text]
    report = "\n".join(lines)
    if args.out:
        args.out.write_text(report)
    print(report)
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
