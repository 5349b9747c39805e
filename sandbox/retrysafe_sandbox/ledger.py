"""The sandbox's ledger: what happened, counted where it happened.

Requests and authorizer decisions are counted by the HTTP front, messages, stream records and
rule events (EventBridge deliveries to functions) by the pollers, IAM decisions (and every denied action with its resource) by the guard, and
everything inside a function (API round trips per service and operation, retrysafe's
engine outcomes, events published as ``Published``) by its execution environment's botocore hooks.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from .functions import FunctionSpec, Invocation


class Ledger:
    """Thread-safe counters; :meth:`render` prints them compactly."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.invocations: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.messages: Counter[str] = Counter()
        self.records: Counter[str] = Counter()
        self.events: Counter[str] = Counter()
        self.sandbox_calls: Counter[str] = Counter()
        self.iam: Counter[str] = Counter()
        self.denied: Counter[str] = Counter()
        self.authorizers: Counter[str] = Counter()
        self.executions: Counter[str] = Counter()

    def add(self, counter: str, name: str, amount: int = 1) -> None:
        """Add to one counter (``requests``, ``messages``, ``records``, ``events``...)."""
        with self._lock:
            getattr(self, counter)[name] += amount

    def invoked(self, spec: FunctionSpec, invocation: Invocation) -> None:
        """Record one invocation and what its environment counted."""
        with self._lock:
            self.invocations[spec.logical_id] += 1
            if invocation.error is not None:
                self.errors[f"{spec.logical_id}: {invocation.error['errorType']}"] += 1
            self.calls.update(invocation.calls)
            self.outcomes.update(invocation.outcomes)

    @property
    def dynamodb_round_trips(self) -> int:
        """DynamoDB API calls made by the functions."""
        return sum(n for name, n in self.calls.items() if name.startswith("dynamodb:"))

    def render(self, effects: dict[str, Any] | None = None) -> str:
        """The ledger as aligned text lines."""
        def row(label: str, counter: Counter[str] | dict[str, Any]) -> str:
            items = ", ".join(f"{k} {v}" for k, v in sorted(counter.items()))
            return f"  {label:<22}{items or '-'}"

        with self._lock:
            dynamodb = ", ".join(f"{name.split(':')[1]} {n}" for name, n in sorted(self.calls.items())
                                 if name.startswith("dynamodb:"))
            lines = ["ledger",
                     row("requests", self.requests),
                     row("invocations", self.invocations),
                     row("function errors", self.errors),
                     row("engine outcomes", self.outcomes),
                     row("messages", self.messages),
                     row("stream records", self.records),
                     row("rule events", self.events),
                     row("authorizers", self.authorizers),
                     row("executions", self.executions),
                     row("IAM-evaluated calls", self.iam),
                     *(f"  {'IAM DENIED' if i == 0 else '':<22}{what} x{n}"
                       for i, (what, n) in enumerate(sorted(self.denied.items()))),
                     row("sandbox's own calls", Counter(k.split(":")[0] for k in self.sandbox_calls.elements())),
                     f"  {'dynamodb round trips':<22}{self.dynamodb_round_trips} ({dynamodb})"]
        if effects is not None:
            lines.append(row("business effects", effects))
        return "\n".join(lines)
