"""Demo scenarios: what ``python -m retrysafe_sandbox demo`` drives against the running app, and its report.

The sandbox knows no app: a scenario is the app's own code, a function
``run(sandbox: Sandbox, report: Report) -> None`` that drives the app as a client would (real HTTP
with :func:`post`, the embedded AWS through ``sandbox.client(...)``, executions through
``sandbox.stepfunctions``) and records each check with :meth:`Report.check`. The ``demo`` command
runs the app's scenarios in order (:mod:`.hooks` says where it finds them), then one check of its
own, :func:`check_iam`: no call may have been denied by the template's IAM policies.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from retrysafe import names

if TYPE_CHECKING:
    from .runner import Sandbox


@dataclass
class Reply:
    """One HTTP answer."""

    status: int
    headers: dict[str, str]
    body: Any

    @property
    def replayed(self) -> bool:
        """Whether the answer is a stored response replayed."""
        return self.headers.get(names.REPLAYED_HEADER) == "true"


@dataclass
class Report:
    """What the scenarios saw, and whether every intent had exactly one effect."""

    steps: list[str] = field(default_factory=list)
    effects: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    def check(self, ok: bool, step: str) -> None:
        """Record a step; a failed one is a violation."""
        self.steps.append(("ok    " if ok else "FAILED ") + step)
        if not ok:
            self.violations.append(step)

    def skip(self, step: str) -> None:
        """Record a step that could not run (e.g. its stack was not selected); not a violation."""
        self.steps.append("skip   " + step)


#: A scenario: drives the running app and records its checks in the report.
Scenario = Callable[["Sandbox", Report], None]


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> Reply:
    """POST JSON (or raw bytes) with urllib; HTTP errors are answers too."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw, answer_headers = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, answer_headers = error.code, error.read(), dict(error.headers)
    try:
        return Reply(status, answer_headers, json.loads(raw) if raw else None)
    except ValueError:
        return Reply(status, answer_headers, raw.decode(errors="replace"))


def post_and_drop(url: str, body: Any, headers: dict[str, str]) -> None:
    """Send a request and hang up before reading the response (a lost response)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    connection.request("POST", parts.path, body=json.dumps(body), headers={"Content-Type": "application/json",
                                                                           **headers})
    connection.close()


def check_iam(sandbox: Sandbox, report: Report) -> None:
    """No call may have been denied by IAM, and some must have been evaluated."""
    denied = sandbox.ledger.denied
    report.check(not denied and sandbox.ledger.iam["allowed"] > 0,
                 f"IAM: {sandbox.ledger.iam['allowed']} call(s) allowed by the template's policies, "
                 f"{sum(denied.values())} denied" + "".join(f"\n         denied: {d}" for d in denied))


def run_scenarios(sandbox: Sandbox, scenarios: Iterable[Scenario]) -> Report:
    """Run ``scenarios`` in order against the running sandbox, then :func:`check_iam`; the report."""
    report = Report()
    for scenario in scenarios:
        scenario(sandbox, report)
    check_iam(sandbox, report)
    return report
