"""Exhaustive exploration of interleavings, faults and clock events on the real engine paths.

A *scope* names a path (:mod:`tests.drills.paths`), the intents of its
invocations (``A,A``: two invocations of one intent; ``A,B``: another intent
reusing the key), the fault budget per invocation, the fault kinds, and the
clock events allowed (``lapse``: past every lease; ``expire``: past the
records' expiry, TTL not run; ``ttl``: TTL deletes what expired; ``replicate``: a table with
replicas in two regions replicates every change made so far, see below).

*Two regions* (``regions``): the idempotency and business tables are a global table with
replicas in two regions (multi-Region eventual consistency, :class:`~retrysafe.testing.GlobalTables`):
each invocation runs in the region its position names, on that region's replica, and what one
region writes reaches the other only when ``replicate`` happens (at any moment the explorer
picks; replication catches up before the final retries). With ``home`` (the strategy), every
engine sends its claims and commits to that home region (:class:`retrysafe.HomeRegions`);
without it, each region's engine writes its own replica. Effects are counted per region's own
commits, so a double effect stays visible after last-writer-wins replication.

Every schedule is a sequence of choices: at each step, which parked
invocation makes its next DynamoDB call (or starts), with which fault, or
which clock event happens. The explorer enumerates all of them depth-first,
re-running each schedule from empty tables. After the explored part, every
intent without an answer is retried without faults (past the lease when 409)
until it answers, as clients and Lambda do. Invariants are checked after
every step and at the end:

* at most one business effect per intent (segment), exactly one once it answered 2xx;
* every 2xx answer of an intent equals its first (status, body, replayed headers);
* every 2xx answer is what the completed record holds when it is given: a first execution answers the
  result it committed (never one of a run that did not commit), a replay the stored one (paths whose
  answer is one record's: :attr:`~tests.drills.paths.Path.stored`);
* an invocation never answers "in flight" because of its own claim;
* intents of two adapters sharing tenant, operation and key (path ``http-sqs``) are independent: neither is
  refused as the other's reused key;
* a committed checkpoint is never lost; no invocation receives another intent's checkpoint;
* a completed record is never overwritten (or deleted) before its ``exp``; nor is a parked one
  (a result that could not be stored), and a parked intent never commits its effect;
* no unhandled exception; every intent eventually gets an answer (2xx, 422, or a refusal its path
  documents for a key reused after expiry: a webhook receipt is once per delivery id; or the named
  error its path documents as final: ``UnstorableResultError``).

``python -m tests.drills.explore --path task --intents A,B --faults 1 --env expire`` explores a
scope; ``--replay 0,2,1`` replays one schedule and prints its trace.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from retrysafe import DynamoStore, Engine, HomeRegions, RecordCache
from retrysafe._config import DEFAULT_HORIZON_SECONDS
from retrysafe._record import from_item
from retrysafe.names import RECORD_PREFIX, UNPUBLISHED_ATTRIBUTE
from retrysafe.testing import Clock, DynamoSemantics, GlobalTables, ttl_sweep
from retrysafe.testing._boundary import CRASH_AFTER, CRASH_BEFORE

from tests.drills.paths import BUSINESS, PATHS, POWERTOOLS, TABLE, TAKEOVER_ADAPTERS, create_tables, store_for
from tests.drills.scheduler import (
    CANCEL_CONFLICT,
    CANCEL_THROTTLED,
    LOST_ALL,
    LOST_ONCE,
    THROTTLED,
    Invocation,
    Run,
    Slot,
    call_label,
    faults_for,
)

T0 = 1_800_000_000.0
#: Random tokens in stored items: hex tokens (owner, writer) and UUIDs (event ids derived from them).
_TOKEN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}")
#: A clock jump past every lease (leases are at most 60 s + margin here).
LAPSE_SECONDS = 120.0
#: Retries of one intent after the explored part.
COMPLETION_TRIES = 5
#: The fault kinds of the bounded exploration; the deep one adds cancellation reasons.
BASIC_FAULTS = (CRASH_BEFORE, CRASH_AFTER, LOST_ONCE, LOST_ALL)
DEEP_FAULTS = BASIC_FAULTS + (CANCEL_THROTTLED, CANCEL_CONFLICT)
#: The takeover scopes' fault kinds: every kind, a ``ThrottlingException`` on any call too.
TAKEOVER_FAULTS = DEEP_FAULTS + (THROTTLED,)
_FAULT_CODES = {CRASH_BEFORE: "cb", CRASH_AFTER: "ca", LOST_ONCE: "l1", LOST_ALL: "la",
                CANCEL_THROTTLED: "ct", CANCEL_CONFLICT: "cc", THROTTLED: "th"}
_CODE_FAULTS = {v: k for k, v in _FAULT_CODES.items()}
#: The regions of the two-region scopes: the first is the exploration's own region (its observer's).
REGIONS = ("eu-west-1", "us-east-1")


@dataclass(frozen=True)
class Scope:
    """What one exploration enumerates."""

    path: str
    intents: tuple[str, ...] = ("A", "A")
    faults: int = 1
    kinds: tuple[str, ...] = BASIC_FAULTS
    env: tuple[str, ...] = ()
    env_budget: int = 1
    #: Clock skew of each invocation (seconds added to the shared clock), by position.
    skew: tuple[float, ...] = ()
    #: At most this many faults in a schedule, all invocations together (default: ``faults`` each).
    total: int | None = None
    #: Invocations run one after the other (clock events between them): intents days apart.
    sequential: bool = False
    #: The region of each invocation, by position, on a table with replicas in :data:`REGIONS` (empty: one
    #: region). Faults are not placed in these scopes (``faults=0``): what they explore is replication lag.
    regions: tuple[str, ...] = ()
    #: The home region every claim and commit is sent to (the multi-region strategy); ``None``: none.
    home: str | None = None

    def __post_init__(self) -> None:
        if self.regions and (self.faults or self.total):
            raise ValueError("two-region scopes place no faults (faults=0): faults are armed on one region's client")
        if self.home is not None and self.home not in self.regions:
            raise ValueError(f"the home region {self.home!r} is not one of the scope's regions {self.regions}")

    def command(self, choices: list[int]) -> str:
        """The one-line command replaying a schedule of this scope."""
        parts = [f"--path {self.path}", f"--intents {','.join(self.intents)}", f"--faults {self.faults}",
                 f"--kinds {','.join(_FAULT_CODES[k] for k in self.kinds)}"]
        if self.env:
            parts += [f"--env {','.join(self.env)}", f"--env-budget {self.env_budget}"]
        if self.skew:
            parts.append(f"--skew {','.join(str(s) for s in self.skew)}")
        if self.total is not None:
            parts.append(f"--total {self.total}")
        if self.sequential:
            parts.append("--sequential")
        if self.regions:
            parts.append(f"--regions {','.join(self.regions)}")
        if self.home is not None:
            parts.append(f"--home {self.home}")
        return f".venv/bin/python -m tests.drills.explore {' '.join(parts)} --replay {','.join(map(str, choices))}"


@dataclass
class Violation:
    """One broken invariant in one schedule."""

    kind: str
    detail: str
    schedule: int
    choices: list[int]
    trace: list[str]
    faults: int

    def report(self, scope: Scope) -> str:
        """The minimal replayable trace and the command replaying it."""
        steps = "\n".join(f"  {i}. {s}" for i, s in enumerate(self.trace, 1))
        return (f"VIOLATION [{self.kind}] in {scope.path} ({','.join(scope.intents)}): {self.detail}\n{steps}\n"
                f"replay: {scope.command(self.choices)}")


class Chooser:
    """Follows a prefix of choices, then takes the first option; records every choice point."""

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.taken: list[int] = []
        self.counts: list[int] = []

    def choose(self, count: int) -> int:
        index = len(self.taken)
        pick = self.prefix[index] if index < len(self.prefix) else 0
        if pick >= count:
            raise ValueError(f"choice {index} is {pick} but only {count} options exist (a stale replay)")
        self.taken.append(pick)
        self.counts.append(count)
        return pick


class World:
    """The embedded DynamoDB and the reusable clients of one process."""

    def __init__(self, transport: Callable[[str], Any] | None = None) -> None:
        import boto3

        self.semantics = DynamoSemantics(lambda: self.clock())
        self.clock = Clock(T0)
        self.observer = boto3.client("dynamodb", region_name=REGIONS[0])
        self.semantics.install(self.observer)
        self.slots = [Slot(self.semantics, REGIONS[1:], transport) for _ in range(3)]
        self.states: set[str] = set()
        self.replicas = GlobalTables(REGIONS, (TABLE, BUSINESS), lambda: self.clock())
        create_tables(self.observer)
        for region in REGIONS[1:]:
            create_tables(boto3.client("dynamodb", region_name=region))

    def use_replicas(self, replicas: bool) -> None:
        """Serve the slots' requests by the two-region global tables, or by the one region's semantics."""
        for slot in self.slots:
            if replicas:
                for client in slot.clients.values():
                    self.replicas.install(client)
            else:
                self.semantics.install(slot.client)

    def _table(self, name: str, region: str = REGIONS[0]) -> Any:
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(name)

    def items(self, table: str, region: str = REGIONS[0]) -> list[dict[str, Any]]:
        """Every item of ``table`` (in ``region``'s replica) as DynamoDB returns it, read from moto's backend (the
        observer's view: no request, so the schedule's calls and faults are unaffected)."""
        with DynamoSemantics.exclusive():
            return [item.to_json()["Attributes"] for item in list(self._table(table, region).items.values())]

    def reset(self) -> None:
        """Empty the tables (in every region) for the next schedule."""
        with DynamoSemantics.exclusive():
            for region in REGIONS:
                for name in (TABLE, BUSINESS, POWERTOOLS):
                    table = self._table(name, region)
                    table.items.clear()
                    if table.stream_shard is not None:
                        table.stream_shard.items.clear()
            self.replicas.forget()



@dataclass
class _Seen:
    """What the invariants remember across the steps of one schedule."""

    completed: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    parked: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Foreign calls of an intent when it was answered with its final error from a parked record.
    parked_calls: dict[str, int] = field(default_factory=dict)
    checkpoints: dict[tuple[str, str], tuple[frozenset[str], int]] = field(default_factory=dict)
    first_2xx: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    terminal: dict[str, str] = field(default_factory=dict)


class Schedule:
    """One run of a scope along the choices of a :class:`Chooser`."""

    def __init__(self, world: World, scope: Scope, chooser: Chooser, number: int) -> None:
        self.world, self.scope, self.chooser, self.number = world, scope, chooser, number
        self.path = PATHS[scope.path]
        self.trace: list[str] = []
        self.notes: list[str] = []
        self.violation: Violation | None = None
        self.seen = _Seen()
        self.expired = False
        self.env_used = 0
        self.faults = 0
        #: Each invocation's position, by name (it picks the invocation's region).
        self.positions: dict[str, int] = {}

    # -- running ---------------------------------------------------------------------
    def execute(self) -> None:
        world = self.world
        world.clock.now = T0
        world.semantics.forget_tokens()
        world.reset()
        world.use_replicas(bool(self.scope.regions))
        for slot in world.slots:
            slot.gate.clear()
            slot.cache = RecordCache()  # each schedule starts with cold containers
        run = Run()
        if self.path.outbox is not None:
            world.slots[-1].boundary.revive()
            self.path.outbox.prepare(world.slots[-1].client, world.clock)
        if self.path.prepare is not None:
            self.path.prepare(world.observer, world.clock)
        try:
            for index, intent in enumerate(self.scope.intents):
                skew = self.scope.skew[index] if index < len(self.scope.skew) else 0.0
                engine = Engine(self._store(world.slots[index], index), cache=world.slots[index].cache,
                                clock=lambda skew=skew: world.clock.now + skew)  # type: ignore[misc]
                call = self.path.make(intent, engine, self.notes)
                region = f"@{self.scope.regions[index]}" if index < len(self.scope.regions) else ""
                self.positions[f"{intent}{index + 1}{region}"] = index
                run.add(Invocation(f"{intent}{index + 1}{region}", intent, world.slots[index], call))
            while self.violation is None and self._step(run):
                pass
            if self.violation is None:
                self._complete()
        except _Found:
            pass
        finally:
            run.close()

    def _store(self, slot: Slot, index: int) -> DynamoStore:
        """The store of the process in ``slot`` running as invocation ``index`` (its region's, when two)."""
        if not self.scope.regions:
            return store_for(slot.client)
        client = slot.clients[self.scope.regions[min(index, len(self.scope.regions) - 1)]]
        if self.scope.home is None:
            return store_for(client)
        return DynamoStore(TABLE, client=client, home_regions=HomeRegions(self.scope.home), home_clients=slot.clients)

    def _fault_options(self, invocation: Invocation) -> list[str]:
        assert invocation.parked_at is not None
        operation, params = invocation.parked_at
        total = self.scope.total if self.scope.total is not None else self.scope.faults * len(self.scope.intents)
        if operation == "start" or invocation.faults >= self.scope.faults or self.faults >= total \
                or invocation.lost_all is params:
            return []
        return faults_for(operation, self.scope.kinds)

    def _options(self, run: Run) -> list[tuple[str, Any, str | None]]:
        options: list[tuple[str, Any, str | None]] = []
        waiting: set[tuple[str, float, str]] = set()
        running = [i for i in run.invocations if i.state != "done" and (i.parked_at or ("",))[0] != "start"]
        for index, invocation in enumerate(run.invocations):
            if invocation.state != "parked":
                continue
            assert invocation.parked_at is not None
            if invocation.parked_at[0] == "start":
                if self.scope.sequential and running:
                    continue  # one invocation at a time
                identity = (invocation.intent, self.scope.skew[index] if index < len(self.scope.skew) else 0.0,
                            self.scope.regions[index] if index < len(self.scope.regions) else "")
                if identity in waiting:
                    continue  # symmetry: of identical invocations not yet started, only the first may start
                waiting.add(identity)
                if self.scope.sequential and options:
                    continue
            options.append(("go", invocation, None))
            options += [("go", invocation, kind) for kind in self._fault_options(invocation)]
        if self.env_used < self.scope.env_budget:
            quiet = all(i.state == "done" or (i.parked_at or ("",))[0] == "start" for i in run.invocations)
            for event in self.scope.env:
                if event == "replicate" and not self.world.replicas.pending:
                    continue  # nothing written since the last replication
                if event == "expire" and (self.expired or not quiet) or event == "ttl" and not self.expired:
                    continue  # days pass only between invocations (a Lambda runs 15 minutes at most)
                options.append(("env", event, None))
        if options and not run.parked():
            options.insert(0, ("stop", None, None))  # every invocation ended: further clock events are optional
        return options

    def _step(self, run: Run) -> bool:
        options = self._options(run)
        if not options:
            return False
        kind, target, fault = options[self._choose(len(options))]
        if kind == "stop":
            return False
        if kind == "env":
            self._environment(str(target))
            self._check()
            return True
        invocation: Invocation = target
        assert invocation.parked_at is not None
        started = ""
        if invocation.parked_at[0] == "start":  # start and make the first call in one step (only the clock read
            run.step(invocation, None)            # at the start and the call's fault are choices)
            started = "starts; "
            if invocation.finished:
                self.trace.append(f"{invocation.name} starts")
                self._finished(invocation)
                self._check()
                return True
            faults: list[str | None] = [None, *self._fault_options(invocation)]
            fault = faults[self._choose(len(faults))]
        assert invocation.parked_at is not None
        operation, params = invocation.parked_at
        again = " (botocore's retry)" if params is invocation.last_params else ""
        label = f"{call_label(operation, params)} ({operation}){again}"
        if fault is not None:
            self.faults += 1
        run.step(invocation, fault)
        self.trace.append(f"{invocation.name} {started}{label}" + (f" -- FAULT: {fault}" if fault else ""))
        if invocation.finished:
            self._finished(invocation)
        self._check()
        return True

    def _choose(self, count: int) -> int:
        if count == 1:
            self.chooser.taken.append(0)
            self.chooser.counts.append(1)
            return 0
        return self.chooser.choose(count)

    def _environment(self, event: str) -> None:
        world = self.world
        self.env_used += 1
        if event == "lapse":
            world.clock.advance(LAPSE_SECONDS)
            self.trace.append(f"the clock jumps {LAPSE_SECONDS:g}s: every lease has lapsed")
        elif event == "expire":
            world.clock.advance(DEFAULT_HORIZON_SECONDS + 1)
            self.expired = True
            self.trace.append("the clock passes the records' expiry (TTL has not deleted them)")
        elif event == "replicate":
            delivered = world.replicas.replicate()
            self.trace.append(f"replication delivers {delivered} item changes to the other region")
        elif event == "ttl":
            deleted = ttl_sweep(world.observer, TABLE, world.clock.now)
            self.trace.append(f"TTL deletes {len(deleted)} expired items ({', '.join(sorted(deleted)) or 'none'})")
        else:
            raise ValueError(f"unknown clock event {event!r}")

    def _finished(self, invocation: Invocation) -> None:
        if invocation.crashed is not None:
            self.trace.append(f"{invocation.name} died ({invocation.crashed})")
            return
        if invocation.error is not None:
            self._fail("unhandled-exception", f"{invocation.name} raised {type(invocation.error).__name__}: "
                                              f"{invocation.error}")
        answer = invocation.answer
        assert answer is not None
        self.trace.append(f"{invocation.name} answered {answer.describe()}")
        self._answered(invocation.intent, answer, invocation.owner, invocation.name, self.positions[invocation.name])

    def _committed_in(self, index: int) -> str:
        """The region whose table holds what invocation (or process) ``index`` commits."""
        if not self.scope.regions:
            return REGIONS[0]
        return self.scope.home or self.scope.regions[min(index, len(self.scope.regions) - 1)]

    def _answered(self, intent: str, answer: Any, owner: str | None, who: str, index: int) -> None:
        if answer.kind == "in_flight" and owner is not None:
            record = self._record()
            if record is not None and record.get("st", {}).get("S") == "pending" and \
                    record.get("ow", {}).get("S") == owner:
                self._fail("self-in-flight", f"{who} answered in flight because of its own claim")
        if answer.kind in ("executed", "replayed"):
            shown = (answer.status, json.dumps(answer.value, sort_keys=True, default=repr), answer.headers)
            first = self.seen.first_2xx.setdefault(intent, shown)
            if first != shown:
                self._fail("answers-differ", f"intent {intent}: a 2xx answer {shown} differs from the first {first}")
            self._as_committed(answer, shown, who, index)
            self.seen.terminal[intent] = answer.kind
        elif answer.kind == "refused" and self.expired and self.path.refused_after_expiry is not None \
                and isinstance(answer.value, dict) and answer.value.get("type") == self.path.refused_after_expiry:
            self.seen.terminal.setdefault(intent, "refused")  # the path's documented answer after expiry
        elif answer.kind == "failed" and self._final_error(answer):
            state = (self._record() or {}).get("st", {}).get("S")
            if state == "parked":  # the path's documented final answer
                self.seen.terminal.setdefault(intent, "final")
                self.seen.parked_calls.setdefault(intent, self._foreign_calls(intent))
            elif state != "pending":  # pending: the parking write failed or was fenced; a lease holds the key
                self._fail("final-released", f"{who} answered {answer.value} but the record is "
                                             f"{state or 'gone'}: a retry would repeat its foreign calls")
        elif answer.kind == "mismatch":
            if self.path.independent:
                self._fail("namespace-shared", f"{who} was refused as a reused key of another adapter's intent")
            if len(set(self.scope.intents)) == 1:
                self._fail("mismatch-own", f"{who} was refused as another payload (422) for its own request")
            self.seen.terminal.setdefault(intent, "mismatch")

    def _as_committed(self, answer: Any, shown: tuple[Any, ...], who: str, index: int) -> None:
        """A 2xx answer is what the completed record replays as, at the moment it is given (nothing else runs)."""
        if self.path.stored is None:
            return
        record = self._record(self._committed_in(index))
        state = (record or {}).get("st", {}).get("S")
        if record is None or state != "completed":
            self._fail("answer-not-committed", f"{who} answered {answer.describe()} but the record is "
                                               f"{state or 'gone'}")
        stored = self.path.stored(from_item(record).result)
        expected = (stored.status, json.dumps(stored.value, sort_keys=True, default=repr), stored.headers)
        if shown != expected:
            self._fail("answer-not-committed", f"{who} answered {shown} but the completed record replays "
                                               f"{expected}")

    def _foreign_calls(self, intent: str) -> int:
        return sum(1 for note in self.notes if note == f"foreign call for {intent}")

    def _final_error(self, answer: Any) -> bool:
        final = self.path.final_error
        return final is not None and str(answer.value).startswith(f"{final}:")

    def _settle_outbox(self) -> None:
        """Publish what is left, deliver every message (duplicates too): each event applied exactly once."""
        assert self.path.outbox is not None
        counts = self.path.outbox.settle(self.world.slots[-1].client, self.world.clock)
        self.trace.append(f"the outbox settles; the consumer applied the events {sorted(counts.values())} times")
        wrong = {k: v for k, v in counts.items() if v != 1}
        if wrong:
            self._fail("event-not-once", f"events applied {wrong} times (each must be applied exactly once)")

    def _replay_everywhere(self) -> None:
        """Replay every answered intent once in each process: warm ones answer from their record cache, the
        others from DynamoDB; every answer must be the first 2xx answer again, with no second effect."""
        if self.expired:
            return
        world = self.world
        for intent in dict.fromkeys(self.scope.intents):
            terminal = self.seen.terminal.get(intent)
            if terminal not in ("executed", "replayed", "final"):
                continue
            for index, slot in enumerate(world.slots):
                slot.boundary.revive()
                call = self.path.make(intent, Engine(self._store(slot, index), cache=slot.cache, clock=world.clock),
                                      self.notes)
                answer = call()
                self.trace.append(f"a replay of intent {intent} in another process answered {answer.describe()}")
                if terminal == "final":
                    if not self._final_error(answer):
                        self._fail("replay-differs", f"a retry of parked intent {intent} answered {answer.describe()}")
                    self._check()
                    continue
                if answer.kind not in ("executed", "replayed"):  # SQS and task answers do not tell a replay apart
                    self._fail("replay-differs", f"a replay of answered intent {intent} answered {answer.describe()}")
                self._answered(intent, answer, None, f"a replay of {intent}", index)
                self._check()

    def _complete(self) -> None:
        """Retry every intent without an answer, without faults, until it answers (past leases if 409)."""
        world = self.world
        slot = world.slots[-1]
        slot.boundary.revive()
        if self.scope.regions:
            delivered = world.replicas.replicate()  # eventually consistent: the replicas converge
            self.trace.append(f"replication catches up ({delivered} item changes)")
            self._check()
        if self.path.outbox is not None:
            self._settle_outbox()
            return
        for intent in dict.fromkeys(self.scope.intents):
            if intent in self.seen.terminal:
                continue
            if self.expired and any(v for v in self._effects(intent).values()):
                continue  # a retry after the horizon is outside the contract
            answers = []
            for _ in range(COMPLETION_TRIES):
                call = self.path.make(intent, Engine(self._store(slot, len(world.slots) - 1), cache=slot.cache,
                                                     clock=world.clock), self.notes)
                answer = call()
                answers.append(answer.describe())
                self.trace.append(f"retry of intent {intent} answered {answer.describe()}")
                self._answered(intent, answer, None, f"a retry of {intent}", len(world.slots) - 1)
                self._check()
                if intent in self.seen.terminal:
                    break
                if answer.kind == "in_flight":
                    world.clock.advance(LAPSE_SECONDS)
                    self.trace.append(f"the clock jumps {LAPSE_SECONDS:g}s: every lease has lapsed")
            else:
                problem = answer.value.get("type", "") if isinstance(answer.value, dict) else answer.value
                self._fail("never-completes", f"intent {intent} never got an answer: {', '.join(answers)}"
                                              f"{f' ({problem})' if problem else ''}")
        self._replay_everywhere()
        for intent in dict.fromkeys(self.scope.intents):
            if self.seen.terminal.get(intent) in ("executed", "replayed"):
                counts = self._effects(intent)
                missing = [s for s in self.path.segments if counts.get(s, 0) != 1]
                if missing:
                    self._fail("lost-effect", f"intent {intent} answered 2xx but its effect segments {missing} "
                                              f"were committed {[counts.get(s, 0) for s in missing]} times")

    # -- invariants ----------------------------------------------------------------------
    def _items(self, table: str) -> list[dict[str, Any]]:
        return self.world.items(table)

    def _record(self, region: str = REGIONS[0]) -> dict[str, Any] | None:
        records = [i for i in self.world.items(TABLE, region) if i["pk"]["S"].startswith(RECORD_PREFIX)]
        return records[0] if records else None

    def _effects(self, intent: str) -> dict[str, int]:
        return {segment: n for (who, segment), n in self._effect_counts().items() if who == intent}

    def _effect_counts(self) -> dict[tuple[str, str], int]:
        """``(intent, segment) -> commits`` of every effect item: its counter, or with two regions the
        commits each region's own requests made (replication's last writer wins would hide one)."""
        counts: dict[tuple[str, str], int] = {}
        if self.scope.regions:
            pairs = [(pk, n) for (table, pk), n in self.world.replicas.local_writes.items() if table == BUSINESS]
        else:
            pairs = [(item["pk"]["S"], int(item.get("n", {}).get("N", "0"))) for item in self._items(BUSINESS)]
        for pk, n in pairs:
            parts = pk.split("#")
            if parts[0] == "effect":
                counts[(parts[1], parts[2])] = n
        return counts

    def _check(self) -> None:
        now = self.world.clock.now
        records = self._items(TABLE)
        business = self._items(BUSINESS)
        for note in self.notes:
            if note.startswith("VIOLATION: "):
                self._fail("foreign-checkpoint", note[len("VIOLATION: "):])
            elif note.startswith("VIOLATION "):  # "VIOLATION <kind>: detail"
                kind, _, detail = note[len("VIOLATION "):].partition(": ")
                self._fail(kind, detail)
        for (intent, segment), n in self._effect_counts().items():
            if n > 1:
                where = " (in both regions)" if self.scope.regions else ""
                self._fail("double-effect", f"effect#{intent}#{segment} was committed {n} times{where}")
        current = {i["pk"]["S"]: i for i in records if i["pk"]["S"].startswith(RECORD_PREFIX)}
        for pk, (fp, exp) in self.seen.parked.items():
            found = current.get(pk)
            if now <= exp and (found is None or (found.get("fp", {}).get("S"), found.get("st", {}).get("S"))
                               != (fp, "parked")):
                self._fail("parked-released", f"the parked record {pk} was "
                                              f"{'deleted' if found is None else 'rewritten'} before its exp: "
                                              "a retry could repeat its foreign calls")
        for intent, calls in self.seen.parked_calls.items():
            if self._foreign_calls(intent) > calls:
                self._fail("parked-ran-again", f"intent {intent} ran again after its record was parked")
        if self.path.final_error is not None and any(int(i.get("n", {}).get("N", "0")) for i in business):
            self._fail("unstorable-committed", "the effect of a run whose result could not be stored was committed")
        for pk, (fp, result, exp) in self.seen.completed.items():
            found = current.get(pk)
            if now <= exp and (found is None or (found.get("fp", {}).get("S"), _result(found)) != (fp, result)):
                self._fail("completed-overwritten", f"the completed record {pk} was "
                                                    f"{'deleted' if found is None else 'overwritten'} before its exp")
        claims = {owner: claim for slot in self.world.slots for owner, claim in slot.gate.claims.items()}
        for slot in self.world.slots:
            for pk, owner, names in slot.gate.checkpoints:
                fp, exp = claims.get(owner, ("", 0))
                previous = self.seen.checkpoints.get((pk, fp), (frozenset(), exp))[0]
                self.seen.checkpoints[(pk, fp)] = (previous | names, exp)
            slot.gate.checkpoints.clear()
        for (pk, fp), (names, exp) in list(self.seen.checkpoints.items()):
            found = current.get(pk)
            same = found is not None and found.get("fp", {}).get("S") == fp
            if same and found is not None and found.get("st", {}).get("S") == "completed":
                del self.seen.checkpoints[(pk, fp)]
                continue
            kept = frozenset(found.get("cp", {}).get("M", {})) if same and found is not None else frozenset()
            if now <= exp and not names <= kept:
                self._fail("checkpoint-lost", f"committed checkpoints {sorted(names - kept)} of {pk} were lost "
                                              f"({'record deleted' if found is None else 'record rewritten'})")
        for pk, item in current.items():
            fp, exp = item.get("fp", {}).get("S", ""), int(item.get("exp", {}).get("N", "0"))
            if item.get("st", {}).get("S") == "parked" and (pk not in self.seen.parked
                                                            or self.seen.parked[pk][1] < now):
                self.seen.parked[pk] = (fp, exp)
            if item.get("st", {}).get("S") == "completed":
                self.seen.completed.setdefault(pk, (fp, _result(item), exp))
                if self.seen.completed[pk][2] < now:
                    self.seen.completed[pk] = (fp, _result(item), exp)
        self.world.states.add(self._fingerprint(records, business))

    def _fingerprint(self, records: list[dict[str, Any]], business: list[dict[str, Any]]) -> str:
        """The state, with random tokens (owners, writers, instance-derived event ids) named by first appearance."""
        entries = [json.dumps({k: ("set" if k == UNPUBLISHED_ATTRIBUTE else v) for k, v in item.items()
                               if k not in ("at", "occ", "published_at", "payload", "ca")},
                              sort_keys=True, default=str) for item in records + business]
        text = json.dumps([sorted(entries, key=lambda e: _TOKEN.sub("#", e)), self.world.clock.now - T0])
        aliases: dict[str, str] = {}
        text = _TOKEN.sub(lambda m: aliases.setdefault(m.group(0), f"token{len(aliases)}"), text)
        return hashlib.sha1(text.encode()).hexdigest()

    def _fail(self, kind: str, detail: str) -> None:
        self.violation = Violation(kind, detail, self.number, list(self.chooser.taken), list(self.trace),
                                   self.faults)
        raise _Found


class _Found(Exception):
    """A violation ends the schedule."""


def _result(item: dict[str, Any]) -> str:
    if "r" in item:
        return str(item["r"]["S"])
    return repr(item.get("rz", {}).get("B"))


# -- exploring -----------------------------------------------------------------------------
@dataclass
class Exploration:
    """The outcome of exploring one scope."""

    scope: Scope
    schedules: int = 0
    violations: dict[str, Violation] = field(default_factory=dict)
    first_found: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> str:
        found = ", ".join(f"{k} (first at schedule {n})" for k, n in sorted(self.first_found.items()))
        return (f"{self.scope.path} {','.join(self.scope.intents)} faults<={self.scope.faults}"
                f"{' env=' + '+'.join(self.scope.env) if self.scope.env else ''}: {self.schedules} schedules, "
                f"{len(self.violations)} violation kinds{': ' + found if found else ''} ({self.seconds:.1f}s)")


def run_one(world: World, scope: Scope, choices: list[int], number: int = 1) -> Schedule:
    """Run one schedule (a replay when ``choices`` is complete)."""
    schedule = Schedule(world, scope, Chooser(choices), number)
    schedule.execute()
    return schedule


def explore(world: World, scope: Scope, *, limit: int | None = None,
            stop_at_first: bool = False) -> Exploration:
    """Enumerate every schedule of ``scope`` (depth first); keep the smallest violation of each kind."""
    result = Exploration(scope)
    started = time.monotonic()
    prefix: list[int] = []
    while limit is None or result.schedules < limit:
        result.schedules += 1
        schedule = run_one(world, scope, prefix, result.schedules)
        found = schedule.violation
        if found is not None:
            result.first_found.setdefault(found.kind, result.schedules)
            best = result.violations.get(found.kind)
            if best is None or (found.faults, len(found.trace)) < (best.faults, len(best.trace)):
                result.violations[found.kind] = found
            if stop_at_first:
                break
        taken, counts = schedule.chooser.taken, schedule.chooser.counts
        index = len(taken) - 1
        while index >= 0 and taken[index] + 1 >= counts[index]:
            index -= 1
        if index < 0:
            break
        prefix = taken[:index] + [taken[index] + 1]
    result.seconds = time.monotonic() - started
    return result


@contextlib.contextmanager
def world(transport: str = "botocore") -> Iterator[World]:
    """In-process moto with the exploration's clients (the environment is restored afterwards).

    ``transport``: the invocations' clients, botocore's (in-process) or ``crt``, the fast transport
    (:mod:`retrysafe._crt`) speaking to moto's server on 127.0.0.1, which serves the same in-process tables.
    """
    saved = dict(os.environ)
    for name, value in (("AWS_DEFAULT_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                        ("AWS_SECRET_ACCESS_KEY", "testing"), ("POWERTOOLS_METRICS_NAMESPACE", "retrysafe-explore"),
                        ("POWERTOOLS_LOG_LEVEL", "ERROR"), ("POWERTOOLS_METRICS_DISABLED", "true")):
        os.environ.setdefault(name, value)
    from moto import mock_aws

    try:
        with mock_aws(), contextlib.ExitStack() as stack:
            yield World(crt_transports(stack) if transport == "crt" else None)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def crt_transports(stack: contextlib.ExitStack) -> Callable[[str], Any]:
    """A factory of fast transports to moto's server (started here, stopped with ``stack``), with the
    engine's retries (five attempts)."""
    from awscrt import auth
    from moto.server import ThreadedMotoServer
    from retrysafe._crt import CrtTransport

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    stack.callback(server.stop)
    host, port = server.get_host_and_port()
    credentials = auth.AwsCredentialsProvider.new_static("testing", "testing")
    return lambda region: CrtTransport(region, f"http://{host}:{port}", credentials=credentials)


#: The live takeover paths: their first invocation is another deployment's (claim-first), so they have scopes of
#: their own.
LIVE_TAKEOVERS = tuple(f"takeover-{name}-live" for name in TAKEOVER_ADAPTERS)
#: The paths of one adapter each (``http-sqs`` crosses two: it has scopes of its own).
SINGLE = tuple(p for p in PATHS if not PATHS[p].independent and p not in LIVE_TAKEOVERS)
#: The request paths of one adapter (the outbox path has publishers, not intents); not the cut-over's, whose
#: Powertools record expires on the wall clock (Powertools reads ``datetime.now()``), not on the exploration's:
#: its expiry and TTL events cannot reach that record; nor the takeover paths, whose lapsed claim is intent A's.
REQUESTS = tuple(p for p in SINGLE if PATHS[p].outbox is None and PATHS[p].prepare is None)

#: The bounded exhaustive set ``make test`` runs (tests/drills/test_exploration.py).
BOUNDED: tuple[Scope, ...] = (
    # one invocation, up to two faults on its calls (one on the task's four calls)
    *(Scope(path, ("A",), faults=2) for path in ("http-atomic", "http-atomic-hinted", "http-atomic-record-only",
                                                 "http-claim-first", "http-claim-first-record-only", "sqs",
                                                 "sqs-hinted", "webhook", "event-atomic", "function-claim-first",
                                                 "function-unstorable", "event-async-atomic",
                                                 "function-async-claim-first")),
    Scope("task", ("A",), faults=1),
    # two invocations of one intent interleaved, one fault between them
    *(Scope(path, ("A", "A"), faults=1, total=1) for path in ("http-atomic", "http-atomic-hinted", "http-atomic-record-only",
                                                              "http-claim-first", "http-claim-first-record-only", "sqs",
                                                              "sqs-hinted", "sqs-redelivered", "webhook", "event-atomic",
                                                              "function-claim-first", "function-unstorable",
                                                              "event-async-atomic", "function-async-claim-first")),
    Scope("task", ("A", "A"), faults=0),
    # a lease lapsing while an invocation runs (a zombie and its successor)
    *(Scope(path, ("A", "A"), faults=0, env=("lapse",)) for path in ("http-claim-first", "http-claim-first-record-only")),
    Scope("sqs-hinted", ("A", "A"), faults=0, env=("lapse",)),
    Scope("sqs-redelivered", ("A", "A"), faults=1, total=1, env=("lapse",)),
    # another intent reusing the key days later: expiry, TTL at any moment after it
    *(Scope(path, ("A", "B"), faults=0, env=("expire", "ttl"), env_budget=2, sequential=True) for path in REQUESTS),
    Scope("task", ("A", "B"), faults=1, kinds=(CRASH_AFTER,), env=("expire",), sequential=True),
    # a stream batch whose middle record fails once: up to two faults, the batch redelivered while it runs,
    # and the retry after the reported failure with a fault on each of its calls
    Scope("kinesis", ("A",), faults=2),
    Scope("kinesis", ("A", "A"), faults=1, total=1),
    Scope("kinesis", ("A", "A"), faults=1, sequential=True),
    Scope("kinesis-claim-first", ("A",), faults=2),
    Scope("kinesis-claim-first", ("A", "A"), faults=1, total=1, sequential=True),
    Scope("dynamodb-stream", ("A",), faults=2),
    Scope("dynamodb-stream", ("A", "A"), faults=1, total=1),
    # an HTTP caller and an SQS subscriber sharing tenant, operation and key: two intents, interleaved
    Scope("http-sqs", ("A", "B"), faults=1, total=1),
    # the outbox: one publisher with two faults, two publishers of the same batch racing
    Scope("outbox", ("E",), faults=2),
    Scope("outbox", ("E", "E"), faults=0),
    # a table with replicas in two regions, one invocation in each, replication at any moment: with a home
    # region (the strategy) one effect; tests/drills/test_exploration.py shows two without it
    *(Scope(path, ("A", "A"), faults=0, env=("replicate",), env_budget=2, regions=REGIONS, home=REGIONS[0])
      for path in ("http-atomic", "http-claim-first", "sqs")),
    # the cut-over: retries of a request Powertools completed, faults on the lookup and on the recording write
    *(Scope(path, ("A",), faults=2) for path in ("http-cutover", "http-cutover-claim-first")),
    *(Scope(path, ("A", "A"), faults=1, total=1) for path in ("http-cutover", "http-cutover-claim-first")),
    # the previous deployment (claim-first) died holding intent A's claim and its lease lapsed: atomic invocations
    # take it over, on every atomic adapter. One fault of every kind on each call of the takeover (the transaction
    # that meets the claim, the claim, the takeover, the completing write); two takeovers racing; and the previous
    # deployment's invocation alive, its lease lapsing while it runs
    *(Scope(f"takeover-{name}", ("A",), faults=1, kinds=TAKEOVER_FAULTS) for name in TAKEOVER_ADAPTERS),
    *(Scope(f"takeover-{name}", ("A", "A"), faults=0) for name in TAKEOVER_ADAPTERS),
    *(Scope(path, ("A", "A"), faults=0, env=("lapse",)) for path in LIVE_TAKEOVERS),
)

#: The deep set ``make soak`` runs: up to two faults per invocation (cancellation reasons included) and
#: two in a schedule of two invocations, lease lapses and skewed clocks, expiry and TTL.
DEEP: tuple[Scope, ...] = (
    *(Scope(path, ("A",), faults=2, kinds=DEEP_FAULTS) for path in SINGLE),
    *(Scope(path, ("A", "A"), faults=2, total=2, kinds=DEEP_FAULTS) for path in SINGLE
      if path not in ("task", "kinesis-claim-first")),
    # the paths with the most calls per intent: one fault between two invocations (778 schedules here for
    # the stream batch, about two minutes on one CPU; two faults would be tens of thousands)
    Scope("task", ("A", "A"), faults=1, total=1),
    Scope("kinesis-claim-first", ("A", "A"), faults=1, total=1),
    *(Scope(path, ("A", "A"), faults=1, total=1, env=("lapse",)) for path in REQUESTS),
    Scope("http-claim-first", ("A", "A"), faults=1, total=1, env=("lapse",), skew=(0.0, 90.0)),
    *(Scope(path, ("A", "B"), faults=1, env=("expire", "ttl"), env_budget=2, sequential=True) for path in REQUESTS),
    *(Scope(path, ("A", "B"), faults=1, total=1) for path in REQUESTS),
    Scope("http-sqs", ("A", "B"), faults=2, total=2, kinds=DEEP_FAULTS),
    # two regions with a home region: every request path, and a lease lapsing with replication at any moment
    *(Scope(path, ("A", "A"), faults=0, env=("replicate",), env_budget=2, regions=REGIONS, home=REGIONS[0])
      for path in REQUESTS),
    Scope("http-claim-first", ("A", "A"), faults=0, env=("replicate", "lapse"), env_budget=3, regions=REGIONS,
          home=REGIONS[0]),
    # the takeover: two faults of every kind; the previous deployment's invocation alive with a fault
    *(Scope(f"takeover-{name}", ("A",), faults=2, kinds=TAKEOVER_FAULTS) for name in TAKEOVER_ADAPTERS),
    *(Scope(path, ("A", "A"), faults=1, total=1, kinds=TAKEOVER_FAULTS, env=("lapse",)) for path in LIVE_TAKEOVERS),
)


def explore_scopes(scopes: list[Scope], limit: int | None = None,
                   transport: str = "botocore") -> tuple[list[Exploration], set[str]]:
    """Explore ``scopes`` in one process (quietly) on ``transport``; returns the results and the distinct states seen."""
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    results = []
    with world(transport) as w, open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
        for scope in scopes:
            results.append(explore(w, scope, limit=limit))
        return results, w.states


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", choices=sorted(PATHS))
    parser.add_argument("--intents", default="A,A")
    parser.add_argument("--faults", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(_FAULT_CODES[k] for k in BASIC_FAULTS))
    parser.add_argument("--env", default="")
    parser.add_argument("--env-budget", type=int, default=1)
    parser.add_argument("--skew", default="")
    parser.add_argument("--total", type=int, default=None)
    parser.add_argument("--sequential", action="store_true")
    parser.add_argument("--regions", default="", help="the region of each invocation (two-region scopes)")
    parser.add_argument("--home", default=None, help="the home region of every claim and commit")
    parser.add_argument("--replay", help="comma-separated choices of one schedule")
    parser.add_argument("--set", choices=["bounded", "deep"], help="explore a predefined set of scopes")
    parser.add_argument("--limit", type=int, default=None, help="at most this many schedules per scope")
    parser.add_argument("--workers", type=int, default=1, help="processes exploring scopes in parallel")
    parser.add_argument("--transport", choices=["botocore", "crt"], default="botocore",
                        help="the invocations' DynamoDB transport")
    args = parser.parse_args(argv)
    if args.set:
        scopes = list(BOUNDED if args.set == "bounded" else DEEP)
    elif args.path:
        scopes = [Scope(args.path, tuple(args.intents.split(",")), args.faults,
                        tuple(_CODE_FAULTS[c] for c in args.kinds.split(",") if c),
                        tuple(e for e in args.env.split(",") if e), args.env_budget,
                        tuple(float(s) for s in args.skew.split(",") if s), args.total, args.sequential,
                        tuple(r for r in args.regions.split(",") if r), args.home)]
    else:
        parser.error("give --path (and --replay) or --set")
    import logging
    import warnings

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    if args.replay is not None:
        with world(args.transport) as w, open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            schedule = run_one(w, scopes[0], [int(c) for c in args.replay.split(",") if c])
        print("\n".join(f"  {i}. {s}" for i, s in enumerate(schedule.trace, 1)))
        if schedule.violation is not None:
            print(schedule.violation.report(scopes[0]))
            return 1
        print("no violation")
        return 0
    started = time.monotonic()
    results: list[Exploration] = []
    states: set[str] = set()
    with ProcessPoolExecutor(args.workers) as pool:
        futures = [pool.submit(explore_scopes, [scope], args.limit, args.transport) for scope in scopes]
        for future in as_completed(futures):
            (result,), seen = future.result()
            results.append(result)
            states |= seen
            print(result.summary(), flush=True)
            for violation in result.violations.values():
                print(violation.report(result.scope), flush=True)
    violations = sum(len(r.violations) for r in results)
    print(f"explore: {sum(r.schedules for r in results)} schedules explored, {len(states)} distinct states, "
          f"{violations} violations ({time.monotonic() - started:.0f}s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
