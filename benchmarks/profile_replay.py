"""Where the CPU of an atomic replay in another container goes, next to Powertools' replay (cProfile).

``python -m benchmarks.profile_replay [--requests N] [--socket] [--out FILE]``: both sides on real botocore
clients answered in process by :mod:`benchmarks.ddb_model` (as ``make bench`` measures them; with
``--socket``, by :mod:`benchmarks.ddb_server` on 127.0.0.1), each replay landing on a container that has
not seen its key (retrysafe without its record cache; Powertools keeps none). Three variants, interleaved
block by block: retrysafe as it is, retrysafe with botocore parsing refusals itself (the store's
``before-parse`` handler switched off on the same clients: the code before issue 34's change), and Powertools. Prints the
median thread CPU of a first request and of a replay per variant, the ratios, the load average, and
(in process) the functions with the most cumulative and own time under one profiled pass of each side;
``--out`` writes the same text to a file.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

from benchmarks.bench import Side, quiet
from benchmarks.ddb_server import ModelServer
from benchmarks.lambda_botocore import require_botocore_without_awscrt


def runners(server: ModelServer | None) -> dict[str, Side]:
    """The :class:`Side` of each variant: both retrysafe variants run on the same one (its store's refusal
    parser switched off for the ``botocore_parse`` blocks by :func:`parse_refusals`), so they differ in
    nothing else."""
    retrysafe = Side("retrysafe_atomic", server)
    return {"retrysafe_atomic": retrysafe, "retrysafe_botocore_parse": retrysafe,
            "powertools": Side("powertools", server)}


def parse_refusals(side: Side, on: bool) -> None:
    """The store's refusal parser on or off, on both of ``side``'s containers."""
    from retrysafe._codec import parse_item_refusal

    for handler in (side.handler, side.other):
        events = handler.idempotency.engine.store.client.meta.events
        events.unregister("before-parse.dynamodb", parse_item_refusal)
        if on:
            events.register("before-parse.dynamodb", parse_item_refusal)


def medians(made: dict[str, Side], requests: int, block: int = 20) -> dict[str, dict[str, float]]:
    """Median thread CPU (µs) of a first request and of a replay in another container per variant,
    the variants interleaved block by block."""
    names = tuple(made)
    samples: dict[str, dict[str, list[float]]] = {v: {"first": [], "replay_other": []} for v in names}
    for round_index in range(max(1, requests // block)):
        order = names[round_index % len(names):] + names[:round_index % len(names)]
        for variant in order:
            if variant != "powertools":
                parse_refusals(made[variant], on=variant == "retrysafe_atomic")
            made[variant].first()  # not measured: after a switch botocore rebuilds its handler lookups
            made[variant].replay(other=True)
            for _ in range(block):
                samples[variant]["first"].append(made[variant].first()[0])
                samples[variant]["replay_other"].append(made[variant].replay(other=True)[0])
    parse_refusals(made["retrysafe_atomic"], on=True)
    return {v: {kind: statistics.median(values) for kind, values in kinds.items()} for v, kinds in samples.items()}


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
    parser.add_argument("--socket", action="store_true", help="over 127.0.0.1 (no profiles)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    require_botocore_without_awscrt()  # botocore as in Lambda (imported by benchmarks.bench)
    load = os.getloadavg()[0]
    with ModelServer() if args.socket else contextlib.nullcontext() as server, quiet():
        made = runners(server)
        for runner in {id(r): r for r in made.values()}.values():
            for _ in range(50):
                runner.first()
                runner.replay(other=True)
        cpu = medians(made, args.requests)
        profiles = {} if args.socket else {
            variant: profile(made[variant], args.requests // 3, args.limit)
            for variant in ("retrysafe_atomic", "powertools")}
    powertools = cpu["powertools"]
    lines = [(f"measured {time.strftime('%Y-%m-%d', time.gmtime())}, {'over a socket' if args.socket else 'in process'}, {args.requests} requests per variant and kind, "
             f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; median thread CPU µs "
             "(ratio to Powertools):")]
    for variant, kinds in cpu.items():
        lines.append(f"  {variant}: " + ", ".join(f"{kind} {value:.0f} ({value / powertools[kind]:.2f})"
                                                   for kind, value in kinds.items()))
    for variant, text in profiles.items():
        lines += [f"\n===== {variant}, replay in another container =====", text]
    report = "\n".join(lines)
    if args.out:
        args.out.write_text(report)
    print(report)
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
