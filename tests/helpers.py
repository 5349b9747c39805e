"""Test-only helpers shared by the suite. Lambda events, contexts and clocks come from ``retrysafe.testing``.

- ``TABLE``, ``ORDERS``, :func:`create_idempotency_table`, :func:`create_business_table` -- the tables
- :class:`CallCounter` -- the DynamoDB round trips a client makes (at its transport's attempt seam)
- :func:`outbox_items`, :func:`problem` -- the outbox items of the table, a problem+json answer
- :func:`receive_all`, :func:`stream_event` -- what moto's SQS and DynamoDB Streams return, for Lambda
- :func:`payload`, :class:`Frozen` -- Step Functions task payloads of one state machine, frozen invocations
- :class:`Synthesized` -- a synthesized CDK app's output folder
- :func:`built_once`, :func:`synthesized_once` -- a fixture's folder (a synthesized app) built once per test run,
  shared by pytest-xdist's workers
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from retrysafe.testing._events import task_payload

ROOT = Path(__file__).resolve().parents[1]
TABLE = "idempotency"
ORDERS = "orders"
STATE_MACHINE = "arn:aws:states:eu-west-1:123456789012:stateMachine:OrderSaga"
EXECUTION = "arn:aws:states:eu-west-1:123456789012:execution:OrderSaga:order-1"


def create_idempotency_table(client: Any, name: str = TABLE) -> None:
    """The table layout the constructs deploy (the same helper the drills plugin gives users)."""
    from retrysafe.testing._plugin import create_table

    create_table(client, name)


class CallCounter:
    """Counts the DynamoDB round trips made through a client (any transport): every attempt its transport sends,
    at the attempt seam (:class:`retrysafe._transport.Attempts`), retries included."""

    def __init__(self, client: Any, calls: Counter[str] | None = None) -> None:
        from retrysafe.testing._boundary import attempts_of

        self.calls: Counter[str] = Counter() if calls is None else calls
        attempts_of(client).interceptors.append(self)

    def before_attempt(self, operation: str, params: Any) -> None:
        """Count the attempt (it goes out)."""
        self.calls[operation] += 1

    def after_attempt(self, operation: str, params: Any, reply: Any, applied: bool) -> None:
        """Nothing to note after it."""

    @property
    def total(self) -> int:
        """Calls since the last reset."""
        return sum(self.calls.values())

    def reset(self) -> None:
        """Start counting from zero."""
        self.calls.clear()


def create_business_table(client: Any, name: str) -> None:
    """An on-demand table with the string partition key ``pk`` (the idempotency table: the plugin's ``create_table``)."""
    client.create_table(TableName=name, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")


def outbox_items(client: Any, table: str = TABLE) -> list[dict[str, Any]]:
    """The outbox items of the idempotency table (published or not), as DynamoDB stores them."""
    items: list[dict[str, Any]] = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return [i for i in items if i.get("kind", {}).get("S") == "outbox"]


def problem(response: dict[str, Any]) -> dict[str, Any]:
    """The problem+json document of an HTTP answer, checked for its content type and status."""
    assert response["headers"]["Content-Type"] == "application/problem+json"
    doc: dict[str, Any] = json.loads(response["body"])
    assert doc["status"] == response["statusCode"]
    return doc


def receive_all(sqs: Any, url: str, expected: int | None = None, attempts: int = 10) -> list[dict[str, Any]]:
    """Receive until the queue is drained (or ``expected`` messages were seen), with every attribute."""
    seen: list[dict[str, Any]] = []
    for _ in range(attempts):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"],
                                  MessageAttributeNames=["All"], WaitTimeSeconds=0).get("Messages", [])
        seen.extend(got)
        if not got and (expected is None or len(seen) >= expected):
            break
    return seen


def stream_event(records: list[dict[str, Any]], stream_arn: str) -> dict[str, Any]:
    """The Lambda event for records returned by dynamodbstreams GetRecords."""
    out = []
    for r in records:
        dynamodb = dict(r["dynamodb"])
        created = dynamodb.get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
        out.append({**{k: v for k, v in r.items() if k != "dynamodb"}, "dynamodb": dynamodb,
                    "eventSourceARN": stream_arn})
    return {"Records": out}


def payload(state: str, task_input: Any, *, execution: str = EXECUTION, retry: int = 0,
            **extra: Any) -> dict[str, Any]:
    """The LambdaInvoke payload built from the context object (see retrysafe.stepfunctions), for the saga's machine."""
    return {**task_payload(task_input, execution=execution, state=state, state_machine=STATE_MACHINE, retry=retry),
            **extra}


class Frozen:
    """An invocation stopped mid-flight, like a Lambda that crashed or froze: its claim is never released.

    ``run`` starts the handler in a thread and returns once it reached the
    freeze point; ``resume`` lets the zombie continue and returns what it raised.
    """

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.go = threading.Event()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def point(self) -> None:
        """Called at the freeze point, from inside the handler."""
        self.reached.set()
        assert self.go.wait(30), "the frozen invocation was never resumed"

    def run(self, call: Callable[[], Any]) -> None:
        """Start ``call`` and wait until it freezes."""
        def target() -> None:
            try:
                call()
            except BaseException as error:  # noqa: BLE001 - the zombie's fate is inspected by the test
                self.error = error

        self._thread = threading.Thread(target=target, daemon=True)
        self._thread.start()
        assert self.reached.wait(10), f"the invocation never reached its freeze point ({self.error!r})"

    def resume(self) -> BaseException | None:
        """Let the zombie continue; returns its exception (None when it finished)."""
        self.go.set()
        assert self._thread is not None
        self._thread.join(30)
        return self.error


@dataclass
class Synthesized:
    """One synthesized app: its output folder, templates and cdk-nag report."""

    outdir: Path
    log: str = ""

    def template(self, stack: str) -> dict[str, Any]:
        """A stack's CloudFormation template."""
        result: dict[str, Any] = json.loads((self.outdir / f"{stack}.template.json").read_text())
        return result

    def validation_report(self) -> dict[str, Any]:
        """cdk-nag's validation report (written on every synth with a validation plugin)."""
        report: dict[str, Any] = json.loads((self.outdir / "validation-report.json").read_text())
        return report


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], str]) -> tuple[Path, str]:
    """``build(folder)`` run once per test run, its folder (and the log it returns) shared read-only.

    Without pytest-xdist: into a fresh temporary folder. Under pytest-xdist (``make test``), every worker's
    fixture asks for it: the first one builds into the run's shared temporary folder while holding a file lock,
    the others wait for it and reuse the folder, so the run pays an expensive, deterministic build (a CDK
    synthesis: jsii's start-up, cdk-nag, bundling; the wheels) once instead of once per worker. A failed build
    leaves no result behind: the next worker tries again and fails with its own error. Tests must not write
    into the folder (copy it first, as tests/sandbox/test_demo.py does)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = tmp_path_factory.mktemp(name)
        return folder, build(folder)
    shared = tmp_path_factory.getbasetemp().parent  # one folder per run, the parent of the workers' own
    folder, log, done = shared / name, shared / f"{name}.log", shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if build raises
        if not done.exists():
            if folder.exists():
                shutil.rmtree(folder)  # a failed attempt's leftovers
            folder.mkdir()
            log.write_text(build(folder), encoding="utf-8")
            done.touch()
    return folder, log.read_text(encoding="utf-8")


def synthesized_once(tmp_path_factory: pytest.TempPathFactory, name: str,
                     synthesize: Callable[[Path], str]) -> Synthesized:
    """A session fixture's CDK app, ``synthesize(outdir)`` returning its log, synthesized once per test run and
    shared by pytest-xdist's workers (:func:`built_once`)."""
    return Synthesized(*built_once(tmp_path_factory, name, synthesize))
