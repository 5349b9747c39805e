"""The claim/commit engine: one state machine for HTTP, SQS, webhook and workflow paths.

Atomic mode
    run the work -> ONE ``TransactWriteItems`` (completed record conditioned
    ``attribute_not_exists(pk) OR exp < now`` + the work's writes + events);
    work that wrote nothing but the record: ONE conditional ``PutItem`` instead.
    If the record exists, DynamoDB returns it (ALL_OLD) and the engine replays,
    refuses a mismatch or reports the duplicate in flight: 1 round trip either way.
Claim first
    conditional claim (lease + owner token) -> run -> ONE ``TransactWriteItems``
    completing the record conditioned on the owner token; work that wrote
    nothing but the record in that last step: ONE conditional ``PutItem``
    (same condition, ``ALL_OLD``) instead. A failed or
    uncacheable run releases the claim, also conditioned on the owner token;
    a claim that holds (or may hold) a committed checkpoint only ends its lease.
Hinted retries
    an atomic intent whose event says it is likely a retry (``Intent(hinted=True)``: an SQS
    receive count above 1, an HTTP retry header) and that the record cache cannot answer
    takes the claim-first route: the claim's conditional ``PutItem`` returns the stored
    record (``ALL_OLD``), so a replay costs that one call and no run of the work; a first
    run costs the claim and the completing transaction. The work keeps atomic mode's
    rules (no :meth:`~retrysafe.Transaction.step`; an unstorable result releases the key
    instead of parking it: atomic work has no foreign effects). An un-hinted atomic
    intent that meets a hinted claim whose lease lapsed (its invocation crashed) takes
    the same route, so the key is not held until the record expires: it takes the claim over and
    commits the run it already made under it (the work does not run again), so the answer to a
    first execution is always the result that committed.

Results that cannot be stored (:class:`~retrysafe.errors.UnstorableResultError`) are
refused when the work returns, before any commit. Atomic mode writes nothing. Claim
first *parks* the claim: the record becomes ``parked`` (conditioned on the owner token,
nothing of the work committed) and keeps the key until it expires; every later attempt
meets it and raises the same error without running the work, because the work may
have made foreign calls that must not run twice. Should the parking write fail too
(DynamoDB unavailable), the claim is left to its lease, logged as ``ReleaseFailed``.

Cut-over (``execute(..., predecessor=...)``)
    On a miss (nothing in the cache; atomic: before the handler runs; claim first: once the
    claim is won, before the handler runs) the engine asks the idempotency layer the code used
    before retrysafe (:mod:`retrysafe._cutover`). A completed answer takes the place of the
    work's result: it is committed exactly as the work's would be (atomic: one conditional
    ``PutItem`` of the completed record; claim first: the claim completed), counted
    ``ReplayedFromPowertools`` and answered as a replay. A predecessor still in flight raises
    :class:`RequestInFlightError` (a claim is released first); none lets the work run.

Warm containers: with a :class:`~retrysafe._cache.RecordCache` (the store from the environment has
one) a key this container completed or replayed is answered from memory before any of the above:
a replay or a mismatch, zero round trips, the work not run.

Lost responses: every write carries this invocation's token and is refused when
repeated, so a retried call that meets its own write (a claim, a checkpoint, the
completed record) goes on as if the first answer had arrived.

The adapters translate :class:`Outcome` and the errors into their transport.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._config import Mode, Retention, idempotency_disabled
from ._keys import Scope
from ._observability import (
    EXECUTED,
    FENCING_REJECTED,
    IN_FLIGHT,
    KEY_MISMATCH,
    LEGACY_REPLAYED,
    NOT_STORED,
    RELEASE_FAILED,
    RELEASED,
    REPLAYED,
    TAKEOVER,
    UNSTORABLE_RESULT,
    telemetry,
)
from ._record import COMPLETED, PARKED, PENDING, Record
from ._replay import ReplayInfo
from ._store import DynamoStore, request_token
from ._transaction import Transaction
from ._value import Value, set_field
from .errors import (
    FencingError,
    KeyReuseMismatchError,
    RecordConflict,
    RequestInFlightError,
    RetrysafeError,
    StoreUnavailableError,
    TransactionRaced,
    UnstorableResultError,
)
from .names import LEASE_MARGIN_SECONDS

if TYPE_CHECKING:
    from ._cache import RecordCache

#: ``Engine(cache=...)``'s default: the store's own cache (:attr:`DynamoStore.cache`).
STORE_CACHE: Any = object()
#: How often a raced atomic transaction is retried before answering "in flight".
RACE_RETRIES = 3
#: Poll interval while waiting for an in-flight duplicate to complete.
POLL_SECONDS = 0.1


_DEFAULT_RETENTION = Retention()


class Intent(Value):
    """What to execute at most once.

    ``lease_seconds``: lease of a claim (default: the Lambda's remaining time, or
    the retention's default lease). ``wait_seconds``: wait up to this long for an
    in-flight duplicate to complete, then replay it. ``hinted``: the event says it is likely
    a retry; an atomic intent then claims first when the cache misses (see the module docstring).
    """

    __slots__ = ("fingerprint", "hinted", "lease_seconds", "mode", "retention", "scope", "wait_seconds")

    fingerprint: str
    hinted: bool
    lease_seconds: float | None
    mode: Mode
    retention: Retention
    scope: Scope
    wait_seconds: float

    def __init__(self, scope: Scope, fingerprint: str, mode: Mode = Mode.ATOMIC,
                 retention: Retention = _DEFAULT_RETENTION, lease_seconds: float | None = None,
                 wait_seconds: float = 0.0, hinted: bool = False) -> None:
        set_field(self, "scope", scope)
        set_field(self, "fingerprint", fingerprint)
        set_field(self, "mode", mode)
        set_field(self, "retention", retention)
        set_field(self, "lease_seconds", lease_seconds)
        set_field(self, "wait_seconds", wait_seconds)
        set_field(self, "hinted", hinted)


class Completion(Value):
    """What the work produced. ``store=False`` (a 5xx, a transient failure) commits nothing and frees the key.

    ``expires_at`` (epoch seconds): when the record must expire before the retry horizon does (an
    answer adopted from the code before retrysafe lives no longer than that code's record would have).
    """

    __slots__ = ("expires_at", "resource", "result", "store")

    expires_at: int | None
    resource: str | None
    result: Any
    store: bool

    def __init__(self, result: Any, store: bool = True, resource: str | None = None,
                 expires_at: int | None = None) -> None:
        set_field(self, "result", result)
        set_field(self, "store", store)
        set_field(self, "resource", resource)
        set_field(self, "expires_at", expires_at)


class Outcome(Value):
    """The result to answer with, and whether it was replayed from a stored record.

    ``replay``: a replay's public metadata (for ``on_replay`` hooks, :mod:`retrysafe._replay`);
    set exactly when ``replayed``.
    """

    __slots__ = ("replay", "replayed", "result", "stored")

    replay: ReplayInfo | None
    replayed: bool
    result: Any
    stored: bool

    def __init__(self, result: Any, replayed: bool, stored: bool, replay: ReplayInfo | None = None) -> None:
        set_field(self, "result", result)
        set_field(self, "replayed", replayed)
        set_field(self, "stored", stored)
        set_field(self, "replay", replay)


Work = Callable[[Transaction], Completion]


class Adopted(Value):
    """A result the code before retrysafe completed for an intent, in the adapter's stored form.

    ``store``: whether retrysafe would have stored it (an HTTP 5xx it would not: it is answered, and
    recorded nowhere). ``expires_at``: when the old record expires (epoch seconds), ``None`` if never.
    """

    __slots__ = ("expires_at", "result", "store")

    expires_at: int | None
    result: Any
    store: bool

    def __init__(self, result: Any, store: bool = True, expires_at: int | None = None) -> None:
        set_field(self, "result", result)
        set_field(self, "store", store)
        set_field(self, "expires_at", expires_at)


#: A cut-over lookup (:mod:`retrysafe._cutover`): the predecessor's completed result, ``None`` to run the
#: work; raises :class:`RequestInFlightError` (its record is in progress) or :class:`KeyReuseMismatchError`.
Predecessor = Callable[[], "Adopted | None"]


def new_token() -> str:
    """A random writer token (owner of a claim, writer of a completed record, intent instance)."""
    return os.urandom(12).hex()


class Engine:
    """Executes intents against a :class:`DynamoStore`, optionally with a warm-container cache.

    ``cache``: by default the store's (the store from :meth:`DynamoStore.from_env` has one in Lambda's
    execution environment); pass a :class:`~retrysafe._cache.RecordCache` of its own, or ``None`` for none.

    ``RETRYSAFE_IDEMPOTENCY_DISABLED=true`` (unit tests that do not test idempotency) is read by the
    adapters on each call, before they select a key or a fingerprint: they then call
    :meth:`execute_unkeyed`, never :meth:`execute`. Inside Lambda's execution environment that switch
    raises :class:`~retrysafe.errors.IdempotencyDisabledError` here, at cold start.
    """

    def __init__(self, store: DynamoStore, *, cache: RecordCache | None = STORE_CACHE,
                 clock: Callable[[], float] = time.time) -> None:
        idempotency_disabled()  # refused inside Lambda: fail the cold start, not a request
        self.store = store
        self.cache: RecordCache | None = store.cache if cache is STORE_CACHE else cache
        self.clock = clock

    def execute(self, intent: Intent, work: Work, remaining_ms: Callable[[], int] | None = None, *,
                predecessor: Predecessor | None = None) -> Outcome:
        """Run ``work`` at most once for ``intent`` and return what to answer.

        ``predecessor``: the cut-over lookup, asked on a miss before ``work`` runs (module docstring).
        Raises :class:`KeyReuseMismatchError`, :class:`RequestInFlightError`,
        :class:`FencingError`, or whatever ``work`` raised (after releasing its claim).
        """
        home = self.store.for_scope(intent.scope)
        if home is not self.store:  # a table with replicas: this tenant's records live in another region
            return Engine(home, cache=self.cache, clock=self.clock).execute(intent, work, remaining_ms,
                                                                            predecessor=predecessor)
        now = self.clock()
        record_id = intent.scope.record_id
        if self.cache is not None:
            cached = self.cache.get(record_id, now)
            if cached is not None:
                return self._resolve(intent, cached, now)
        if predecessor is not None:
            work = self._asking(intent, predecessor, work)
        if intent.mode is Mode.ATOMIC and not intent.hinted:
            return self._atomic(intent, work, now, remaining_ms)
        return self._claim_first(intent, work, now, remaining_ms)

    def _asking(self, intent: Intent, predecessor: Predecessor, work: Work) -> Work:
        """``work`` preceded by the cut-over lookup: its completed answer replaces the work's result."""

        def first(txn: Transaction) -> Completion:
            try:
                found = predecessor()
            except RequestInFlightError:
                self._count(IN_FLIGHT, intent, source="powertools")
                raise
            except KeyReuseMismatchError:
                self._count(KEY_MISMATCH, intent, source="powertools")
                raise
            if found is None:
                return work(txn)
            return _Answered(found.result, store=found.store, expires_at=found.expires_at)

        return first

    def execute_unkeyed(self, scope: Scope, work: Work, retention: Retention = _DEFAULT_RETENTION, *,
                        steps: bool = False, predecessor: Predecessor | None = None) -> Outcome:
        """Run ``work`` without deduplication (an operation whose key is optional and absent).

        Each call is its own intent: ``scope``'s tenant and operation with a fresh random
        key, so derived keys and event ids never repeat. The work's writes and events
        still commit together in one transaction. With ``steps`` (claim-first work) each
        :meth:`Transaction.step <retrysafe.Transaction.step>` commits the writes buffered
        before it, with no record to hold its checkpoint. ``predecessor``: the cut-over lookup
        (the code before retrysafe may have keyed the request on its content); its completed
        answer is returned as a replay, and recorded nowhere (there is no key to record it under).
        """
        home = self.store.for_scope(scope)
        if home is not self.store:
            return Engine(home, cache=self.cache, clock=self.clock).execute_unkeyed(
                scope, work, retention, steps=steps, predecessor=predecessor)
        if predecessor is not None:
            found = predecessor()  # in flight or a mismatch: raised as for a keyed intent
            if found is not None:
                telemetry.count(LEGACY_REPLAYED, scope.operation, "unkeyed")
                return Outcome(found.result, replayed=True, stored=False,
                               replay=ReplayInfo(None, found.expires_at, source="powertools"))
        writer = new_token()
        own = Scope(scope.tenant, scope.operation, f"unkeyed/{writer}", adapter=scope.adapter,
                    subscriber=scope.subscriber)

        def commit_step(name: str, checkpoints: dict[str, Any], actions: list[dict[str, Any]]) -> None:
            self.store.transact(actions, token=request_token(writer, "step", name))

        txn = Transaction(own, self.store.table_name, int(self.clock()) + retention.horizon_seconds, instance=writer,
                          clock=self.clock, checkpoint_writer=commit_step if steps else None)
        completion = work(txn)
        if completion.store:
            self.store.transact(txn.actions(), token=request_token(writer, "unkeyed"))
        return Outcome(completion.result, replayed=False, stored=False)

    # -- atomic ------------------------------------------------------------
    def _atomic(self, intent: Intent, work: Work, now: float, remaining_ms: Callable[[], int] | None) -> Outcome:
        writer = new_token()
        expires_at = int(now) + intent.retention.horizon_seconds
        txn = Transaction(intent.scope, self.store.table_name, expires_at, instance=writer, clock=self.clock)
        completion = work(txn)
        if not completion.store:
            return self._not_stored(intent, completion)
        try:
            record = self._completed(intent, completion, now, expires_at, writer)
        except UnstorableResultError as error:
            self._count(UNSTORABLE_RESULT, intent, error=str(error))  # nothing was written
            raise
        actions = txn.actions()
        for attempt in range(RACE_RETRIES + 1):
            try:
                if actions:
                    self.store.commit(record, actions, self.clock(), token=request_token(writer, "commit", str(attempt)))
                else:  # nothing but the record: a conditional PutItem costs half a transaction's write units
                    self.store.put_absent(record, self.clock())
                break
            except RecordConflict as conflict:
                if _written_by(conflict.current, writer, COMPLETED):
                    break  # our own commit: its response was lost and botocore retried
                if _lapsed_claim(conflict.current, intent, self.clock()):
                    # A claim whose invocation crashed: take it over and commit this run under it. The work
                    # does not run again, so what this invocation answers is what it commits.
                    return self._take_over(intent, txn, completion, now, expires_at, remaining_ms)
                return self._resolve(intent, conflict.current, self.clock())
            except TransactionRaced:
                if attempt == RACE_RETRIES:
                    self._count(IN_FLIGHT, intent)
                    raise RequestInFlightError(1) from None
                _back_off(attempt)
        return self._executed(intent, record, completion)

    # -- claim first -------------------------------------------------------
    def _claim(self, intent: Intent, owner: str, now: float, expires_at: int,
               remaining_ms: Callable[[], int] | None) -> Record | Outcome:
        """Claim the key as ``owner``: the record now held, or the answer for a key already taken."""
        lease = self._lease_seconds(intent, remaining_ms)
        claim = Record(record_id=intent.scope.record_id, state=PENDING, fingerprint=intent.fingerprint,
                       expires_at=expires_at, created_at_ms=int(now * 1000), operation=intent.scope.operation,
                       owner=owner, lease_until_ms=int((now + lease) * 1000), instance=owner)
        try:
            claimed = self.store.claim(claim, now)
        except RecordConflict as conflict:
            return self._resolve(intent, conflict.current, now)
        except TransactionRaced:
            self._count(IN_FLIGHT, intent)
            raise RequestInFlightError(1) from None
        except StoreUnavailableError:
            # Every answer was lost or refused: the claim (or a takeover, holding checkpoints) may be
            # ours. End its lease if so, so the client's retry takes over at once instead of waiting.
            self._release(intent, owner, keep=True)
            raise
        if claimed.previous is not None:
            self._count(TAKEOVER, intent)
        return claimed.held

    def _take_over(self, intent: Intent, txn: Transaction, completion: Completion, now: float, expires_at: int,
                   remaining_ms: Callable[[], int] | None) -> Outcome:
        """Atomic mode met a lapsed claim: claim the key, then commit the run that already happened under it."""
        owner = new_token()
        held = self._claim(intent, owner, self.clock(), expires_at, remaining_ms)
        if isinstance(held, Outcome):
            return held
        record = self._completed(intent, completion, now, expires_at, owner)
        return self._complete_claim(intent, owner, record, txn, completion, keep=bool(held.checkpoints))

    def _claim_first(self, intent: Intent, work: Work, now: float,
                     remaining_ms: Callable[[], int] | None) -> Outcome:
        owner = new_token()  # the fencing token
        expires_at = int(now) + intent.retention.horizon_seconds
        held = self._claim(intent, owner, now, expires_at, remaining_ms)
        if isinstance(held, Outcome):
            return held
        steps = _Steps()
        foreign = intent.mode is Mode.CLAIM_FIRST  # else a hinted atomic intent: atomic mode's rules
        txn = Transaction(intent.scope, self.store.table_name, expires_at, held.checkpoints,
                          checkpoint_writer=(lambda name, saved, actions: self._checkpoint(
                              intent, owner, name, saved, actions, steps)) if foreign else None,
                          instance=held.instance or owner, clock=self.clock)
        try:
            completion = work(txn)
            record = self._completed(intent, completion, now, expires_at, owner) if completion.store else None
        except UnstorableResultError as error:
            self._count(UNSTORABLE_RESULT, intent, error=str(error))
            if foreign:
                self._park(intent, owner, now, expires_at)  # the run may have made foreign calls: never release
            else:
                self._release(intent, owner, keep=False)  # as atomic mode: nothing stays, a retry runs again
            raise
        except BaseException:
            self._release(intent, owner, keep=steps.keep(txn))
            raise
        if record is None:
            self._release(intent, owner, keep=steps.keep(txn))
            return self._not_stored(intent, completion)
        return self._complete_claim(intent, owner, record, txn, completion, keep=steps.keep(txn))

    def _complete_claim(self, intent: Intent, owner: str, record: Record, txn: Transaction, completion: Completion,
                        *, keep: bool) -> Outcome:
        """Commit ``record`` and ``txn``'s writes under ``owner``'s claim (``keep``: the claim holds checkpoints)."""
        try:
            self._commit_claimed(record, txn, owner)
        except RecordConflict as conflict:
            current = conflict.current
            if _written_by(current, owner, COMPLETED):
                return self._executed(intent, record, completion)  # our own commit, response lost
            self._count(FENCING_REJECTED, intent)
            if current is not None and current.state == COMPLETED and current.fingerprint == intent.fingerprint:
                return self._replay(intent, current)
            raise FencingError("this invocation's claim was taken over; its writes were discarded") from None
        except BaseException as error:
            if self._release(intent, owner, keep=keep) is COMPLETED and isinstance(error, Exception):
                return self._executed(intent, record, completion)  # the commit had been applied after all
            raise
        return self._executed(intent, record, completion)

    def _commit_claimed(self, record: Record, txn: Transaction, owner: str) -> None:
        """The completing write of a claim, re-sent when a concurrent transaction raced it."""
        actions = txn.actions()
        for attempt in range(RACE_RETRIES + 1):
            try:
                if actions:
                    self.store.commit(record, actions, self.clock(), owner=owner,
                                      token=request_token(owner, "commit", str(attempt)))
                else:  # nothing but the record: a conditional PutItem costs half a transaction's write units
                    self.store.put_owned(record, owner)
                return
            except TransactionRaced:
                if attempt == RACE_RETRIES:
                    raise
                _back_off(attempt)

    def _park(self, intent: Intent, owner: str, now: float, expires_at: int) -> None:
        """Turn this owner's claim into a parked record (nothing else committed); see the module docstring."""
        parked = Record(record_id=intent.scope.record_id, state=PARKED, fingerprint=intent.fingerprint,
                        expires_at=expires_at, created_at_ms=int(now * 1000), operation=intent.scope.operation,
                        owner=owner)
        try:
            self.store.commit(parked, [], self.clock(), owner=owner, token=request_token(owner, "park"))
        except RecordConflict as conflict:
            if not _written_by(conflict.current, owner, PARKED):  # else: our own write, its response lost
                self._count(FENCING_REJECTED, intent, step="park")
        except RetrysafeError as error:
            self._count(RELEASE_FAILED, intent, step="park", error=type(error).__name__)

    def _lease_seconds(self, intent: Intent, remaining_ms: Callable[[], int] | None) -> float:
        if intent.lease_seconds is not None:
            return intent.lease_seconds
        if remaining_ms is not None:
            return max(remaining_ms(), 0) / 1000.0 + LEASE_MARGIN_SECONDS
        return intent.retention.default_lease_seconds

    def _checkpoint(self, intent: Intent, owner: str, name: str, checkpoints: dict[str, Any],
                    actions: list[dict[str, Any]], steps: _Steps) -> None:
        steps.sent = True  # from here on the claim may hold a committed checkpoint: never delete it
        try:
            self.store.checkpoint(intent.scope.record_id, owner, name, checkpoints, actions,
                                  token=request_token(owner, "step", name))
        except RecordConflict as conflict:
            current = conflict.current
            if _written_by(current, owner, PENDING) and current is not None and name in current.checkpoints:
                return  # our own checkpoint: its response was lost and botocore retried
            self._count(FENCING_REJECTED, intent, step="checkpoint")
            raise FencingError("this invocation's claim was taken over; its checkpoint was discarded") from None

    def _release(self, intent: Intent, owner: str, *, keep: bool) -> str | None:
        """Free the claim after a failed or uncacheable run; returns the state of a record that is no longer ours.

        With ``keep`` (the claim holds or may hold a committed checkpoint) only its lease
        ends, so the next attempt resumes from what DynamoDB holds. A release that fails
        (DynamoDB unavailable) is logged and left to the lease: the run's own error is
        what the caller gets.
        """
        try:
            released, current = self.store.release(intent.scope.record_id, owner, keep_checkpoints=keep)
        except RetrysafeError as error:
            self._count(RELEASE_FAILED, intent, error=type(error).__name__)
            return None
        if released:
            self._count(RELEASED, intent)
            return None
        if _written_by(current, owner, COMPLETED):
            return COMPLETED
        self._count(FENCING_REJECTED, intent, step="release")
        return None

    # -- shared outcomes -----------------------------------------------------
    def _resolve(self, intent: Intent, current: Record | None, now: float) -> Outcome:
        """Answer for a key that is already taken: replay, mismatch, or in flight (optionally waiting)."""
        if current is None:  # removed between our write and DynamoDB's answer: treat as in flight
            self._count(IN_FLIGHT, intent)
            raise RequestInFlightError(1)
        if current.fingerprint != intent.fingerprint:
            self._count(KEY_MISMATCH, intent)
            raise KeyReuseMismatchError("this idempotency key was already used with a different request")
        if current.state == COMPLETED:
            return self._replay(intent, current)
        if current.state == PARKED:
            self._count(UNSTORABLE_RESULT, intent, parked=True)
            raise UnstorableResultError("an earlier run of this intent returned a result that could not be stored; "
                                        "it is not run again (its foreign calls may have happened) until the "
                                        "record expires")
        deadline = now + intent.wait_seconds
        while self.clock() < deadline:
            time.sleep(POLL_SECONDS)
            latest = self.store.get(intent.scope.record_id)
            if latest is None or latest.is_expired(self.clock()):
                break
            if latest.state == COMPLETED:
                return self._resolve(intent, latest, self.clock())
            current = latest
        self._count(IN_FLIGHT, intent)
        raise RequestInFlightError(max(1, math.ceil(current.lease_remaining(self.clock()))))

    def _replay(self, intent: Intent, record: Record) -> Outcome:
        if self.cache is not None:
            self.cache.put(record)
        self._count(REPLAYED, intent)
        return Outcome(record.result, replayed=True, stored=True,
                       replay=ReplayInfo(record.record_id, record.expires_at, record.created_at_ms / 1000))

    def _completed(self, intent: Intent, completion: Completion, now: float, expires_at: int, writer: str) -> Record:
        """The completed record; its result is encoded here, before any commit (:class:`UnstorableResultError`)."""
        if completion.expires_at is not None:
            expires_at = min(expires_at, completion.expires_at)
        record = Record(record_id=intent.scope.record_id, state=COMPLETED, fingerprint=intent.fingerprint,
                        expires_at=expires_at, created_at_ms=int(now * 1000), operation=intent.scope.operation,
                        owner=writer, result=completion.result, resource=completion.resource)
        record.result_text  # noqa: B018  # encoded once, kept on the record for the commit and the cache
        return record

    def _executed(self, intent: Intent, record: Record, completion: Completion) -> Outcome:
        if self.cache is not None:
            self.cache.put(record)
        if isinstance(completion, _Answered):  # the predecessor's answer, now this intent's record
            self._count(LEGACY_REPLAYED, intent)
            return Outcome(completion.result, replayed=True, stored=True,
                           replay=ReplayInfo(record.record_id, record.expires_at, source="powertools"))
        self._count(EXECUTED, intent)
        return Outcome(completion.result, replayed=False, stored=True)

    def _not_stored(self, intent: Intent, completion: Completion) -> Outcome:
        """The answer of a completion that commits nothing (a 5xx: the key is free for the retry)."""
        if isinstance(completion, _Answered):  # the predecessor's answer, replayed as it would have, recorded nowhere
            self._count(LEGACY_REPLAYED, intent, stored=False)
            return Outcome(completion.result, replayed=True, stored=False,
                           replay=ReplayInfo(None, completion.expires_at, source="powertools"))
        self._count(NOT_STORED, intent)
        return Outcome(completion.result, replayed=False, stored=False)

    def _count(self, name: str, intent: Intent, **fields: Any) -> None:
        telemetry.count(name, intent.scope.operation, intent.scope.record_id, **fields)


class _Answered(Completion):
    """The completion of an intent the code before retrysafe completed (a cut-over lookup's answer)."""

    __slots__ = ()


class _Steps:
    """Whether a claim sent a checkpoint (its outcome may be unknown)."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False

    def keep(self, txn: Transaction) -> bool:
        """True when the claim holds or may hold a committed checkpoint: never delete it."""
        return self.sent or bool(txn.checkpoints)


def _written_by(record: Record | None, writer: str, state: str) -> bool:
    """True when ``record`` is this invocation's own write (in ``state``)."""
    return record is not None and record.owner == writer and record.state == state


def _lapsed_claim(record: Record | None, intent: Intent, now: float) -> bool:
    """True when ``record`` is a claim on ``intent`` whose lease lapsed (its invocation is gone)."""
    return (record is not None and record.state == PENDING and record.fingerprint == intent.fingerprint
            and record.lease_until_ms is not None and record.lease_remaining(now) <= 0 and not record.is_expired(now))


def _back_off(attempt: int) -> None:
    time.sleep((0.01 + 0.04 * os.urandom(1)[0] / 255) * (attempt + 1))  # jittered
