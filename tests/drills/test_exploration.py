"""The bounded exhaustive exploration (``make soak`` runs the deep one: ``python -m tests.drills.explore --set deep``).

Each scope of :data:`tests.drills.explore.BOUNDED` is enumerated completely on
the real engine paths; any violation fails with its minimal trace and the
command that replays it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from retrysafe._store import DynamoStore

from tests.drills.explore import BOUNDED, REGIONS, Scope, World, explore, run_one, world


@pytest.fixture(scope="module")
def explorer() -> Iterator[World]:
    with world() as made:
        yield made


def break_requests(monkeypatch: pytest.MonkeyPatch, operation: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    """A broken engine: ``mutate`` changes every ``operation`` request its store builds (``put_item``...), before
    the store hands it to its transport, whatever that transport is."""
    original = DynamoStore._call

    def call(store: DynamoStore, called: str, **params: Any) -> dict[str, Any]:
        if called == operation:
            mutate(params)
        return original(store, called, **params)

    monkeypatch.setattr(DynamoStore, "_call", call)


def scope_id(scope: Scope) -> str:
    parts = [scope.path, "".join(scope.intents), f"f{scope.faults}"]
    if scope.env:
        parts.append("+".join(scope.env))
    if scope.sequential:
        parts.append("sequential")
    if scope.regions:
        parts.append(f"home={scope.home}" if scope.home else "no-home")
    return "-".join(parts)


@pytest.mark.parametrize("scope", BOUNDED, ids=scope_id)
def test_every_schedule_keeps_the_invariants(explorer: World, scope: Scope) -> None:
    result = explore(explorer, scope)
    assert result.schedules > 0
    assert not result.violations, "\n\n".join(v.report(scope) for v in result.violations.values())


def test_the_exploration_catches_an_engine_that_does_not_deduplicate(
        explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check: completing transactions sent without the record's condition commit duplicates twice."""

    def unconditional(params: dict[str, Any]) -> None:
        for item in params.get("TransactItems") or []:
            put = item.get("Put") or {}
            if put.get("Item", {}).get("st", {}).get("S") == "completed":
                for name in ("ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"):
                    put.pop(name, None)

    break_requests(monkeypatch, "transact_write_items", unconditional)
    scope = Scope("sqs", ("A", "A"), faults=0)
    result = explore(explorer, scope, stop_at_first=True)
    violation = result.violations["double-effect"]
    replayed = run_one(explorer, scope, violation.choices)
    assert "effect#A#main was committed 2 times" in violation.detail
    assert "--replay " in violation.report(scope)
    assert replayed.violation is not None and replayed.violation.trace == violation.trace


def test_the_exploration_catches_a_stream_consumer_that_runs_past_a_failure(
        explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check: Powertools' plain BatchProcessor (every record runs) breaks the shard's order."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor
    from retrysafe import streams

    class Unordered(BatchProcessor):
        def __init__(self, source: Any) -> None:
            super().__init__(source.event_type, raise_on_entire_batch_failure=False)

    monkeypatch.setattr(streams, "_processor_class", lambda: Unordered)
    result = explore(explorer, Scope("kinesis", ("A",), faults=0), stop_at_first=True)
    assert "record r3 of intent A ran after record r2 of its shard failed" in result.violations["out-of-order"].detail


def test_a_replay_command_reruns_the_same_schedule(explorer: World) -> None:
    scope = Scope("task", ("A", "A"), faults=0)
    first: Any = run_one(explorer, scope, [1])
    again: Any = run_one(explorer, scope, first.chooser.taken)
    assert again.trace == first.trace and again.chooser.taken == first.chooser.taken


def test_the_exploration_replays_from_warm_record_caches(explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each schedule ends by replaying every answered intent in every process, so warm caches answer too."""
    from retrysafe._cache import RecordCache

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


def test_the_exploration_catches_a_record_only_put_without_its_condition(
        explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check on atomic mode's lone PutItem: unconditioned, a second invocation overwrites the answer."""

    def unconditional(params: dict[str, Any]) -> None:
        if params.get("Item", {}).get("st", {}).get("S") == "completed":
            for name in ("ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"):
                params.pop(name, None)

    break_requests(monkeypatch, "put_item", unconditional)
    result = explore(explorer, Scope("http-atomic-record-only", ("A", "A"), faults=0))
    assert {"completed-overwritten", "answers-differ"} & set(result.violations)


def test_the_exploration_catches_a_hinted_claim_without_its_condition(
        explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check on the hinted route: a claim that does not check for the record takes the key from
    a completed intent, so the redelivery runs the handler again and commits a second effect."""

    def unconditional(params: dict[str, Any]) -> None:
        if params.get("Item", {}).get("st", {}).get("S") == "pending":
            for name in ("ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"):
                params.pop(name, None)

    break_requests(monkeypatch, "put_item", unconditional)
    result = explore(explorer, Scope("sqs-hinted", ("A", "A"), faults=0))
    assert {"double-effect", "completed-overwritten"} & set(result.violations)


def test_the_exploration_catches_a_claim_first_record_only_put_without_its_owner_condition(
        explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check on claim-first's completing PutItem: without the owner condition a zombie whose lease
    lapsed overwrites its successor's completed record (and answers with its own quote)."""

    def unfenced(params: dict[str, Any]) -> None:
        if params.get("Item", {}).get("st", {}).get("S") == "completed" and \
                params.get("ConditionExpression") == "#ow = :ow AND #st = :pending":
            for name in ("ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"):
                params.pop(name, None)

    break_requests(monkeypatch, "put_item", unfenced)
    result = explore(explorer, Scope("http-claim-first-record-only", ("A", "A"), faults=0, env=("lapse",)))
    assert {"completed-overwritten", "answers-differ"} & set(result.violations), result.violations


def test_the_exploration_catches_a_release_that_deletes_a_committed_checkpoint(
        explorer: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check: a failed run that deletes its claim although a checkpoint committed loses it.

    The claims the explorer watches are the ``PutItem`` claims its gate notes (owner, fingerprint, expiry)."""
    from retrysafe._engine import Engine

    original = Engine._release
    monkeypatch.setattr(Engine, "_release", lambda engine, intent, owner, *, keep: original(engine, intent, owner,
                                                                                           keep=False))
    result = explore(explorer, Scope("task", ("A",), faults=1), stop_at_first=True)
    assert "checkpoint-lost" in result.violations


def test_the_exploration_catches_an_engine_that_releases_an_unstorable_claim(explorer: World,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check: releasing the claim of a run whose result could not be stored lets a retry run it again."""
    from retrysafe._engine import Engine

    def release(engine: Engine, intent: Any, owner: str, now: float, expires_at: int) -> None:
        engine._release(intent, owner, keep=False)

    monkeypatch.setattr(Engine, "_park", release)
    result = explore(explorer, Scope("function-unstorable", ("A",), faults=0), stop_at_first=True)
    assert "final-released" in result.violations, result.violations


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


def test_the_exploration_catches_a_cutover_that_does_not_look_up(explorer: World,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation check: with the window closed, the retry of the request Powertools completed runs it again."""
    from tests.drills.paths import CUTOVER

    monkeypatch.setattr(CUTOVER, "until", 0.0)
    result = explore(explorer, Scope("http-cutover", ("A",), faults=0), stop_at_first=True)
    assert "effect#A#main was committed 2 times" in result.violations["double-effect"].detail


@pytest.mark.parametrize("path", ["takeover-event", "takeover-function"])
def test_the_exploration_catches_a_takeover_that_answers_a_run_it_did_not_commit(
        explorer: World, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Mutation check, the engine before its takeover fix: atomic mode met a lapsed claim, took it over and ran
    the work again, so ``@idempotent`` and ``@idempotent_function`` answered the first run while the record held
    the second (the other adapters answer the second run: the same answer, the handler run twice)."""
    from retrysafe._engine import Engine

    atomic = Engine._atomic

    def remembering(engine: Engine, intent: Any, work: Any, now: float, remaining_ms: Any) -> Any:
        engine.__dict__["work"] = work
        return atomic(engine, intent, work, now, remaining_ms)

    def running_again(engine: Engine, intent: Any, txn: Any, completion: Any, now: float, expires_at: int,
                      remaining_ms: Any) -> Any:
        return engine._claim_first(intent, engine.__dict__["work"], engine.clock(), remaining_ms)

    monkeypatch.setattr(Engine, "_atomic", remembering)
    monkeypatch.setattr(Engine, "_take_over", running_again)
    result = explore(explorer, Scope(path, ("A",), faults=0), stop_at_first=True)
    assert "answer-not-committed" in result.violations, result.violations
    assert "but the completed record replays" in result.violations["answer-not-committed"].detail
