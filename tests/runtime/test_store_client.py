"""The store's own client: created in Lambda's init phase, without botocore's parameter validation.

Every request shape the store, the engine and the helpers on its client send is validated here.

Each scenario runs against moto with the store's own client (validation off, as deployed). A
``before-parameter-build`` hook captures every request's parameters, and each one is then checked
against botocore's service model with botocore's own validator: a request the store builds wrongly
fails here instead of in production.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest
from botocore.validate import ParamValidator
from retrysafe import DynamoStore, Engine, Mode, idempotent_http, names, put_if_newer, update_if_newer
from retrysafe.outbox import OutboxMessage
from retrysafe.outbox._targets import SqsTarget
from retrysafe.outbox.parked import list_parked
from retrysafe.outbox.publisher import Publisher
from retrysafe.outbox.sweeper import sweep
from retrysafe.testing._events import DrillContext, api_event

from tests.helpers import ORDERS, TABLE


class Captured:
    """Every (operation model, parameters) the client was asked to send."""

    def __init__(self, client: Any) -> None:
        self.requests: list[tuple[Any, dict[str, Any]]] = []
        client.meta.events.register("before-parameter-build.dynamodb", self._capture)

    def _capture(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.requests.append((model, copy.deepcopy(params)))

    def problems(self) -> list[str]:
        """botocore's validation report of every captured request that does not match the service model."""
        validator = ParamValidator()
        found = []
        for model, params in self.requests:
            report = validator.validate(params, model.input_shape)
            if report.has_errors():
                found.append(f"{model.name}: {report.generate_report()}")
        return found


@pytest.fixture
def own(ddb: Any) -> tuple[DynamoStore, Captured]:
    store = DynamoStore(TABLE)  # its own client, created as in Lambda
    return store, Captured(store.client)


def test_the_store_client_skips_client_side_validation(own: tuple[DynamoStore, Captured]) -> None:
    """A mistyped parameter reaches the service instead of failing in botocore; a client you pass keeps validating."""
    import boto3
    from botocore.exceptions import ClientError, ParamValidationError

    store, _ = own
    request = {"TableName": TABLE, "Key": {"pk": {"S": "x"}}, "ConsistentRead": "yes"}  # a string, not a boolean
    try:
        store.client.get_item(**request)
    except ParamValidationError:
        pytest.fail("the store's own client validated parameters client-side")
    except ClientError:
        pass  # whatever the service answers
    with pytest.raises(ParamValidationError):
        DynamoStore(TABLE, client=boto3.client("dynamodb")).client.get_item(**request)


def _shapes_ok(captured: Captured, operations: set[str]) -> None:
    assert {model.name for model, _ in captured.requests} >= operations
    assert captured.problems() == []


def test_http_paths_send_valid_requests(own: tuple[DynamoStore, Captured]) -> None:
    store, captured = own
    engine = Engine(store)

    def body(event: Any, context: Any, txn: Any) -> dict[str, Any]:
        txn.put({"pk": "order#1", "n": 1, "f": 1.5, "d": Decimal("2.25"), "b": b"\x00\x01", "ok": True, "none": None,
                 "tags": {"a", "b"}, "lines": [{"sku": "x", "qty": 2}], "meta": {"k": "v"}}, table=ORDERS,
                condition="attribute_not_exists(pk)")
        txn.update({"pk": "order#2"}, "SET #s = :s", table=ORDERS, names={"#s": "status"}, values={":s": "new"})
        txn.delete({"pk": "order#3"}, table=ORDERS)
        txn.condition_check({"pk": "order#4"}, "attribute_exists(pk)", table=ORDERS)
        txn.append_event("OrderPlaced", {"id": "1", "amount": 1.5}, aggregate_type="Order", aggregate_id="1", sequence=1)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": json.dumps({"x": "y" * 600})}

    for pk in ("order#2", "order#4"):
        store.client.put_item(TableName=ORDERS, Item={"pk": {"S": pk}})
    for mode in (Mode.ATOMIC, Mode.CLAIM_FIRST):
        handler = idempotent_http(body, operation=f"Shapes{mode.value}", mode=mode, engine=engine)
        event = api_event(json.dumps({"a": 1}), headers={names.IDEMPOTENCY_KEY_HEADER: f"k-{mode.value}"})
        assert handler(event, DrillContext())["statusCode"] == 201
        assert handler(event, DrillContext())["headers"][names.REPLAYED_HEADER] == "true"
        mismatch = api_event(json.dumps({"a": 2}), headers={names.IDEMPOTENCY_KEY_HEADER: f"k-{mode.value}"})
        assert handler(mismatch, DrillContext())["statusCode"] == 422
        store.client.delete_item(TableName=ORDERS, Key={"pk": {"S": "order#1"}})

    def quote(event: Any, context: Any, txn: Any) -> dict[str, Any]:
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": json.dumps({"x": "y" * 600})}

    # Atomic mode with nothing but the record: the completed record in a conditional PutItem.
    handler = idempotent_http(quote, operation="ShapesRecordOnly", engine=engine)
    event = api_event(json.dumps({"a": 1}), headers={names.IDEMPOTENCY_KEY_HEADER: "k-record-only"})
    assert handler(event, DrillContext())["statusCode"] == 201
    assert any(model.name == "PutItem" and params["Item"].get("st", {}).get("S") == "completed"
               for model, params in captured.requests)
    _shapes_ok(captured, {"TransactWriteItems", "PutItem"})  # the claim is a conditional PutItem


def test_claim_release_checkpoint_wait_and_verify_send_valid_requests(own: tuple[DynamoStore, Captured]) -> None:
    store, captured = own
    engine = Engine(store)
    calls = {"n": 0}

    def failing(event: Any, context: Any, txn: Any) -> dict[str, Any]:
        txn.step("charge", lambda: {"charge": "ch_1"})
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("provider timeout after the checkpoint")
        return {"statusCode": 201, "body": "{}"}

    handler = idempotent_http(failing, operation="Steps", mode=Mode.CLAIM_FIRST, engine=engine)
    event = api_event("{}", headers={names.IDEMPOTENCY_KEY_HEADER: "steps"})
    with pytest.raises(RuntimeError):
        handler(event, DrillContext())  # claim, checkpoint, release keeping the checkpoint
    assert handler(event, DrillContext())["statusCode"] == 201  # takeover, commit

    def plain(event: Any, context: Any, txn: Any) -> dict[str, Any]:
        raise RuntimeError("before any checkpoint")

    with pytest.raises(RuntimeError):  # claim, then release by delete
        idempotent_http(plain, operation="Plain", mode=Mode.CLAIM_FIRST, engine=engine)(
            api_event("{}", headers={names.IDEMPOTENCY_KEY_HEADER: "plain"}), DrillContext())
    assert store.get("idem#missing") is None
    store.verify()
    _shapes_ok(captured, {"UpdateItem", "TransactWriteItems", "DeleteItem", "GetItem", "DescribeTable"})


def test_outbox_and_ordering_calls_on_the_store_client_are_valid(own: tuple[DynamoStore, Captured]) -> None:
    store, captured = own
    assert put_if_newer({"pk": "acct#1", "version": 3, "balance": Decimal("1.5")}, table=ORDERS, client=store.client)
    assert update_if_newer({"pk": "acct#1"}, {"balance": 2}, version=4, table=ORDERS, client=store.client)
    assert not put_if_newer({"pk": "acct#1", "version": 2}, table=ORDERS, client=store.client)

    class Accepting(SqsTarget):
        def __init__(self) -> None:
            pass

        def send(self, messages: Any) -> set[str]:
            return set()

    publisher = Publisher(Accepting(), store)
    publisher.mark_published("00000000-0000-5000-8000-000000000000")
    message = OutboxMessage(event_id="00000000-0000-5000-8000-000000000001", event_type="OrderPlaced",
                            aggregate_type="Order", aggregate_id="1", payload={"id": "1"},
                            occurred_at="2026-01-01T00:00:00.000+00:00", sequence=1)
    publisher.park(message, "refused by the target")
    assert list(list_parked(store)) == []
    sweep(publisher, 0)
    _shapes_ok(captured, {"PutItem", "UpdateItem", "Query"})


def test_the_command_lines_calls_are_valid(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """inspect's GetItem, reset's conditional DeleteItem (with and without owner and lease), list's filtered Scans."""
    from retrysafe import _cli

    from tests.operating import COMPLETED_ORDER, KEY, LAPSED, run, seed

    seed(DynamoStore(TABLE))
    captured: list[Captured] = []
    real = _cli._store

    def store(args: Any) -> DynamoStore:
        made = real(args)
        captured.append(Captured(made.client))
        return made

    monkeypatch.setattr(_cli, "_store", store)
    assert run("inspect", *COMPLETED_ORDER.options, "--key", KEY).status == 0
    assert run("reset", *COMPLETED_ORDER.options, "--key", KEY, "--yes").status == 0
    assert run("reset", *LAPSED.options, "--key", LAPSED.scope.key, "--yes").status == 0
    for state in _cli.STATES:
        assert run("list", "--state", state, "--page-size", "2").status == 0
    requests = [request for each in captured for request in each.requests]
    assert {model.name for model, _ in requests} == {"GetItem", "DeleteItem", "Scan"}
    assert [problem for each in captured for problem in each.problems()] == []


@pytest.mark.parametrize(("init_phase", "created"), [(True, True), (False, False)])
def test_the_client_is_created_during_lambdas_init_phase(init_phase: bool, created: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """In Lambda (``AWS_LAMBDA_INITIALIZATION_TYPE`` is set while the module loads) the client is ready before the
    first request; elsewhere (tests, scripts) it is still created on first use."""
    monkeypatch.setenv(names.TABLE_ENV, f"init-phase-{init_phase}")
    if init_phase:
        monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
    else:
        monkeypatch.delenv("AWS_LAMBDA_INITIALIZATION_TYPE", raising=False)
    handler = idempotent_http(lambda event, context, txn: {"statusCode": 200, "body": "{}"}, operation="Init")
    assert (handler.idempotency.engine.store._client is not None) is created
