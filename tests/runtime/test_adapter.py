"""The wiring the four adapters share: engine and retention, telemetry flushing, option-taking decorators."""

from __future__ import annotations

import hashlib
import hmac
import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from retrysafe import DynamoStore, Engine, idempotent_http, idempotent_sqs, idempotent_task, names
from retrysafe._observability import telemetry
from retrysafe.errors import ConfigurationError
from retrysafe.http._core import HttpAnswer, StoredResponse, to_proxy
from retrysafe.stepfunctions import state_machine_tenant
from retrysafe.testing._events import DrillContext, api_event, sqs_record, task_payload
from retrysafe.webhook import GenericHmac, WebhookReceiver

from tests.helpers import TABLE, CallCounter

SECRET = b"adapter-secret"


def signed_delivery(body: str = '{"id": "evt-1"}') -> dict[str, Any]:
    signature = "sha256=" + hmac.new(SECRET, body.encode(), hashlib.sha256).hexdigest()
    return api_event(body, headers={"X-Signature": signature}, tenant=None, route="/hooks/partner")


def adapters(store: DynamoStore) -> dict[str, tuple[Callable[[Any, Any], Any], Any]]:
    """Each adapter's Lambda entry point on ``store``, and an event it accepts."""
    http = idempotent_http(lambda event, context, txn: {"statusCode": 201, "body": "{}"}, store=store)
    sqs = idempotent_sqs(lambda message, txn: None, subscriber="billing", store=store)
    task = idempotent_task(lambda task_input, context, txn: {"done": True}, tenant="saga", store=store)
    webhook = WebhookReceiver(GenericHmac(), secrets=lambda: [SECRET],
                              store=store, claim_check=None)
    return {
        "http": (http, api_event("{}", headers={names.IDEMPOTENCY_KEY_HEADER: "k-1"})),
        "sqs": (sqs, {"Records": [sqs_record({"event_id": "e-1"})]}),
        "task": (task, task_payload({"n": 1}, execution="exec-1")),
        "webhook": (webhook, signed_delivery()),
    }


@pytest.fixture
def flushes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per telemetry flush."""
    counted: list[int] = []
    flush = telemetry.flush
    monkeypatch.setattr(telemetry, "flush", lambda: (counted.append(1), flush())[1])
    return counted


@pytest.mark.parametrize("path", ["http", "sqs", "task", "webhook"])
def test_every_adapter_flushes_telemetry_once_per_invocation(path: str, store: DynamoStore,
                                                             flushes: list[int]) -> None:
    entry, event = adapters(store)[path]
    entry(event, DrillContext())
    assert len(flushes) == 1
    entry(event, DrillContext())  # the replay
    assert len(flushes) == 2


@pytest.mark.parametrize("path", ["http", "task", "webhook"])
def test_an_adapter_flushes_telemetry_when_a_misconfiguration_propagates(path: str, ddb: Any,
                                                                         flushes: list[int]) -> None:
    missing = DynamoStore("no-such-table", client=boto3.client("dynamodb", region_name="eu-west-1"))
    entry, event = adapters(missing)[path]
    with pytest.raises(ConfigurationError):
        entry(event, DrillContext())
    assert len(flushes) == 1


def test_the_webhook_answers_with_the_http_answer_builder(store: DynamoStore, calls: CallCounter) -> None:
    entry, event = adapters(store)["webhook"]
    first = entry(event, DrillContext())
    assert calls.total == 1
    calls.reset()
    replay = entry(event, DrillContext())
    assert calls.total == 1
    stored = StoredResponse(202, {"Content-Type": "application/json"}, first["body"])
    assert first == to_proxy(HttpAnswer(stored))
    assert replay == to_proxy(HttpAnswer(stored, replayed=True))
    assert replay["headers"][names.REPLAYED_HEADER] == "true"
    assert json.loads(first["body"])["status"] == "accepted"


def test_a_refused_delivery_is_a_problem_answer_in_the_same_shape(store: DynamoStore) -> None:
    entry, _ = adapters(store)["webhook"]
    answer = entry(api_event("{}", headers={"X-Signature": "sha256=00"}, tenant=None), DrillContext())
    assert answer["statusCode"] == 401
    assert answer["headers"]["Content-Type"] == "application/problem+json"
    assert set(answer) == {"statusCode", "headers", "body", "isBase64Encoded"}


def test_engine_wins_over_store_and_the_environment_is_the_default(store: DynamoStore) -> None:
    engine = Engine(store)
    other = DynamoStore("other", client=store.client)
    assert idempotent_task(lambda i, c, t: None, engine=engine, store=other).task.engine is engine
    assert idempotent_task(lambda i, c, t: None, store=other).task.engine.store is other
    from_env = idempotent_sqs(lambda m, t: None, subscriber="s").consumer
    assert from_env.engine.store.table_name == TABLE
    assert from_env.retention.horizon_seconds == 7 * 24 * 3600
    assert idempotent_http(lambda e, c, t: None, horizon_seconds=86_400,
                           store=store).idempotency.retention.horizon_seconds == 86_400


def test_decorators_work_bare_and_with_options(store: DynamoStore) -> None:
    def reserve(task_input: Any, context: Any, txn: Any) -> Any:
        """Reserve stock."""
        return task_input

    bare = idempotent_task(reserve)
    configured = idempotent_task(tenant="t", store=store)(reserve)
    assert bare.__name__ == configured.__name__ == "reserve"
    assert bare.__doc__ == configured.__doc__ == "Reserve stock."
    assert bare.__wrapped__ is reserve  # type: ignore[attr-defined]
    assert configured.task.tenant == "t" and bare.task.tenant is state_machine_tenant


@pytest.mark.parametrize(("decorator", "configuration"), [
    ("retrysafe.http._decorator.idempotent_http", "retrysafe.http._core.HttpIdempotency"),
    ("retrysafe.http._decorator.idempotent_http", "retrysafe.http._middleware.IdempotencyMiddleware"),
    ("retrysafe.sqs.idempotent_sqs", "retrysafe.sqs.SqsConsumer"),
    ("retrysafe.stepfunctions.idempotent_task", "retrysafe.stepfunctions.TaskIdempotency"),
])
def test_a_decorator_and_the_classes_it_builds_take_the_same_options(decorator: str, configuration: str) -> None:
    """The options are spelled out on the decorator (documented there) and on what it configures: one list."""
    def options(path: str) -> list[tuple[str, Any, Any]]:
        module, name = path.rsplit(".", 1)
        target = getattr(importlib.import_module(module), name)
        parameters = inspect.signature(target).parameters.values()
        return [(p.name, p.default, p.annotation) for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]

    assert options(decorator) == options(configuration)
    assert options(decorator), "no keyword-only options"
