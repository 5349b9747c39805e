"""Faults at the engine's real persistence boundaries, and a ledger of what committed.

Faults are injected at the transport's attempt seam (:class:`retrysafe._transport.Attempts`):
every attempt a DynamoDB transport sends (the store's, or any client you give) passes through
its ``Attempts``, whatever the transport is. botocore's client gets one here, through one
``before-send`` handler that performs the real call itself (moto's in-process backend, or HTTP
to moto's server); a transport of its own kind carries one. Two kinds of things plug into it:

* a *server* layer in front of the embedded service
  (:class:`~retrysafe.testing._dynamodb_semantics.DynamoSemantics`: atomic
  requests, transactions, ``ClientRequestToken``);
* *interceptors* between the caller and the service, as the network and the
  Lambda runtime are: a :class:`Boundary` (faults and the ledger) or a
  scheduler gating invocations at call boundaries.

The seam is under the transport's retries: a lost answer is retried by the transport's own
retry policy (botocore's standard mode), exactly as in production.

A :class:`Boundary` never mocks the handler or the engine: the request really
reaches DynamoDB (moto). It injects, per operation and a predicate on the
call's parameters:

* a crash *before* the call, or *after* it was applied (the invocation dies:
  :class:`SimulatedCrash`, a ``BaseException``); once crashed, every later call
  through the client fails too (the process is gone) until :meth:`Boundary.revive`;
* a **lost response**: the call is applied, then the caller sees a read
  timeout, so the transport's retry logic resends the same request (the same
  ``ClientRequestToken`` for a transaction, a plain resend otherwise), once or
  on every attempt until its retries run out (``times=ALWAYS``);
* an error answer without applying anything: throttling (an operation error
  the transport may retry) or a ``TransactionCanceledException`` with given
  ``CancellationReasons`` (``ThrottlingError``, ``TransactionConflict``...).

Every ``TransactWriteItems`` that DynamoDB applied is recorded as a
:class:`Commit` (a token replay applies nothing and is not), and so is the
``PutItem`` that completes a record in atomic mode when the work wrote nothing
else, so a drill can count business effects per intent without knowing the handler.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._record import from_item
from .._transport import Attempts, Reply
from ..names import OUTBOX_PREFIX, PARTITION_KEY, RECORD_PREFIX

_PARAMS = "retrysafe_boundary_params"

#: Decides whether a fault applies to one call: ``(operation, params) -> bool``.
Match = Callable[[str, Mapping[str, Any]], bool]
#: One ``CancellationReasons`` entry to simulate: a code, ``(code, message)``, or ``None`` (no reason).
Reason = str | tuple[str, str] | None

#: ``times`` of a fault that fires on every matching attempt: until botocore's retries run out.
ALWAYS = sys.maxsize

#: The calls that complete an idempotency record: a transaction, or a lone ``PutItem`` in atomic mode.
_COMMIT_OPERATIONS = ("TransactWriteItems", "PutItem")
CRASH_BEFORE = "crash before"
CRASH_AFTER = "crash after"
LOST_RESPONSE = "lost response"
ERROR = "error"
_BEFORE_KINDS = (CRASH_BEFORE, ERROR)
_AFTER_KINDS = (CRASH_AFTER, LOST_RESPONSE)


class SimulatedCrash(BaseException):
    """The invocation died at a persistence boundary (a ``BaseException``: nothing in the handler catches it)."""

    def __init__(self, operation: str, when: str) -> None:
        super().__init__(f"simulated crash {when} {operation}")
        self.operation = operation
        self.when = when


def attempts_of(client: Any) -> Attempts:
    """The attempt seam of ``client``: a transport's own ``attempts``, or (botocore's client) one installed on it."""
    own = getattr(client, "attempts", None)
    if isinstance(own, Attempts):
        return own
    return _BotocoreSeam.of(client).attempts


def release_if_idle(client: Any) -> None:
    """Give a botocore client back its plain hooks once nothing is plugged into its seam any more."""
    seam = client.__dict__.get(_BotocoreSeam.ATTRIBUTE) if hasattr(client, "__dict__") else None
    if isinstance(seam, _BotocoreSeam) and seam.attempts.idle:
        seam.uninstall()


class _BotocoreSeam:
    """botocore's client's :class:`~retrysafe._transport.Attempts`: a ``before-send`` handler that sends each
    attempt itself.

    One per client (:meth:`of`). moto's in-process hook is taken off the client
    and called from here; without it (moto's server, or no moto) the request
    goes over the client's own HTTP session. An attempt nothing replaced is
    answered with the service's own HTTP response, untouched.
    """

    ATTRIBUTE = "_retrysafe_attempts"

    def __init__(self, client: Any) -> None:
        self.client = client
        self.attempts = Attempts()
        models = sys.modules.get("moto.core.models")
        self._moto: Any = getattr(models, "botocore_stubber", None)
        events = client.meta.events
        if self._moto is not None:
            events.unregister("before-send", self._moto)
        events.register("before-parameter-build", self._remember)
        events.register_first("before-send", self._send)

    @classmethod
    def of(cls, client: Any) -> _BotocoreSeam:
        """The client's seam, installed on first use."""
        seam = client.__dict__.get(cls.ATTRIBUTE)
        if seam is None:
            seam = cls(client)
            client.__dict__[cls.ATTRIBUTE] = seam
        return seam  # type: ignore[no-any-return]

    def uninstall(self) -> None:
        """Put the client's own hooks back."""
        events = self.client.meta.events
        events.unregister("before-send", self._send)
        events.unregister("before-parameter-build", self._remember)
        if self._moto is not None:
            events.register("before-send", self._moto)
        self.client.__dict__.pop(self.ATTRIBUTE, None)

    def _remember(self, params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS] = params  # the same dict botocore serializes (its ClientRequestToken included)

    def _send(self, request: Any, event_name: str, **_: Any) -> Any:
        operation = event_name.rsplit(".", 1)[-1]
        params: Mapping[str, Any] = (getattr(request, "context", None) or {}).get(_PARAMS) or {}
        sent: list[tuple[Reply, Any]] = []

        def send() -> Reply:
            response = self._forward(request, event_name)
            reply = Reply(response.status_code, bytes(response.content))
            sent.append((reply, response))
            return reply

        reply = self.attempts.send(operation, params, send)
        for each, response in sent:
            if reply is each:
                return response  # the service's own answer, its headers included
        return _http_response(reply)

    def _forward(self, request: Any, event_name: str) -> Any:
        if self._moto is not None:
            response = self._moto(event_name=event_name, request=request)
            if response is not None:
                return response
        return self.client._endpoint.http_session.send(request)  # what botocore itself calls


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def _http_response(reply: Reply) -> Any:
    from botocore.awsrequest import AWSResponse

    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": str(uuid.uuid4())}
    return AWSResponse("https://retrysafe.invalid/", reply.status, headers, _Raw(reply.body))


def error_reply(status: int, code: str, message: str, extra: Mapping[str, Any] | None = None) -> Reply:
    """An error answer as DynamoDB sends it (``__type`` names the error code; ``extra`` adds modeled fields)."""
    body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message, **(extra or {})}
    return Reply(status, json.dumps(body).encode())


@dataclass(frozen=True)
class Commit:
    """One applied ``TransactWriteItems`` (or completing ``PutItem``): the intent it completed or checkpointed,
    and what it wrote."""

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
        """A commit of the work: business writes, events, or the completed record (which may be all it wrote:
        claim-first work whose only effects were foreign calls). A parked claim is none: nothing of it committed."""
        return bool(self.writes or self.events or self.completes)


@dataclass
class Fault:
    """One armed fault: ``kind`` on the ``nth`` matching attempt of ``operation``, for ``times`` attempts."""

    operation: str
    kind: str
    match: Match | None = None
    nth: int = 1
    times: int = 1
    #: The error answer of an :data:`ERROR` fault: ``(status, code, message, extra fields)``.
    error: tuple[int, str, str, Mapping[str, Any]] | None = None
    seen: int = 0
    fired: int = 0

    def matches(self, operation: str, params: Mapping[str, Any]) -> bool:
        """Whether this fault concerns the call."""
        return self.operation == operation and (self.match is None or self.match(operation, params))


@dataclass
class Boundary:
    """Fault injector and commit ledger on one client: a DynamoDB transport (botocore's client or another one with
    its own :class:`~retrysafe._transport.Attempts`), or botocore's client of another JSON-protocol service (SQS)."""

    client: Any
    commits: list[Commit] = field(default_factory=list)
    #: ``(operation, when)`` of every crash that fired, in order.
    crashes: list[tuple[str, str]] = field(default_factory=list)
    #: ``(operation, kind)`` of every fault that fired (crashes included), in order.
    fired: list[tuple[str, str]] = field(default_factory=list)
    #: Count of successful answers per operation.
    calls: dict[str, int] = field(default_factory=dict)
    #: ``(operation, idempotency record or None)`` of every attempt that went out, in order.
    sent: list[tuple[str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._faults: list[Fault] = []
        self._dead = False
        self._lock = threading.Lock()
        #: The idempotency record the last crash was writing (``None`` when the call held none).
        self.crashed_record: str | None = None
        self._attempts = attempts_of(self.client)
        self._attempts.interceptors.append(self)

    def close(self) -> None:
        """Unplug from the client (the client may be shared by later tests)."""
        if self in self._attempts.interceptors:
            self._attempts.interceptors.remove(self)
        release_if_idle(self.client)

    # -- arming --------------------------------------------------------------
    def arm(self, fault: Fault) -> Fault:
        """Arm ``fault`` (the helpers below build the usual ones)."""
        if fault.nth < 1 or fault.times < 1:
            raise ValueError("nth and times start at 1")
        with self._lock:
            self._faults.append(fault)
        return fault

    def crash(self, operation: str, *, when: str = "after", match: Match | None = None, nth: int = 1) -> None:
        """Crash the ``nth`` matching call of ``operation``, ``before`` it is sent or ``after`` it was answered."""
        if when not in ("before", "after"):
            raise ValueError("when must be 'before' or 'after'")
        self.arm(Fault(operation, CRASH_BEFORE if when == "before" else CRASH_AFTER, match, nth))

    def lose_response(self, operation: str, *, match: Match | None = None, nth: int = 1, times: int = 1) -> None:
        """Apply the ``nth`` matching attempt, then answer the caller with a read timeout; botocore retries.

        ``times``: how many consecutive matching attempts lose their answer
        (:data:`ALWAYS`: every one, until botocore's retries run out and the
        caller gets ``ReadTimeoutError``).
        """
        self.arm(Fault(operation, LOST_RESPONSE, match, nth, times))

    def throttle(self, operation: str, *, code: str = "ThrottlingException", match: Match | None = None,
                 nth: int = 1, times: int = 1) -> None:
        """Answer matching attempts with a throttling error (``ProvisionedThroughputExceededException``...), unapplied."""
        self.fail(operation, 400, code, "Rate of requests exceeds the allowed throughput (simulated)",
                  match=match, nth=nth, times=times)

    def cancel(self, reasons: Sequence[Reason] = ("ThrottlingError",), *, match: Match | None = None,
               nth: int = 1, times: int = 1) -> None:
        """Cancel matching ``TransactWriteItems`` attempts, unapplied, with these ``CancellationReasons`` codes.

        ``reasons[i]`` is the code of action ``i`` (``None`` or missing: ``"None"``), or a
        ``(code, message)`` pair, e.g. ``("ThrottlingError",)``, ``(None, "TransactionConflict")``,
        ``(("ValidationError", "Item size has exceeded the maximum allowed size"),)``.
        """
        self.arm(Fault("TransactWriteItems", ERROR, match, nth, times, error=(400, "TransactionCanceledException", "",
                                                                               {"reasons": tuple(reasons)})))

    def fail(self, operation: str, status: int, code: str, message: str = "", *, extra: Mapping[str, Any] | None = None,
             match: Match | None = None, nth: int = 1, times: int = 1) -> None:
        """Answer matching attempts with any error (``status``, ``code``, ``extra`` modeled fields), unapplied."""
        self.arm(Fault(operation, ERROR, match, nth, times, error=(status, code, message, dict(extra or {}))))

    def crash_after_commit(self) -> None:
        """Lose the answer of the write that completes an idempotency record (it did commit): its
        ``TransactWriteItems``, or the ``PutItem`` of an intent that wrote nothing else."""
        for operation in _COMMIT_OPERATIONS:
            self.crash(operation, when="after", match=completes_record)

    def crash_before_commit(self) -> None:
        """Die after the work ran (foreign calls made) but before the completing write is sent."""
        for operation in _COMMIT_OPERATIONS:
            self.crash(operation, when="before", match=completes_record)

    def revive(self) -> None:
        """A new invocation: calls go through again; faults that did not fire are disarmed."""
        with self._lock:
            self._dead = False
            self._faults.clear()

    @property
    def dead(self) -> bool:
        """True between a crash and :meth:`revive`."""
        return self._dead

    # -- ledger ----------------------------------------------------------------
    def effects(self, record_id: str | None = None) -> list[Commit]:
        """Every commit of the work (for one intent, or all): see :attr:`Commit.is_effect`."""
        return [c for c in self.commits if c.is_effect and (record_id is None or c.record_id == record_id)]

    def reset(self) -> None:
        """Forget commits, fired faults and call counts."""
        with self._lock:
            self.commits.clear()
            self.crashes.clear()
            self.fired.clear()
            self.calls.clear()
            self.sent.clear()

    # -- the transport's hooks ---------------------------------------------------
    def before_attempt(self, operation: str, params: Mapping[str, Any]) -> Reply | None:
        """Die, or answer with an armed error, before the attempt reaches the service."""
        with self._lock:
            if self._dead:
                raise SimulatedCrash(operation, "before (the invocation is already dead)")
            fault = self._due(operation, params, _BEFORE_KINDS)
            if fault is None or fault.kind != CRASH_BEFORE:
                self.sent.append((operation, _record_of(operation, params)))
        if fault is None:
            return None
        if fault.kind == CRASH_BEFORE:
            self._die(operation, "before", params)
        assert fault.error is not None
        status, code, message, extra = fault.error
        if code == "TransactionCanceledException":
            return _cancelled(params, extra["reasons"])
        return error_reply(status, code, message or f"{code} (simulated)", extra)

    def after_attempt(self, operation: str, params: Mapping[str, Any], reply: Reply, applied: bool) -> None:
        """Record what was applied; then die, or lose the answer, when a fault is due."""
        with self._lock:
            if reply.ok:
                self.calls[operation] = self.calls.get(operation, 0) + 1
            if applied and (operation == "TransactWriteItems" or completes_record(operation, params)):
                self.commits.append(describe(_as_transaction(operation, params)))
            fault = self._due(operation, params, _AFTER_KINDS)
        if fault is None:
            return
        if fault.kind == CRASH_AFTER:
            self._die(operation, "after", params)
        from botocore.exceptions import ReadTimeoutError

        raise ReadTimeoutError(endpoint_url=f"{operation} (simulated lost answer)")

    def _due(self, operation: str, params: Mapping[str, Any], kinds: tuple[str, ...]) -> Fault | None:
        due: Fault | None = None
        for fault in list(self._faults):
            if fault.kind not in kinds or not fault.matches(operation, params):
                continue
            fault.seen += 1
            if due is None and fault.seen >= fault.nth:
                due = fault
        if due is not None:
            due.fired += 1
            if due.fired >= due.times:
                self._faults.remove(due)
            self.fired.append((operation, due.kind))
        return due

    def _die(self, operation: str, when: str, params: Mapping[str, Any]) -> None:
        with self._lock:
            self._dead = True
            self.crashes.append((operation, when))
            self.crashed_record = _record_of(operation, params)
        raise SimulatedCrash(operation, when)


def _cancelled(params: Mapping[str, Any], reasons: Sequence[Reason]) -> Reply:
    count = max(len(params.get("TransactItems") or []), len(reasons))
    given = [reasons[i] if i < len(reasons) else None for i in range(count)]
    pairs = [r if isinstance(r, tuple) else (r or "None", f"{r} (simulated)") for r in given]
    codes = [code for code, _ in pairs]
    listed = [{"Code": code, **({"Message": message} if code != "None" else {})} for code, message in pairs]
    message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{', '.join(codes)}]"
    return error_reply(400, "TransactionCanceledException", message, {"CancellationReasons": listed})


def completes_record(operation: str, params: Mapping[str, Any]) -> bool:
    """True for the ``TransactWriteItems`` (or, with nothing else to write, the ``PutItem``) that writes a completed
    idempotency record."""
    return any(_record_put(item) is not None for item in _as_transaction(operation, params).get("TransactItems") or [])


def _as_transaction(operation: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ``PutItem``'s parameters as the one action of a transaction; a ``TransactWriteItems``' as they are."""
    return {"TransactItems": [{"Put": params}]} if operation == "PutItem" else params


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
        pk = str(key.get(PARTITION_KEY, {}).get("S", ""))
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
    if str(fields.get(PARTITION_KEY, {}).get("S", "")).startswith(RECORD_PREFIX) and fields.get("st", {}).get("S") == "completed":
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
    pk = str((params.get("Key") or params.get("Item") or {}).get(PARTITION_KEY, {}).get("S", ""))
    return pk if pk.startswith(RECORD_PREFIX) else None
