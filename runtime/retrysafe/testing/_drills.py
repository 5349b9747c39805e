"""The failure drills of the contract (docs/contract.md), run against a user's own decorated handler.

Each drill uses a fresh intent, injects its fault at a real persistence
boundary (:class:`~retrysafe.testing._boundary.Boundary` on the engine's
DynamoDB client) or moves the engine's clock, and then asserts two things:
the business effect of the intent happened exactly once (commits carrying
business writes or events, seen at the boundary, plus the user's own
``effects`` counter for foreign effects), and every replayed answer is
semantically equivalent to the first. A failure raises :class:`DrillFailed`
telling, in plain words, which intent, how many effects and what each step did.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from .._engine import Engine
from ._adapters import Answer
from ._boundary import ALWAYS, Boundary, Commit, SimulatedCrash, completes_record
from ._dynamodb_semantics import DynamoSemantics, _refill_retry_quota, instant_retries

#: Answers a racing or retried duplicate may legitimately get.
DUPLICATE_KINDS = frozenset({"executed", "replayed", "in_flight", "unavailable"})


class Adapter(Protocol):
    """What the drills need from a handler (see :mod:`retrysafe.testing._adapters`)."""

    name: str
    engine: Engine

    def request(self, key: str, variant: int = 0) -> Any:
        """The request of intent ``key`` (another request when ``variant`` is not 0)."""

    def invoke(self, request: Any) -> Answer:
        """Invoke the handler once."""

    def from_result(self, result: Any) -> Answer:
        """The answer a stored result replays as."""


class DrillFailed(AssertionError):
    """A drill found a violated guarantee; the message tells the story step by step."""


class Clock:
    """A controllable clock for the engine (leases, record expiry)."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


@dataclass
class DrillReport:
    """What a drill did: its steps in plain words, the intent and its effect count."""

    drill: str
    key: str
    steps: list[str] = field(default_factory=list)
    record_id: str | None = None
    effects: int = 0
    answers: list[Answer] = field(default_factory=list)

    def story(self) -> str:
        """The numbered steps."""
        return "\n".join(f"  {i}. {step}" for i, step in enumerate(self.steps, 1))


class Drills:
    """The drills for one handler. Use as a context manager (or call :meth:`close`) to restore the engine.

    ``effects``: optional counter of effects the boundary cannot see (a payment
    provider's ledger, e-mails sent); it must grow by exactly one per intent.

    The engine's DynamoDB client gets DynamoDB's semantics
    (:class:`~retrysafe.testing.DynamoSemantics`: atomic calls, transactions,
    ``ClientRequestToken`` on the drills' clock) unless it already has them, and
    botocore's retries without sleeps or a retry quota
    (:func:`~retrysafe.testing.instant_retries`), so no drill depends on the ones before it.
    """

    def __init__(self, adapter: Adapter, clock: Clock, *, effects: Callable[[], int] | None = None) -> None:
        self.adapter = adapter
        self.engine = adapter.engine
        self.clock = clock
        self.effects = effects
        self._saved_clock = self.engine.clock
        self.engine.clock = clock
        client = self.engine.store.client
        self._semantics: DynamoSemantics | None = None
        if DynamoSemantics.of(client) is None:
            self._semantics = DynamoSemantics(clock).install(client)
        try:
            # The store from the environment (and its client) outlives a test: without this, the lost
            # responses of earlier drills spend botocore's per-client retry quota and a later drill's
            # single lost response is not retried at all (503).
            instant_retries(client)
        except TypeError:  # a client of your own without botocore's standard retries keeps its policy
            pass
        self.boundary = Boundary(client)

    def close(self) -> None:
        """Unhook the boundary (and the semantics layer it installed) and give the engine its clock back."""
        self.boundary.close()
        if self._semantics is not None:
            self._semantics.uninstall(self.engine.store.client)
        self.engine.clock = self._saved_clock

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the drills ----------------------------------------------------------------
    def response_lost(self) -> DrillReport:
        """Drills 1 and 4: the commit succeeds, the answer (or the ack) is lost, the client retries."""
        report, before = self._start("response lost after commit")
        self.boundary.crash_after_commit()
        self._expect(report, self._call(report, 0, "first invocation, crash after the commit"), {"crashed"})
        committed = self._committed(report)
        retry = self._call(report, 0, "retry")
        self._expect(report, retry, {"replayed"})
        self._equivalent(report, self.adapter.from_result(committed.result), retry, "the committed result")
        self._replays_equal(report, retry)
        return self._finish(report, before, 1)

    def race(self, n: int = 8) -> DrillReport:
        """Drill 2: ``n`` identical requests race on one key; one effect, the others replay, 409 or 503.

        Each DynamoDB call is applied atomically, as DynamoDB does (moto alone
        does not under threads); the requests interleave between calls.
        """
        report, before = self._start(f"{n} identical requests race")
        request = self.adapter.request(report.key)
        answers: list[Answer] = []
        barrier = threading.Barrier(n)
        lock = threading.Lock()

        def one() -> None:
            barrier.wait()
            answer = self._invoke(request)
            with lock:
                answers.append(answer)

        threads = [threading.Thread(target=one) for _ in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        kinds = sorted(a.describe() for a in answers)
        report.steps.append(f"{n} concurrent invocations answered: {', '.join(kinds)}")
        report.answers.extend(answers)
        for answer in answers:
            self._expect(report, answer, DUPLICATE_KINDS)
        final = self._call(report, 0, "a retry after the race")
        self._expect(report, final, {"replayed", "executed"})
        for answer in answers:
            if answer.kind in ("executed", "replayed"):
                self._equivalent(report, final, answer, "the answer after the race")
        return self._finish(report, before, 1)

    def key_reuse(self) -> DrillReport:
        """Drill 3: the same key with another payload is refused and executes nothing."""
        report, before = self._start("same key, another payload")
        first = self._call(report, 0, "first request")
        self._expect(report, first, {"executed"})
        if getattr(self.adapter, "identity_is_body", False):
            # The provider signs only the body, so its delivery id is unsigned metadata: another body is another
            # delivery. What an attacker can reuse is the signed body, under fresh ids: it must be a replay.
            webhook: Any = self.adapter  # a WebhookAdapter: it can resend one body under another id
            resent = webhook.request(report.key, 0, delivery=f"{report.key}-resent")
            other = self._call(report, 0, "the same signed body under another delivery id", request=resent)
            self._expect(report, other, {"replayed"})
        else:
            other = self._call(report, 1, "the same key with a different payload")
            self._expect(report, other, {"mismatch", "failed"})
        self._replays_equal(report, first)
        return self._finish(report, before, 1)

    def redelivery(self, times: int = 3) -> DrillReport:
        """Drill 5: the same request delivered again (webhook replay, SQS redelivery, task retry): one effect."""
        report, before = self._start(f"delivered {times + 1} times")
        first = self._call(report, 0, "first delivery")
        self._expect(report, first, {"executed"})
        for attempt in range(times):
            again = self._call(report, 0, f"redelivery {attempt + 1}")
            self._expect(report, again, {"replayed"})
            self._equivalent(report, first, again, "the first answer")
        return self._finish(report, before, 1)

    def crash_after_foreign_call(self, *, after_checkpoint: bool = False) -> DrillReport:
        """Drill 7: the work ran (foreign calls made) and the invocation died before completing the record.

        In claim-first mode the retry is refused while the lease holds, then takes
        over once it lapsed; the foreign call repeats with the same derived key.
        ``after_checkpoint``: die right after the first recovery point
        (:meth:`~retrysafe.Transaction.step`) committed instead; the takeover resumes after it.
        """
        report, before = self._start("crash after the foreign call, before completing")
        if after_checkpoint:
            self.boundary.crash("TransactWriteItems", when="after", match=lambda op, params: not completes_record(
                op, params))
            label = "first invocation, crash after its recovery point committed"
        else:
            self.boundary.crash_before_commit()
            label = "first invocation, crash before the completing transaction"
        self._expect(report, self._call(report, 0, label), {"crashed"})
        crashed = self.boundary.crashed_record
        if crashed is not None:
            report.record_id = crashed
            pending = self.engine.store.get(crashed)
            if pending is not None and pending.lease_until_ms is not None:
                early = self._call(report, 0, "retry while the crashed invocation's lease still holds")
                self._expect(report, early, {"in_flight"})
                wait = pending.lease_remaining(self.clock()) + 1
                self.clock.advance(wait)
                report.steps.append(f"the clock moves {wait:g}s forward: the lease has lapsed")
        retry = self._call(report, 0, "retry")
        self._expect(report, retry, {"executed"})
        self._replays_equal(report, retry)
        return self._finish(report, before, 1)

    def late_replay(self) -> DrillReport:
        """Drill 8: the record expires and a real late replay arrives; no silent second effect.

        The documented behaviour: the expired record is treated as absent, the
        handler runs again; a handler whose business ids derive from the key
        writes the same items (or is refused by their conditions), never new ones.
        """
        report, before = self._start("late replay after the record expired")
        first = self._call(report, 0, "first request")
        self._expect(report, first, {"executed"})
        committed = self._committed(report)
        assert committed.record_id is not None
        record = self.engine.store.get(committed.record_id)
        if record is None:
            raise self._failure(report, "the completed record was not found in the table")
        self.clock.now = record.expires_at + 1
        report.steps.append("the clock moves past the record's expiry (DynamoDB TTL has not removed it yet)")
        late = self._call(report, 0, "the late replay")
        if late.kind in ("executed", "replayed"):
            self._equivalent(report, first, late, "the first answer")
        else:
            self._expect(report, late, {"refused", "failed"})
        effects = self.boundary.effects(committed.record_id)
        first_writes = set(effects[0].writes) if effects else set()
        first_events = set(effects[0].events) if effects else set()
        for commit in effects[1:]:
            new = sorted(set(commit.writes) - first_writes)
            events = sorted(set(commit.events) - first_events)
            if new or events:
                raise self._failure(report, f"the late replay created new business items {new} or events "
                                            f"{events}: a silent second effect (derive business ids from the key)")
        report.record_id = committed.record_id
        self._check_user_effects(report, before, 1)
        report.effects = 1
        return report

    def lost_response(self, *, times: int = 1) -> DrillReport:
        """Each DynamoDB call of an invocation in turn is applied and its answer lost; botocore retries it.

        A clean invocation of a fresh intent lists the calls the handler makes
        (claim, recovery points, the completing transaction...). Then, for each
        of them, a fresh intent runs with that call's answer lost ``times`` times
        in a row: botocore resends the same request (the same
        ``ClientRequestToken`` for a transaction, which DynamoDB answers without
        applying it again). With ``times=1`` the loss must be invisible: the
        invocation answers as without it (executed, never "in flight" because
        of its own claim), with one effect. With
        :data:`~retrysafe.testing._boundary.ALWAYS` botocore's retries run out
        and the invocation fails (503, a failed record, an error); the client
        then retries (past the lease when one is held) until it gets an answer:
        one effect, and every later answer equals the first successful one.
        """
        label = "once" if times == 1 else ("until botocore's retries run out" if times == ALWAYS else f"{times} times")
        report, before = self._start(f"lost response ({label})")
        probe = self._call(report, 0, "a clean invocation, listing its DynamoDB calls")
        self._expect(report, probe, {"executed"})
        calls = [operation for operation, _ in self.boundary.sent]
        report.steps.append(f"its calls: {', '.join(calls)}")
        for index, operation in enumerate(calls):
            key = f"{report.key}-{index + 1}"
            nth = calls[:index + 1].count(operation)
            self.boundary.reset()
            self.boundary.lose_response(operation, nth=nth, times=times)
            first = self._call(report, 0, f"call {index + 1} ({operation}) loses its answer {label}", key=key)
            record = next((r for _, r in self.boundary.sent if r is not None), None)
            report.record_id = record
            if times == 1:
                self._expect(report, first, {"executed"})
            else:
                first = self._retry_until_answered(report, first, key, record)
            self._replays_equal(report, first, key=key)
            effects = len(self.boundary.effects(record)) if record is not None else 0
            if effects > 1:
                raise self._failure(report, f"intent {key}: the business effect was committed {effects} times")
        self._check_user_effects(report, before, len(calls) + 1)
        report.effects = 1
        return report

    def _retry_until_answered(self, report: DrillReport, answer: Answer, key: str, record: str | None) -> Answer:
        """The client's retries after a failed invocation, waiting out a held lease; returns the 2xx answer."""
        for _ in range(3):
            if answer.kind in ("executed", "replayed"):
                return answer
            self._expect(report, answer, {"unavailable", "failed", "in_flight"})
            pending = self.engine.store.get(record) if record is not None else None
            if answer.kind == "in_flight" and pending is not None:
                wait = pending.lease_remaining(self.clock()) + 1
                self.clock.advance(wait)
                report.steps.append(f"the clock moves {wait:g}s forward: the lease has lapsed")
            answer = self._call(report, 0, "the client retries", key=key)
        self._expect(report, answer, {"executed", "replayed"})
        return answer

    def all(self, *, race: int = 8) -> list[DrillReport]:
        """Every drill on one handler (drills 1-5, 7, 8; drill 9 is checked by each; 6 is :func:`publish_twice`)."""
        return [self.response_lost(), self.race(race), self.key_reuse(), self.redelivery(),
                self.crash_after_foreign_call(), self.late_replay(), self.lost_response(),
                self.lost_response(times=ALWAYS)]

    # -- machinery -----------------------------------------------------------------
    def _start(self, name: str) -> tuple[DrillReport, int]:
        self.boundary.reset()
        self.boundary.revive()
        _refill_retry_quota(self.engine.store.client)  # each drill starts as a fresh container would
        report = DrillReport(name, f"drill-{uuid.uuid4().hex[:12]}")
        return report, self.effects() if self.effects is not None else 0

    def _invoke(self, request: Any) -> Answer:
        commits = len(self.boundary.commits)
        try:
            answer = self.adapter.invoke(request)
        except SimulatedCrash:
            operation, when = self.boundary.crashes[-1]
            return Answer("crashed", value=f"simulated crash {when} {operation}")
        if answer.kind == "executed" and not any(c.completes for c in self.boundary.commits[commits:]):
            return Answer("replayed", answer.status, answer.value, answer.headers)  # answered without committing
        return answer

    def _call(self, report: DrillReport, variant: int, label: str, *, key: str | None = None,
              request: Any = None) -> Answer:
        answer = self._invoke(request if request is not None else self.adapter.request(key or report.key, variant))
        self.boundary.revive()
        detail = f" [{answer.value}]" if answer.kind == "crashed" else ""
        report.steps.append(f"{label}: {answer.describe()}{detail}")
        report.answers.append(answer)
        return answer

    def _replays_equal(self, report: DrillReport, first: Answer, *, key: str | None = None) -> None:
        replay = self._call(report, 0, "replay", key=key)
        self._expect(report, replay, {"replayed"})
        self._equivalent(report, first, replay, "the first answer")

    def _expect(self, report: DrillReport, answer: Answer, kinds: set[str] | frozenset[str]) -> None:
        if answer.kind not in kinds:
            raise self._failure(report, f"the last step answered {answer.describe()}; expected "
                                        f"{' or '.join(sorted(kinds))}")

    def _equivalent(self, report: DrillReport, first: Answer, later: Answer, what: str) -> None:
        if (first.status, first.value, first.headers) != (later.status, later.value, later.headers):
            raise self._failure(report, f"a replayed answer differs from {what}:\n    first:  {first.status} "
                                        f"{first.headers} {first.value!r}\n    replay: {later.status} "
                                        f"{later.headers} {later.value!r}")

    def _committed(self, report: DrillReport) -> Commit:
        completed = [c for c in self.boundary.commits if c.completes]
        if not completed:
            raise self._failure(report, "no transaction completed an idempotency record: is the handler "
                                        "decorated, and does it return a storable (non-5xx) result?")
        return completed[0]

    def _check_user_effects(self, report: DrillReport, before: int, expected: int) -> None:
        if self.effects is not None:
            count = self.effects() - before
            if count != expected:
                raise self._failure(report, f"the effects counter grew by {count}; expected {expected}")

    def _finish(self, report: DrillReport, before: int, expected: int) -> DrillReport:
        """At most ``expected`` committed effects at the boundary; exactly ``expected`` by the user's counter
        when there is one (a handler whose only effect is foreign commits no business write), else at the boundary."""
        effects = self.boundary.effects()
        ids = {c.record_id for c in effects}
        report.record_id = report.record_id or next(iter(ids), None)
        report.effects = len(effects)
        if len(effects) > expected or (self.effects is None and len(effects) != expected):
            where = "; ".join(f"{c.record_id}: writes {list(c.writes)} events {list(c.events)}" for c in effects)
            raise self._failure(report, f"the business effect was committed {len(effects)} times; expected "
                                        f"{expected}" + (f" ({where})" if where else ""))
        if self.effects is not None:
            self._check_user_effects(report, before, expected)
            report.effects = expected
        return report

    def _failure(self, report: DrillReport, problem: str) -> DrillFailed:
        intent = report.record_id or "(no record written)"
        return DrillFailed(f"drill '{report.drill}' on the {self.adapter.name} handler failed for intent key "
                           f"{report.key!r} (record {intent}): {problem}\n{report.story()}")
