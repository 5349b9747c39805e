"""A deterministic scheduler: Lambda invocations that interleave only at DynamoDB call boundaries.

Each invocation runs the real handler, engine and store in its own thread, on
its own DynamoDB client (its own "process": a crash kills only it). A
:class:`Gate` on every client parks the calling thread before each attempt is
sent; the scheduler then lets exactly one parked invocation go, with the fault
it chose for that attempt, and waits until that invocation parks again or
ends. Only one invocation runs at a time, so a sequence of choices replays
exactly. Faults are armed on the invocation's :class:`~retrysafe.testing.Boundary`
(crash before/after, lost response once or until botocore's retries run out,
throttling, cancellation reasons); requests reach moto through
:class:`~retrysafe.testing.DynamoSemantics`.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.config import Config
from retrysafe import RecordCache
from retrysafe._transport import Reply
from retrysafe.testing import ALWAYS, Boundary, DynamoSemantics, SimulatedCrash, instant_retries
from retrysafe.testing._adapters import Answer
from retrysafe.testing._boundary import CRASH_AFTER, CRASH_BEFORE, ERROR, LOST_RESPONSE, Fault, attempts_of

#: The engine's own client configuration (see ``DynamoStore.client``).
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2, read_timeout=10)
#: Seconds the scheduler waits for an invocation to park or end before declaring the run stuck.
STUCK_SECONDS = 60.0

#: Fault kinds the exploration places at a call.
LOST_ONCE = "lost once"
LOST_ALL = "lost until retries run out"
CANCEL_THROTTLED = "cancelled: ThrottlingError"
CANCEL_CONFLICT = "cancelled: TransactionConflict"
THROTTLED = "throttled"
FAULTS = (CRASH_BEFORE, CRASH_AFTER, LOST_ONCE, LOST_ALL, CANCEL_THROTTLED, CANCEL_CONFLICT, THROTTLED)

#: The invocation (and its run) the current code belongs to. A context variable, not a thread-local: an
#: async ``@idempotent_function`` runs the engine in a worker thread, in a copy of its caller's context.
_current: contextvars.ContextVar[tuple[Invocation, Run] | None] = contextvars.ContextVar("invocation", default=None)


class Stuck(RuntimeError):
    """An invocation neither parked nor ended in time (a deadlock in the run, never expected)."""


def call_label(operation: str, params: Mapping[str, Any]) -> str:
    """A short name of an engine call: claim, checkpoint, commit, release, mark..."""
    if operation == "TransactWriteItems":
        items = params.get("TransactItems") or []
        first = next(iter(items[0].values())) if items else {}
        if "Item" in first and first["Item"].get("st", {}).get("S") == "completed":
            return "commit"
        if "UpdateExpression" in first and "#cp" in first["UpdateExpression"]:
            return "checkpoint"
        return "transaction"
    if operation == "UpdateItem":
        expression = str(params.get("UpdateExpression", ""))
        if expression.startswith("SET #ow = :ow, #le = :le"):
            return "takeover"
        if expression == "SET #le = :ended":
            return "release (lease ended)"
        if "#obq" in expression:
            return "mark published"
        return "update"
    if operation == "PutItem":  # a claim, or atomic mode's commit of a record without business writes
        return "commit" if params.get("Item", {}).get("st", {}).get("S") == "completed" else "claim"
    if operation == "DeleteItem":
        return "release"
    if operation == "GetItem":
        return "get"
    return operation


def faults_for(operation: str, kinds: tuple[str, ...]) -> list[str]:
    """The fault kinds that make sense for one call."""
    allowed = [k for k in kinds if k in (CRASH_BEFORE, CRASH_AFTER, LOST_ONCE, LOST_ALL)]
    if operation == "TransactWriteItems":
        allowed += [k for k in kinds if k in (CANCEL_THROTTLED, CANCEL_CONFLICT)]
    if THROTTLED in kinds:
        allowed.append(THROTTLED)
    return allowed


class Slot:
    """A reusable DynamoDB client (an invocation's "process"): boundary and gate plugged in.

    ``regions``: the process also has a client in each of these regions (a table with replicas), on
    the same gate, each with its own boundary; ``clients`` maps every region to its client.
    ``transport``: makes the client of a region (botocore's with the engine's configuration by default).
    """

    def __init__(self, semantics: DynamoSemantics, regions: tuple[str, ...] = (),
                 transport: Callable[[str], Any] | None = None) -> None:
        self._transport = transport
        self.gate = Gate()
        self.client, self.boundary = self._plug("eu-west-1")
        semantics.install(self.client)
        self.clients = {"eu-west-1": self.client}
        self.boundaries = [self.boundary]
        for region in regions:
            self.clients[region], boundary = self._plug(region)
            self.boundaries.append(boundary)
        #: The process's warm-container record cache (as the store from the environment keeps one).
        self.cache = RecordCache()

    def _plug(self, region: str) -> tuple[Any, Boundary]:
        import boto3

        if self._transport is not None:
            client = self._transport(region)
        else:
            client = boto3.client("dynamodb", region_name=region, config=CLIENT_CONFIG)
        instant_retries(client)
        attempts_of(client).interceptors.append(self.gate)
        return client, Boundary(client)  # after the gate: a fault armed at the gate fires at once

    @property
    def dead(self) -> bool:
        """The process crashed (on any of its clients)."""
        return any(boundary.dead for boundary in self.boundaries)


@dataclass
class Invocation:
    """One Lambda invocation in a run."""

    name: str
    intent: str
    slot: Slot
    call: Callable[[], Answer]
    state: str = "new"  # new, parked, running, done
    parked_at: tuple[str, Mapping[str, Any]] | None = None
    answer: Answer | None = None
    crashed: str | None = None
    error: BaseException | None = None
    faults: int = 0
    #: The owner token of this invocation's claim (fencing token), once it sent one.
    owner: str | None = None
    calls: int = 0
    last_params: Mapping[str, Any] | None = None
    lost_all: Mapping[str, Any] | None = None
    thread: threading.Thread | None = None
    go: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    @property
    def finished(self) -> bool:
        """Answered or died."""
        return self.state == "done"


class Gate:
    """Parks an invocation's thread before each attempt it sends, until the scheduler lets it go.

    It also notes every checkpoint transaction DynamoDB applied: ``(record, owner, checkpoint names)``.
    """

    def __init__(self) -> None:
        self.checkpoints: list[tuple[str, str, frozenset[str]]] = []
        #: ``owner token -> (fingerprint, exp)`` of every claim sent through this client.
        self.claims: dict[str, tuple[str, int]] = {}

    def clear(self) -> None:
        """Forget what was noted (a new schedule)."""
        self.checkpoints.clear()
        self.claims.clear()

    def before_attempt(self, operation: str, params: Mapping[str, Any]) -> Reply | None:
        """Park (the scheduler arms the chosen fault meanwhile)."""
        if operation == "PutItem" and call_label(operation, params) == "claim":
            item = params["Item"]
            self.claims[str(item["ow"]["S"])] = (str(item["fp"]["S"]), int(item["exp"]["N"]))
        current = _current.get()
        if current is None or current[0].slot.dead:
            return None  # the scheduler's own calls, and a dead invocation's last gasp, are not scheduled
        invocation, run = current
        run.park(invocation, (operation, params))
        return None

    def after_attempt(self, operation: str, params: Mapping[str, Any], reply: Reply, applied: bool) -> None:
        """Note an applied checkpoint (the boundary behind the gate acts after the call)."""
        if applied and operation == "TransactWriteItems" and call_label(operation, params) == "checkpoint":
            update = params["TransactItems"][0]["Update"]
            values = update["ExpressionAttributeValues"]
            self.checkpoints.append((str(update["Key"]["pk"]["S"]), str(values[":ow"]["S"]),
                                     frozenset(values[":cp"]["M"])))


class Run:
    """One schedule: invocations started, then advanced one call at a time by :meth:`step`."""

    def __init__(self) -> None:
        self._yielded = threading.Semaphore(0)
        self.invocations: list[Invocation] = []

    def add(self, invocation: Invocation) -> None:
        """Register an invocation; it starts when first scheduled."""
        for boundary in invocation.slot.boundaries:
            boundary.revive()
            boundary.reset()
        invocation.state = "parked"
        invocation.parked_at = ("start", {})
        self.invocations.append(invocation)

    def parked(self) -> list[Invocation]:
        """Invocations waiting for their turn."""
        return [i for i in self.invocations if i.state == "parked"]

    # -- the invocation threads' side ---------------------------------------------
    def park(self, invocation: Invocation, where: tuple[str, Mapping[str, Any]]) -> None:
        """Called from ``invocation``'s thread: wait for the turn."""
        invocation.parked_at = where
        invocation.state = "parked"
        self._yielded.release()
        invocation.go.acquire()
        invocation.state = "running"

    def _body(self, invocation: Invocation) -> None:
        _current.set((invocation, self))
        invocation.go.acquire()
        invocation.state = "running"
        try:
            invocation.answer = invocation.call()
        except SimulatedCrash as crash:
            invocation.crashed = str(crash)
        except BaseException as error:  # noqa: BLE001 - an unhandled exception is reported as a violation
            invocation.error = error
        finally:
            invocation.state = "done"
            invocation.parked_at = None
            self._yielded.release()

    # -- the scheduler's side --------------------------------------------------------
    def step(self, invocation: Invocation, fault: str | None) -> None:
        """Let ``invocation`` make its parked call (with ``fault``) and run to its next call or its end."""
        assert invocation.state == "parked" and invocation.parked_at is not None
        operation, params = invocation.parked_at
        if operation == "start":
            invocation.thread = threading.Thread(target=self._body, args=(invocation,), daemon=True)
            invocation.state = "running"
            invocation.thread.start()
        else:
            invocation.calls += 1
            label = call_label(operation, params)
            if label == "claim":
                invocation.owner = str(params["Item"]["ow"]["S"])
            elif label == "takeover":
                invocation.owner = str(params["ExpressionAttributeValues"][":ow"]["S"])
            if fault is not None:
                invocation.faults += 1
                self._arm(invocation, operation, params, fault)
            invocation.last_params = params
            invocation.state = "running"
        invocation.go.release()
        if not self._yielded.acquire(timeout=STUCK_SECONDS):
            raise Stuck(f"{invocation.name} neither reached a DynamoDB call nor ended")

    def _arm(self, invocation: Invocation, operation: str, params: Mapping[str, Any], fault: str) -> None:
        boundary = invocation.slot.boundary

        def this_call(op: str, p: Mapping[str, Any]) -> bool:
            return p is params

        if fault in (CRASH_BEFORE, CRASH_AFTER):
            boundary.arm(Fault(operation, fault, this_call))
        elif fault == LOST_ONCE:
            boundary.arm(Fault(operation, LOST_RESPONSE, this_call))
        elif fault == LOST_ALL:
            invocation.lost_all = params
            boundary.arm(Fault(operation, LOST_RESPONSE, this_call, times=ALWAYS))
        elif fault == CANCEL_THROTTLED:
            boundary.cancel(("ThrottlingError",), match=this_call)
        elif fault == CANCEL_CONFLICT:
            boundary.cancel(("TransactionConflict",), match=this_call)
        elif fault == THROTTLED:
            boundary.arm(Fault(operation, ERROR, this_call, error=(400, "ThrottlingException", "", {})))
        else:
            raise ValueError(f"unknown fault {fault!r}")

    def close(self) -> None:
        """Let every still-parked invocation die (a run cut short) and wait for the threads."""
        for invocation in self.invocations:
            if invocation.state == "parked" and invocation.thread is not None:
                for boundary in invocation.slot.boundaries:  # whichever region's client it is parked on
                    boundary.arm(Fault(invocation.parked_at[0] if invocation.parked_at else "", CRASH_BEFORE))
                invocation.go.release()
                self._yielded.acquire(timeout=STUCK_SECONDS)
        for invocation in self.invocations:
            if invocation.thread is not None:
                invocation.thread.join(STUCK_SECONDS)
