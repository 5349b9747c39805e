"""Crash points at the engine's real persistence boundaries, and a ledger of what committed.

A :class:`Boundary` hooks a botocore client's event system (``before-parameter-build``,
``before-call``, ``after-call``). It never mocks the handler or the engine: the
request really reaches DynamoDB (moto), and a crash armed *after* an operation
raises only once DynamoDB has applied it, exactly like a Lambda that dies while
the response is on its way back. Once an invocation has crashed, every later
call through the client fails too (the process is gone) until :meth:`revive`.

Every successful ``TransactWriteItems`` is recorded as a :class:`Commit`, so a
drill can count business effects per intent without knowing the handler.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..outbox import OUTBOX_PREFIX
from ..record import from_item

RECORD_PREFIX = "idem#"
_PARAMS = "retrysafe_drill_params"
_LOCKED = "retrysafe_drill_locked"

#: Decides whether an armed crash fires for one call: ``(operation, params) -> bool``.
Match = Callable[[str, Mapping[str, Any]], bool]


class SimulatedCrash(BaseException):
    """The invocation died at a persistence boundary (a ``BaseException``: nothing in the handler catches it)."""

    def __init__(self, operation: str, when: str) -> None:
        super().__init__(f"simulated crash {when} {operation}")
        self.operation = operation
        self.when = when


@dataclass(frozen=True)
class Commit:
    """One successful ``TransactWriteItems``: the intent it completed or checkpointed, and what it wrote."""

    record_id: str | None
    #: ``(table, key)`` of each business write (Put/Update/Delete outside the record and the outbox).
    writes: tuple[tuple[str, str], ...]
    #: Ids of the outbox events it appended.
    events: tuple[str, ...]
    #: True when it completed the record (False for a recovery-point checkpoint or an unkeyed commit).
    completes: bool
    #: The stored result of the completed record (what every replay answers with).
    result: Any = None

    @property
    def is_effect(self) -> bool:
        """A commit that changed business state or emitted events."""
        return bool(self.writes or self.events)


@dataclass
class _Armed:
    operation: str
    when: str
    match: Match | None
    remaining: int


@dataclass
class Boundary:
    """Fault injector and commit ledger on one botocore client (any service)."""

    client: Any
    commits: list[Commit] = field(default_factory=list)
    #: ``(operation, when)`` of every crash that fired, in order.
    crashes: list[tuple[str, str]] = field(default_factory=list)
    #: Count of calls per operation that reached the service.
    calls: dict[str, int] = field(default_factory=dict)

    #: Serialize individual calls through this client. DynamoDB applies each request atomically; moto's
    #: in-process backend does not under threads (a reader can see a half-applied UpdateItem). Requests
    #: still interleave between calls, which is the race that matters.
    atomic_calls: bool = False

    def __post_init__(self) -> None:
        self._armed: list[_Armed] = []
        self._call_lock = threading.Lock()
        self._dead = False
        self._lock = threading.Lock()
        #: The idempotency record the last crash was writing (``None`` when the call held none).
        self.crashed_record: str | None = None
        events = self.client.meta.events
        events.register("before-parameter-build", self._remember)
        events.register("before-call", self._before)
        events.register("after-call", self._after)
        events.register("after-call-error", self._after_error)

    def close(self) -> None:
        """Unregister the hooks (the client may be shared by later tests)."""
        events = self.client.meta.events
        events.unregister("before-parameter-build", self._remember)
        events.unregister("before-call", self._before)
        events.unregister("after-call", self._after)
        events.unregister("after-call-error", self._after_error)

    # -- arming --------------------------------------------------------------
    def crash(self, operation: str, *, when: str = "after", match: Match | None = None, nth: int = 1) -> None:
        """Crash the ``nth`` matching call of ``operation``, ``before`` it is sent or ``after`` it succeeded."""
        if when not in ("before", "after"):
            raise ValueError("when must be 'before' or 'after'")
        with self._lock:
            self._armed.append(_Armed(operation, when, match, nth))

    def crash_after_commit(self) -> None:
        """Lose the answer of the transaction that completes an idempotency record (it did commit)."""
        self.crash("TransactWriteItems", when="after", match=completes_record)

    def crash_before_commit(self) -> None:
        """Die after the work ran (foreign calls made) but before the completing transaction is sent."""
        self.crash("TransactWriteItems", when="before", match=completes_record)

    def revive(self) -> None:
        """A new invocation: calls go through again; crashes that did not fire are disarmed."""
        with self._lock:
            self._dead = False
            self._armed.clear()

    @property
    def dead(self) -> bool:
        """True between a crash and :meth:`revive`."""
        return self._dead

    # -- ledger ----------------------------------------------------------------
    def effects(self, record_id: str | None = None) -> list[Commit]:
        """Commits that changed business state or emitted events (for one intent, or all)."""
        return [c for c in self.commits if c.is_effect and (record_id is None or c.record_id == record_id)]

    def reset(self) -> None:
        """Forget commits, crashes and call counts."""
        with self._lock:
            self.commits.clear()
            self.crashes.clear()
            self.calls.clear()

    # -- botocore hooks --------------------------------------------------------
    def _remember(self, params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS] = params

    def _before(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        with self._lock:
            if self._dead:
                raise SimulatedCrash(model.name, "before (the invocation is already dead)")
            self._fire_if_armed(model.name, "before", context.get(_PARAMS) or {})
        if self.atomic_calls:
            self._call_lock.acquire()
            context[_LOCKED] = True

    def _unlock(self, context: dict[str, Any]) -> None:
        if context.pop(_LOCKED, False):
            self._call_lock.release()

    def _after_error(self, context: dict[str, Any], **_: Any) -> None:
        self._unlock(context)

    def _after(self, model: Any, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        self._unlock(context)
        if getattr(http_response, "status_code", 500) >= 300:
            return
        params = context.get(_PARAMS) or {}
        with self._lock:
            self.calls[model.name] = self.calls.get(model.name, 0) + 1
            if model.name == "TransactWriteItems":
                self.commits.append(describe(params))
            self._fire_if_armed(model.name, "after", params)

    def _fire_if_armed(self, operation: str, when: str, params: Mapping[str, Any]) -> None:
        for armed in self._armed:
            if armed.operation == operation and armed.when == when and (armed.match is None
                                                                        or armed.match(operation, params)):
                armed.remaining -= 1
                if armed.remaining == 0:
                    self._armed.remove(armed)
                    self._dead = True
                    self.crashes.append((operation, when))
                    self.crashed_record = _record_of(operation, params)
                    raise SimulatedCrash(operation, when)
                return


def completes_record(operation: str, params: Mapping[str, Any]) -> bool:
    """True for the ``TransactWriteItems`` that writes a completed idempotency record."""
    return any(_record_put(item) is not None for item in params.get("TransactItems") or [])


def describe(params: Mapping[str, Any]) -> Commit:
    """Classify the actions of a ``TransactWriteItems`` request."""
    record_id: str | None = None
    completes = False
    result: Any = None
    writes: list[tuple[str, str]] = []
    events: list[str] = []
    for item in params.get("TransactItems") or []:
        kind, body = next(iter(item.items()))
        if kind == "ConditionCheck":
            continue
        key = body.get("Item") or body.get("Key") or {}
        pk = str(key.get("pk", {}).get("S", ""))
        if pk.startswith(RECORD_PREFIX):
            record_id = pk
            put = _record_put(item)
            if put is not None:
                completes, result = True, from_item(put["Item"]).result
        elif pk.startswith(OUTBOX_PREFIX) and kind == "Put":
            events.append(pk[len(OUTBOX_PREFIX):])
        else:
            writes.append((str(body.get("TableName")), _identity(body)))
    return Commit(record_id, tuple(writes), tuple(events), completes, result)


def _record_put(item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    put: Mapping[str, Any] | None = item.get("Put")
    if not put:
        return None
    fields = put.get("Item") or {}
    if str(fields.get("pk", {}).get("S", "")).startswith(RECORD_PREFIX) and fields.get("st", {}).get("S") == "completed":
        return put
    return None


def _identity(body: Mapping[str, Any]) -> str:
    """A readable identity of a written item: its key, or a Put's ``pk``/``sk`` (else all its attributes)."""
    key = body.get("Key") or {k: v for k, v in (body.get("Item") or {}).items() if k in ("pk", "sk")}
    key = key or body.get("Item") or {}
    return ",".join(f"{name}={next(iter(value.values()))}" for name, value in sorted(key.items()))


def _record_of(operation: str, params: Mapping[str, Any]) -> str | None:
    if operation == "TransactWriteItems":
        return describe(params).record_id
    pk = str((params.get("Key") or params.get("Item") or {}).get("pk", {}).get("S", ""))
    return pk if pk.startswith(RECORD_PREFIX) else None
