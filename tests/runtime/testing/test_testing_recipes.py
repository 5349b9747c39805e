"""Powertools' idempotency testing recipes, carried over: each works for a retrysafe handler in as few lines.

- ``RETRYSAFE_IDEMPOTENCY_DISABLED`` runs the handler without selecting a key or a fingerprint, on
  every adapter (a test may pass ``{}``), while its writes and events still commit;
- ``RETRYSAFE_TABLE`` (and the moto table) may be set after the handler is imported: the store is
  made at the first call, once;
- :func:`retrysafe.testing.use_store` points an already-decorated handler at a test table;
- :meth:`Boundary.effects` counts a completion that wrote nothing but the record.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from moto import mock_aws
from retrysafe import (
    DynamoStore,
    Engine,
    IdempotencyMiddleware,
    Transaction,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_function,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
    idempotent_task,
    names,
)
from retrysafe import _store as store_module
from retrysafe._config import LAMBDA_ENVIRONMENT_MARKERS
from retrysafe.errors import ConfigurationError
from retrysafe.testing import Boundary, engine_of, use_store
from retrysafe.testing._events import (
    DrillContext,
    dynamodb_stream_record,
    http_event,
    kinesis_record,
    rest_event,
    sqs_record,
    task_payload,
)
from retrysafe.webhook import GitHub, WebhookReceiver

from tests.helpers import ORDERS, TABLE, create_idempotency_table, outbox_items

SECRET = b"it's a secret to everybody"


@pytest.fixture
def outside_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test process outside Lambda whose container state (the shared stores) starts empty."""
    monkeypatch.setattr(store_module, "_SHARED", {})
    for name in LAMBDA_ENVIRONMENT_MARKERS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def disabled(outside_lambda: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(names.IDEMPOTENCY_DISABLED_ENV, "true")


def never(*_: Any) -> str:
    raise AssertionError("a key or fingerprint was selected with idempotency disabled")


def records(client: Any) -> list[dict[str, Any]]:
    return [i for i in client.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]


def orders(client: Any) -> int:
    count: int = client.scan(TableName=ORDERS)["Count"]
    return count


# -- RETRYSAFE_IDEMPOTENCY_DISABLED: no key, no fingerprint, writes still commit ---------------------------


def test_disabled_idempotent_runs_an_empty_event(disabled: None, ddb: Any) -> None:
    """Powertools' recipe passes ``{}``: before the fix KeyNotFoundError (``detail.order_id``) was raised."""

    @idempotent(key="detail.order_id")
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, str]:
        txn.put({"pk": f"order#{len(event)}"}, table=ORDERS)
        return {"message": "success"}

    assert handler({}, DrillContext()) == handler({}, DrillContext()) == {"message": "success"}
    assert orders(ddb) == 1 and records(ddb) == []


def test_disabled_idempotent_function_selects_nothing(disabled: None, ddb: Any) -> None:
    runs: list[int] = []

    @idempotent_function(data_keyword_argument="order", key=never, fingerprint=never)
    def charge(order: dict[str, Any]) -> int:
        runs.append(1)
        return len(runs)

    assert (charge(order={}), charge(order={})) == (1, 2)
    assert records(ddb) == []


def test_disabled_http_needs_no_key_header(disabled: None, ddb: Any) -> None:
    """Before the fix a request without ``Idempotency-Key`` answered 400 with the switch on."""

    @idempotent_http(operation="CreateOrder", fingerprint=never)
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": f"order#{txn.derive_key('order')}"}, table=ORDERS)
        return {"statusCode": 201, "body": "{}"}

    answers = [create(http_event({"amount": 5}, key=None), DrillContext()) for _ in range(2)]
    assert [a["statusCode"] for a in answers] == [201, 201]
    assert orders(ddb) == 2 and records(ddb) == []


def test_disabled_middleware_needs_no_key_header(disabled: None, ddb: Any) -> None:
    app = APIGatewayRestResolver()

    @app.post("/orders", middlewares=[IdempotencyMiddleware(operation="CreateOrder", fingerprint=never)])
    def create_order() -> Response[str]:
        return Response(201, "application/json", "{}")

    event = rest_event({"amount": 5}, key=None, resource="/orders", path="/orders")
    assert app.resolve(event, DrillContext())["statusCode"] == 201
    assert records(ddb) == []


def test_disabled_sqs_selects_nothing(disabled: None, ddb: Any) -> None:
    @idempotent_sqs(key=never, fingerprint=never)
    def consume(message: Any, txn: Transaction) -> None:
        txn.put({"pk": f"invoice#{message.record.message_id}"}, table=ORDERS)

    event = {"Records": [sqs_record({"total": 5}, message_id="m-1")]}
    assert consume(event, DrillContext()) == consume(event, DrillContext()) == {"batchItemFailures": []}
    assert orders(ddb) == 1 and records(ddb) == []


def test_disabled_streams_select_nothing(disabled: None, ddb: Any) -> None:
    seen: list[str] = []

    @idempotent_kinesis(key=never, fingerprint=never)
    def on_kinesis(message: Any, txn: Transaction) -> None:
        seen.append(message.key)

    @idempotent_dynamodb_stream(key=never, fingerprint=never)
    def on_change(change: Any, txn: Transaction) -> None:
        seen.append(change.key)

    data = base64.b64encode(b'{"order": 1}').decode()
    kinesis = {"Records": [kinesis_record(data, sequence_number="1")]}
    change = {"Records": [dynamodb_stream_record("INSERT", {"pk": {"S": "o-1"}}, sequence_number="1",
                                                 new_image={"pk": {"S": "o-1"}})]}
    assert on_kinesis(kinesis, DrillContext()) == on_change(change, DrillContext()) == {"batchItemFailures": []}
    assert seen == ["", ""] and records(ddb) == []


def test_disabled_task_needs_no_tenant_and_no_fingerprint(disabled: None, ddb: Any) -> None:
    """An input that has no canonical form (NaN) and a payload without ``stateMachine``: both refused
    before the fix, though neither a key nor a fingerprint is needed with the switch on."""

    @idempotent_task
    def charge(state: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        return {"charged": txn.step("charge", lambda: "ch_1")}

    payload = task_payload(float("nan"), execution="exec-1")
    del payload["stateMachine"]
    assert charge(payload, DrillContext()) == {"charged": "ch_1"}
    assert records(ddb) == []


def github_event(delivery: str, secret: bytes = SECRET) -> dict[str, Any]:
    body = json.dumps({"action": "opened", "number": 7})
    signature = "sha256=" + hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Delivery": delivery, "X-GitHub-Hook-ID": "h-1", "X-GitHub-Event": "pull_request",
               "X-Hub-Signature-256": signature}
    return rest_event(raw_body=body, key=None, tenant=None, resource="/hooks/github", headers=headers)


def test_disabled_webhook_still_checks_signatures_and_commits_each_receipt(disabled: None, ddb: Any) -> None:
    receiver = WebhookReceiver(GitHub(), secrets=lambda: [SECRET])
    assert receiver(github_event("d-1", secret=b"wrong"))["statusCode"] == 401
    assert [receiver(github_event("d-1"))["statusCode"] for _ in range(2)] == [202, 202]
    assert len(outbox_items(ddb)) == 2 and records(ddb) == []


# -- RETRYSAFE_TABLE read at the first call, once ------------------------------------------------------------


def test_the_table_may_be_set_after_the_handler_is_decorated(outside_lambda: None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the fix decorating without RETRYSAFE_TABLE raised ConfigurationError."""
    monkeypatch.delenv(names.TABLE_ENV)

    @idempotent(key="id")
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> str:
        return "done"

    made: list[str] = []
    from_env = DynamoStore.from_env.__func__  # type: ignore[attr-defined]

    def counted(cls: type[DynamoStore]) -> DynamoStore:
        made.append("store")
        store: DynamoStore = from_env(cls)
        return store

    monkeypatch.setattr(DynamoStore, "from_env", classmethod(counted))
    monkeypatch.setenv(names.TABLE_ENV, "late-table")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_idempotency_table(client, "late-table")
        assert [handler({"id": f"e-{n}"}, DrillContext()) for n in range(3)] == ["done"] * 3
        assert client.scan(TableName="late-table")["Count"] == 3
    assert made == ["store"]  # made at the first call, never again


@pytest.mark.parametrize("marker", [*LAMBDA_ENVIRONMENT_MARKERS, "AWS_LAMBDA_INITIALIZATION_TYPE"])
def test_inside_lambda_the_table_is_still_read_at_decoration(outside_lambda: None, monkeypatch: pytest.MonkeyPatch,
                                                             marker: str) -> None:
    """In Lambda the environment is the deployment's: a missing table fails the cold start, not a request,
    and the store's client is made in the init phase (before a SnapStart snapshot)."""
    monkeypatch.setenv(marker, "on-demand")
    monkeypatch.delenv(names.TABLE_ENV)
    with pytest.raises(ConfigurationError, match=names.TABLE_ENV):
        idempotent(key="id")(lambda event, context, txn: None)


# -- use_store: an already-decorated handler on a test table -------------------------------------------------


def test_use_store_points_a_decorated_handler_at_a_test_table(outside_lambda: None, ddb: Any) -> None:
    @idempotent_http(operation="CreateOrder")
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": "order#1"}, table=ORDERS)
        return {"statusCode": 201, "body": "{}"}

    create_idempotency_table(ddb, "test-table")
    test_store = DynamoStore("test-table", client=ddb)
    with use_store(create, test_store) as engine:
        assert engine_of(create) is engine and engine.store is test_store
        first = create(http_event({"amount": 5}), DrillContext())
        replay = create(http_event({"amount": 5}), DrillContext())
    assert (first["statusCode"], replay["headers"][names.REPLAYED_HEADER]) == (201, "true")
    assert len(records(ddb)) == 0 and ddb.scan(TableName="test-table")["Count"] == 1
    assert engine_of(create).store.table_name == TABLE  # the handler's own store is back
    create(http_event({"amount": 5}), DrillContext())
    assert len(records(ddb)) == 1


def test_use_store_takes_an_engine_and_restores_one_already_made(outside_lambda: None, ddb: Any) -> None:
    @idempotent_sqs
    def consume(message: Any, txn: Transaction) -> None:
        return None

    own = engine_of(consume)
    replacement = Engine(DynamoStore(TABLE, client=ddb), cache=None)
    with use_store(consume, replacement) as engine:
        assert engine is replacement and engine_of(consume) is replacement
    assert engine_of(consume) is own


def test_use_store_refuses_what_is_not_a_handler() -> None:
    with pytest.raises(TypeError, match="not a retrysafe handler"), use_store(len, DynamoStore("t")):
        pass


# -- Boundary: every commit of the work -----------------------------------------------------------------------


def test_boundary_counts_a_record_only_completion(outside_lambda: None, ddb: Any) -> None:
    """Claim-first work whose only effect is a foreign call commits the record alone: before the fix
    ``effects()`` was empty, so a drill could not tell it ran once."""

    @idempotent_function(data_keyword_argument="order", key="id")
    def notify(order: dict[str, Any]) -> str:  # no txn: claim first
        return "sent"

    boundary = Boundary(engine_of(notify).store.client)
    try:
        assert notify(order={"id": "o-1"}) == notify(order={"id": "o-1"}) == "sent"
        effects = boundary.effects()
    finally:
        boundary.close()
    assert len(effects) == 1 and effects[0].completes and not effects[0].writes
