"""The bounded exhaustive exploration (``make soak`` runs the deep one: ``python -m tests.drills.explore --set deep``).

Each scope of :data:`tests.drills.explore.BOUNDED` is enumerated completely on
the real engine paths; any violation fails with its minimal trace and the
command that replays it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.drills.explore import BOUNDED, REGIONS, Scope, World, explore, run_one, world


@pytest.fixture(scope="module")
def explorer() -> Iterator[World]:
    with world() as made:
        yield made


def scope_id(scope: Scope) -> str:
    parts = [scope.path, "".join(scope.intents), f"f{scope.faults}"]
    if scope.env:
        parts.append("+".join(scope.env))
    if scope.regions:
        parts.append(f"home={scope.home}" if scope.home else "no-home")
    return "-".join(parts)


@pytest.mark.parametrize("scope", BOUNDED, ids=scope_id)
def test_every_schedule_keeps_the_invariants(explorer: World, scope: Scope) -> None:
    result = explore(explorer, scope)
    assert result.schedules > 0
    assert not result.violations, "\n\n".join(v.report(scope) for v in result.violations.values())


def test_the_exploration_catches_an_engine_that_does_not_deduplicate(explorer: World) -> None:
    """Mutation check: completing transactions sent without the record's condition commit duplicates twice."""

    def unconditional(params: dict[str, Any], **_: Any) -> None:
        for item in params.get("TransactItems") or []:
            put = item.get("Put") or {}
            if put.get("Item", {}).get("st", {}).get("S") == "completed":
                for name in ("ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"):
                    put.pop(name, None)

    for slot in explorer.slots:
        slot.client.meta.events.register_first("before-parameter-build.dynamodb.TransactWriteItems", unconditional)
    try:
        scope = Scope("sqs", ("A", "A"), faults=0)
        result = explore(explorer, scope, stop_at_first=True)
        violation = result.violations["double-effect"]
        replayed = run_one(explorer, scope, violation.choices)
    finally:
        for slot in explorer.slots:
            slot.client.meta.events.unregister("before-parameter-build.dynamodb.TransactWriteItems", unconditional)
    assert "effect#A#main was committed 2 times" in violation.detail
    assert "--replay " in violation.report(scope)
    assert replayed.violation is not None and replayed.violation.trace == violation.trace


def test_a_replay_command_reruns_the_same_schedule(explorer: World) -> None:
    scope = Scope("task", ("A", "A"), faults=0)
    first: Any = run_one(explorer, scope, [1])
    again: Any = run_one(explorer, scope, first.chooser.taken)
    assert again.trace == first.trace and again.chooser.taken == first.chooser.taken


def test_the_exploration_replays_from_warm_record_caches(explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each schedule ends by replaying every answered intent in every process, so warm caches answer too."""
    from retrysafe.cache import RecordCache

    hits: list[str] = []
    original = RecordCache.get

    def counting(cache: RecordCache, record_id: str, now: float) -> Any:
        found = original(cache, record_id, now)
        if found is not None:
            hits.append(record_id)
        return found

    monkeypatch.setattr(RecordCache, "get", counting)
    scope = next(s for s in BOUNDED if s.path == "http-atomic" and s.intents == ("A",) and not s.env)
    result = explore(explorer, scope)
    assert not result.violations and hits


@pytest.mark.parametrize("path", ["http-atomic", "http-claim-first", "sqs"])
def test_two_regions_without_a_home_region_commit_one_intent_twice(explorer: World, path: str) -> None:
    """The failure the home region prevents (its scopes are in BOUNDED, with no violation): on a global
    table in multi-Region eventual consistency, an invocation in each region wins its claim on its own
    replica before replication, and both commit their effect."""
    scope = Scope(path, ("A", "A"), faults=0, env=("replicate",), env_budget=2, regions=REGIONS)
    result = explore(explorer, scope)
    violation = result.violations["double-effect"]
    assert violation.detail == "effect#A#main was committed 2 times (in both regions)"
    assert any(step.startswith("A2@us-east-1 starts") for step in violation.trace)
    assert not any(step.startswith("replication") for step in violation.trace)  # within the replication lag
    assert run_one(explorer, scope, violation.choices).violation is not None
    home = next(s for s in BOUNDED if s.path == path and s.regions)
    assert home == Scope(path, ("A", "A"), faults=0, env=("replicate",), env_budget=2, regions=REGIONS,
                         home=REGIONS[0])
