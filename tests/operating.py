"""The records the command line's tests and the page "Operating retrysafe" (docs/operating.md) look at.

Each is written with the store call the engine makes for it (a claim, an atomic put, the claim-first
commit), at fixed instants, so the page's output is the same on every run. Every key holds
:data:`SENTINEL`: no command may print it or log it, and no request carries it (the logs checked include
botocore's wire log at DEBUG). Every stored answer holds :data:`PAYLOAD`: no command prints it, and no
log line carries it but botocore's own wire log of the item it reads (DEBUG, which the command line
never turns on).
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from retrysafe import names
from retrysafe._cli import main
from retrysafe._keys import Scope
from retrysafe._record import COMPLETED, PARKED, PENDING, Record
from retrysafe._store import DynamoStore

#: The instant the commands run at (the page's "now").
NOW = datetime(2026, 12, 7, 9, 30, tzinfo=UTC).timestamp()
HOUR = 3600
DAY = 86_400
#: In every key: in no output, no log line, no request.
SENTINEL = "SENTINEL-7f3a9c"
#: In every stored answer: in no output and no log line but botocore's wire log.
PAYLOAD = "PAYLOAD-5b2e41"
#: The loggers that log requests and responses as sent and received (at DEBUG).
WIRE_LOGGERS = ("botocore", "urllib3")
KEY = f"order-{SENTINEL}-0042"
#: The deployed function of the examples (what the constructs set as RETRYSAFE_SUBSCRIBER).
FUNCTION = "orders-api"


@dataclass(frozen=True)
class Example:
    """One record: its scope (with the key) and the options that name it on the command line."""

    scope: Scope

    @property
    def options(self) -> list[str]:
        """``--adapter ... --operation ...`` (the key not among them)."""
        options = ["--adapter", self.scope.adapter, "--subscriber", self.scope.subscriber,
                   "--operation", self.scope.operation]
        return options + (["--tenant", self.scope.tenant] if self.scope.tenant else [])


COMPLETED_ORDER = Example(Scope("acme", "CreateOrder", KEY, adapter=names.HTTP_ADAPTER, subscriber=FUNCTION))
IN_FLIGHT = Example(Scope("", "ChargeCard", f"msg-{SENTINEL}-1", adapter=names.SQS_ADAPTER,
                          subscriber="payments-consumer"))
LAPSED = Example(Scope("", "ChargeCard", f"msg-{SENTINEL}-2", adapter=names.SQS_ADAPTER,
                       subscriber="payments-consumer"))
PARKED_RUN = Example(Scope("", "SendInvoice", f"evt-{SENTINEL}-3", adapter=names.EVENT_ADAPTER,
                           subscriber="invoices"))
EXPIRED = Example(Scope("acme", "CreateOrder", f"order-{SENTINEL}-0007", adapter=names.HTTP_ADAPTER,
                        subscriber=FUNCTION))
#: An answer of some 2 KB of JSON: stored compressed.
ANSWER = {"statusCode": 201, "body": {"order": "o-42", "lines": [{"sku": f"{PAYLOAD}-{n}", "qty": n}
                                                                  for n in range(40)]}}


def seed(store: DynamoStore) -> None:
    """The five records, each written as the engine writes it."""
    created = NOW - 2 * HOUR
    horizon = int(created) + 7 * DAY
    store.put_absent(Record(COMPLETED_ORDER.scope.record_id, COMPLETED, "Cz0hE6mN0gqIoq3I9aTWpVu8m5vE4i0o5ZkbNmDoFOc",
                            horizon, int(created * 1000), "CreateOrder", owner="b7c1e0d2a9f84c3e", result=ANSWER),
                     created)
    claim(store, IN_FLIGHT, owner="5e0f3c1a7d2b4e69", at=NOW - 20, lease=60)
    claim(store, LAPSED, owner="9a4d2f7e1c3b5a80", at=NOW - HOUR, lease=60)
    parked = Record(PARKED_RUN.scope.record_id, PENDING, "q1Ocz7VSGHAjmEQHCcGOg6jbkWb5vHRPXPvuUaSw1Fc",
                    horizon, int(created * 1000), "SendInvoice", owner="0c8e6b2f4a1d3e57",
                    lease_until_ms=int((created + 60) * 1000), instance="0c8e6b2f4a1d3e57")
    store.claim(parked, created)
    store.put_owned(Record(parked.record_id, PARKED, parked.fingerprint, horizon, parked.created_at_ms,
                           "SendInvoice", owner="0c8e6b2f4a1d3e57", instance="0c8e6b2f4a1d3e57"),
                    "0c8e6b2f4a1d3e57")
    old = NOW - 9 * DAY
    store.put_absent(Record(EXPIRED.scope.record_id, COMPLETED, "mQ3Jq0bQ9tT1bZfTn8c0VtOe4rG7Jd5z6G8yA1nW2sE",
                            int(old) + 7 * DAY, int(old * 1000), "CreateOrder", owner="3f9b1d7c5e2a4c68",
                            result={"statusCode": 201, "body": {"order": PAYLOAD}}), old)


def claim(store: DynamoStore, example: Example, *, owner: str, at: float, lease: float) -> Record:
    """A claim-first claim of ``example`` at ``at``, leased for ``lease`` seconds."""
    record = Record(example.scope.record_id, PENDING, "x4pX0Gm3VfR9cKQ2b7ZTq8sJdL1nWfY5hE6uA0oMiPk",
                    int(at) + 7 * DAY, int(at * 1000), example.scope.operation, owner=owner,
                    lease_until_ms=int((at + lease) * 1000), instance=owner)
    return store.claim(record, at).held


class Terminal(io.StringIO):
    """Standard input as a terminal (what a confirmation or a prompt needs), with what the user types."""

    def isatty(self) -> bool:
        return True


@dataclass
class Ran:
    """One run of the command line: its exit status and what it printed."""

    status: int
    out: str
    err: str
    #: Every log line, botocore's wire log included.
    logs: list[str]


class Logged(logging.Handler):
    """Every log record of every logger while installed, at DEBUG: all of them, and all but the wire log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.everything: list[str] = []
        self.not_wire: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        self.everything.append(text)
        if not record.name.startswith(WIRE_LOGGERS):
            self.not_wire.append(text)


@contextmanager
def logs() -> Iterator[Logged]:
    """The log records of every logger (botocore's requests included, at DEBUG) while the block runs."""
    handler = Logged()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def run(*argv: str, stdin: str = "", terminal: bool = False, clock: Callable[[], float] = lambda: NOW) -> Ran:
    """The command line ``argv`` with ``stdin``, at ``clock``; checks that no output or log shows a key or answer."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = Terminal(stdin) if terminal else io.StringIO(stdin)
    sys.stdout, sys.stderr = out, err
    try:
        with logs() as logged:
            status = main(list(argv), clock=clock)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    for text in (out.getvalue(), err.getvalue(), *logged.everything):
        assert SENTINEL not in text
    for text in (out.getvalue(), err.getvalue(), *logged.not_wire):
        assert PAYLOAD not in text
    return Ran(status, out.getvalue(), err.getvalue(), logged.everything)
