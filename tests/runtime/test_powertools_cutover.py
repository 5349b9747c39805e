"""Cut-over from Powertools idempotency: records written by the REAL Powertools decorators, then retrysafe.

Each test runs the old code (Powertools' ``@idempotent`` / ``@idempotent_function`` with its
``DynamoDBPersistenceLayer`` on moto), "deploys" retrysafe with ``powertools_cutover=`` on the same
event, and asserts the answer, the effect count and the DynamoDB round trips (botocore hooks).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.idempotency import (
    idempotent_function as powertools_function,
)
from retrysafe import (
    Engine,
    Mode,
    PowertoolsCutover,
    RecordCache,
    Transaction,
    idempotent_function,
    idempotent_http,
)
from retrysafe import names as retrysafe_names
from retrysafe._store import DynamoStore
from retrysafe.errors import ConfigurationError, KeyReuseMismatchError, RequestInFlightError
from retrysafe.metrics import LEGACY_REPLAYED
from retrysafe.sqs import Message, idempotent_sqs
from retrysafe.testing import ALWAYS, Boundary, DynamoSemantics, instant_retries
from retrysafe.testing._boundary import completes_record
from retrysafe.testing._events import DrillContext, http_event, sqs_event, sqs_record

from tests.helpers import ORDERS, TABLE, CallCounter, problem

POWERTOOLS_TABLE = "powertools-idempotency"
FUNCTION = "orders-api"
HEADER_KEY = 'headers."idempotency-key"'


@pytest.fixture
def old_table(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Powertools' table as its docs deploy it (``id`` partition key), and the Lambda's name Powertools keys on."""
    ddb.create_table(TableName=POWERTOOLS_TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    monkeypatch.setenv(retrysafe_names.LAMBDA_FUNCTION_NAME_ENV, FUNCTION)
    return POWERTOOLS_TABLE


def applied(ddb: Any, name: str) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": name}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


def effect(ddb: Any, name: str) -> None:
    """The business effect, the same in the old code and the new."""
    ddb.update_item(TableName=ORDERS, Key={"pk": {"S": name}}, UpdateExpression="ADD n :one",
                    ExpressionAttributeValues={":one": {"N": "1"}})


def window(seconds: float = 3600) -> float:
    return time.time() + seconds


def old_layer() -> DynamoDBPersistenceLayer:
    return DynamoDBPersistenceLayer(table_name=POWERTOOLS_TABLE, boto3_client=boto3.client("dynamodb"))


def powertools_items(ddb: Any) -> list[dict[str, Any]]:
    return list(ddb.scan(TableName=POWERTOOLS_TABLE)["Items"])


def expire_powertools_records(ddb: Any) -> None:
    """The records as they are once ``expires_after_seconds`` passed (Powertools reads ``expiration`` as expired)."""
    for item in powertools_items(ddb):
        ddb.update_item(TableName=POWERTOOLS_TABLE, Key={"id": item["id"]}, UpdateExpression="SET expiration = :t",
                        ExpressionAttributeValues={":t": {"N": str(int(time.time()) - 10)}})


# -- HTTP -------------------------------------------------------------------------------------------------


def old_http_handler(ddb: Any, config: IdempotencyConfig) -> Any:
    @idempotent(config=config, persistence_store=old_layer())
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        effect(ddb, "http")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": "/orders/o-1"},
                "body": json.dumps({"order": "o-1"})}

    return lambda_handler


def new_http_handler(ddb: Any, engine: Engine, cutover: PowertoolsCutover, mode: Mode = Mode.ATOMIC) -> Any:
    @idempotent_http(operation="CreateOrder", mode=mode, powertools_cutover=cutover, engine=engine)
    def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effect(ddb, "http")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": "/orders/o-2"},
                "body": json.dumps({"order": "o-2"})}

    return handler


def http_cutover(old: str = "old_http_handler", **options: Any) -> PowertoolsCutover:
    """The options of the old ``@idempotent`` on ``lambda_handler`` inside the function ``old`` of this module."""
    options.setdefault("event_key_jmespath", HEADER_KEY)
    return PowertoolsCutover(function_name=f"{__name__}.{old}.<locals>.lambda_handler", table_name=POWERTOOLS_TABLE,
                             until=window(), **options)


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_http_retry_across_the_deploy_is_answered_from_powertools_record(
        store: Any, ddb: Any, old_table: str, calls: CallCounter, mode: Mode) -> None:
    old = old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))
    first = old(http_event({"item": "book"}, key="k-1"), DrillContext())
    assert first["statusCode"] == 201 and applied(ddb, "http") == 1

    new = new_http_handler(ddb, Engine(store, cache=None), http_cutover(), mode)
    calls.reset()
    retry = new(http_event({"item": "book"}, key="k-1"), DrillContext())
    # Powertools' stored response: status, body and the replayed headers; no second effect
    assert retry["statusCode"] == 201 and json.loads(retry["body"]) == {"order": "o-1"}
    assert retry["headers"]["Location"] == "/orders/o-1"
    assert retry["headers"][retrysafe_names.REPLAYED_HEADER] == "true"
    assert applied(ddb, "http") == 1
    # one GetItem on Powertools' table, one write recording the answer (claim first: claim, then complete it
    # with one owner-conditioned PutItem: the answer writes nothing else, so no transaction)
    expected = {"GetItem": 1, "PutItem": 1} if mode is Mode.ATOMIC else {"GetItem": 1, "PutItem": 2}
    assert dict(calls.calls) == expected

    calls.reset()
    again = new(http_event({"item": "book"}, key="k-1"), DrillContext())
    assert json.loads(again["body"]) == {"order": "o-1"} and applied(ddb, "http") == 1
    if mode is Mode.CLAIM_FIRST:  # the claim meets retrysafe's record: no GetItem on Powertools' table
        assert dict(calls.calls) == {"PutItem": 1}


def idempotency_records(ddb: Any) -> list[dict[str, Any]]:
    """retrysafe's records (not the business table's items)."""
    return [item for item in ddb.scan(TableName=TABLE)["Items"]
            if item[retrysafe_names.PARTITION_KEY]["S"].startswith(retrysafe_names.RECORD_PREFIX)]


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_http_a_5xx_powertools_stored_is_replayed_and_recorded_nowhere(
        store: Any, ddb: Any, old_table: str, mode: Mode) -> None:
    """Powertools stored the handler's 500 as COMPLETED; retrysafe never stores a 5xx (docs/http.md), so the
    answer is replayed as the old code would have, and not recorded: once Powertools' record expires, it runs."""
    @idempotent(config=IdempotencyConfig(event_key_jmespath=HEADER_KEY), persistence_store=old_layer())
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        effect(ddb, "http")
        return {"statusCode": 503, "headers": {"Content-Type": "application/json"}, "body": '{"error": "down"}'}

    assert lambda_handler(http_event({}, key="k-1"), DrillContext())["statusCode"] == 503
    new = new_http_handler(ddb, Engine(store, cache=RecordCache(16)),
                           http_cutover("test_http_a_5xx_powertools_stored_is_replayed_and_recorded_nowhere"), mode)
    retry = new(http_event({}, key="k-1"), DrillContext())
    assert retry["statusCode"] == 503 and retry["headers"][retrysafe_names.REPLAYED_HEADER] == "true"
    assert applied(ddb, "http") == 1 and idempotency_records(ddb) == []
    expire_powertools_records(ddb)
    ran = new(http_event({}, key="k-1"), DrillContext())
    assert ran["statusCode"] == 201 and applied(ddb, "http") == 2


def test_an_adopted_answer_expires_when_powertools_record_would_have(store: Any, ddb: Any, old_table: str) -> None:
    """Powertools kept its record until ``expiration`` (expires_after_seconds); the adopted one is not kept longer."""
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY, expires_after_seconds=600))(
        http_event({}, key="k-1"), DrillContext())
    [old_record] = powertools_items(ddb)
    new_http_handler(ddb, Engine(store, cache=None), http_cutover())(http_event({}, key="k-1"), DrillContext())
    [record] = idempotency_records(ddb)
    assert record[retrysafe_names.TTL_ATTRIBUTE]["N"] == old_record["expiration"]["N"]


def test_http_replay_from_the_record_cache_makes_no_lookup(store: Any, ddb: Any, old_table: str,
                                                           calls: CallCounter) -> None:
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))(http_event({}, key="k-1"), DrillContext())
    new = new_http_handler(ddb, Engine(store, cache=RecordCache(16)), http_cutover())
    new(http_event({}, key="k-1"), DrillContext())
    calls.reset()
    assert json.loads(new(http_event({}, key="k-1"), DrillContext())["body"]) == {"order": "o-1"}
    assert calls.total == 0 and applied(ddb, "http") == 1


def test_http_first_request_during_the_window_costs_one_get_item(store: Any, ddb: Any, old_table: str,
                                                                 calls: CallCounter) -> None:
    new = new_http_handler(ddb, Engine(store, cache=None), http_cutover())
    response = new(http_event({}, key="fresh"), DrillContext())
    assert json.loads(response["body"]) == {"order": "o-2"} and applied(ddb, "http") == 1
    assert dict(calls.calls) == {"GetItem": 1, "PutItem": 1}
    assert powertools_items(ddb) == []  # the old table is only read


def test_after_the_window_no_lookup_is_made(store: Any, ddb: Any, old_table: str, calls: CallCounter) -> None:
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))(http_event({}, key="k-1"), DrillContext())
    closed = PowertoolsCutover(function_name=f"{__name__}.old_http_handler.<locals>.lambda_handler",
                               event_key_jmespath=HEADER_KEY, table_name=POWERTOOLS_TABLE, until=window(-1))
    new = new_http_handler(ddb, Engine(store, cache=None), closed)
    calls.reset()
    new(http_event({}, key="k-2"), DrillContext())
    assert dict(calls.calls) == {"PutItem": 1}


def test_http_in_flight_powertools_record_answers_409(store: Any, ddb: Any, old_table: str) -> None:
    config = IdempotencyConfig(event_key_jmespath=HEADER_KEY)
    new = new_http_handler(ddb, Engine(store, cache=None),
                           http_cutover("test_http_in_flight_powertools_record_answers_409"))
    during: list[dict[str, Any]] = []

    @idempotent(config=config, persistence_store=old_layer())
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # the old code is still running this request when the new deploy gets its retry
        during.append(new(http_event({}, key="k-1"), DrillContext()))
        effect(ddb, "http")
        return {"statusCode": 201, "body": "{}"}

    config.register_lambda_context(DrillContext())
    lambda_handler(http_event({}, key="k-1"), DrillContext())
    assert during[0]["statusCode"] == 409 and problem(during[0])["type"].endswith("request-in-progress")
    assert applied(ddb, "http") == 1


def test_http_expired_powertools_record_runs(store: Any, ddb: Any, old_table: str) -> None:
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))(http_event({}, key="k-1"), DrillContext())
    expire_powertools_records(ddb)
    new = new_http_handler(ddb, Engine(store, cache=None), http_cutover())
    assert json.loads(new(http_event({}, key="k-1"), DrillContext())["body"]) == {"order": "o-2"}
    assert applied(ddb, "http") == 2


def test_http_payload_validation_mismatch_is_refused(store: Any, ddb: Any, old_table: str) -> None:
    config = IdempotencyConfig(event_key_jmespath=HEADER_KEY, payload_validation_jmespath="powertools_json(body)")
    old_http_handler(ddb, config)(http_event({"amount": 10}, key="k-1"), DrillContext())
    new = new_http_handler(ddb, Engine(store, cache=None),
                           http_cutover(payload_validation_jmespath="powertools_json(body)"))
    refused = new(http_event({"amount": 99}, key="k-1"), DrillContext())
    assert refused["statusCode"] == 422 and applied(ddb, "http") == 1


def test_http_powertools_metric_counts_answers_from_powertools(store: Any, ddb: Any, old_table: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))(http_event({}, key="k-1"), DrillContext())
    new = new_http_handler(ddb, Engine(store, cache=None), http_cutover())
    capsys.readouterr()
    new(http_event({}, key="k-1"), DrillContext())
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [doc[LEGACY_REPLAYED] for doc in emf if LEGACY_REPLAYED in doc] == [[1.0]]


def test_a_retry_without_a_key_header_of_a_body_keyed_powertools_request(store: Any, ddb: Any, old_table: str,
                                                                        calls: CallCounter) -> None:
    """The old code hashed the body; its clients send no key header. With key_required=False during the window
    their retries are still answered from Powertools' records (and recorded nowhere: there is no key)."""
    body = "powertools_json(body)"
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=body))(http_event({"item": "pen"}, key=None),
                                                                      DrillContext())

    @idempotent_http(operation="CreateOrder", key_required=False, engine=Engine(store, cache=None),
                     powertools_cutover=http_cutover(event_key_jmespath=body))
    def new(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effect(ddb, "http")
        return {"statusCode": 201, "body": json.dumps({"order": "o-2"})}

    calls.reset()
    retry = new(http_event({"item": "pen"}, key=None), DrillContext())
    assert json.loads(retry["body"]) == {"order": "o-1"} and applied(ddb, "http") == 1
    assert retry["headers"][retrysafe_names.REPLAYED_HEADER] == "true" and dict(calls.calls) == {"GetItem": 1}
    assert json.loads(new(http_event({"item": "ink"}, key=None), DrillContext())["body"]) == {"order": "o-2"}
    assert applied(ddb, "http") == 2


def test_middleware_retry_across_the_deploy_is_answered_from_powertools_record(store: Any, ddb: Any,
                                                                             old_table: str) -> None:
    """The old app: Powertools' resolver under ``@idempotent`` on its ``lambda_handler`` (Powertools hashed the
    raw event); the new one: the same route with ``IdempotencyMiddleware(powertools_cutover=...)``."""
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
    from retrysafe import IdempotencyMiddleware

    def app_with(middlewares: list[Any], order: str) -> APIGatewayHttpResolver:
        app = APIGatewayHttpResolver()

        @app.post("/orders", middlewares=middlewares)
        def create() -> Response[str]:
            effect(ddb, "http")
            return Response(201, content_types.APPLICATION_JSON, json.dumps({"order": order}))

        return app

    old_app = app_with([], "o-1")

    @idempotent(config=IdempotencyConfig(event_key_jmespath=HEADER_KEY), persistence_store=old_layer())
    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return old_app.resolve(event, context)

    lambda_handler(http_event({}, key="k-1"), DrillContext())
    cutover = http_cutover("test_middleware_retry_across_the_deploy_is_answered_from_powertools_record")
    new_app = app_with([IdempotencyMiddleware(powertools_cutover=cutover, engine=Engine(store, cache=None))], "o-2")
    retry = new_app.resolve(http_event({}, key="k-1"), DrillContext())
    assert retry["statusCode"] == 201 and json.loads(retry["body"]) == {"order": "o-1"}
    assert applied(ddb, "http") == 1


# -- SQS --------------------------------------------------------------------------------------------------

SQS_CONFIG = {"event_key_jmespath": "powertools_json(body).order_id"}


def old_sqs_handler(ddb: Any) -> Any:
    config = IdempotencyConfig(**SQS_CONFIG)
    processor = BatchProcessor(event_type=EventType.SQS)

    @powertools_function(data_keyword_argument="record", config=config, persistence_store=old_layer())
    def record_handler(record: SQSRecord) -> dict[str, Any]:
        effect(ddb, "sqs")
        return {"invoice": json.loads(record.body)["order_id"]}

    def lambda_handler(event: dict[str, Any], context: Any) -> Any:
        config.register_lambda_context(context)
        return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                        context=context)

    return lambda_handler


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_sqs_redelivery_across_the_deploy_is_acknowledged_from_powertools_record(
        store: Any, ddb: Any, old_table: str, calls: CallCounter, mode: Mode) -> None:
    record = sqs_record({"order_id": "o-7"})
    assert old_sqs_handler(ddb)({"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "sqs") == 1
    cutover = PowertoolsCutover(function_name=f"{__name__}.old_sqs_handler.<locals>.record_handler",
                                table_name=POWERTOOLS_TABLE, until=window(), **SQS_CONFIG)
    results: list[Any] = []

    @idempotent_sqs(subscriber="billing", mode=mode, key="body.order_id", powertools_cutover=cutover,
                    engine=Engine(store, cache=None))
    def handler(message: Message, txn: Transaction) -> dict[str, Any]:
        effect(ddb, "sqs")
        return {"invoice": message.content["order_id"]}

    calls.reset()
    redelivered = {**record, "attributes": {**record["attributes"], "ApproximateReceiveCount": "2"}}
    assert handler({"Records": [redelivered]}, DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "sqs") == 1 and calls.calls["GetItem"] == 1
    results.append(handler.consumer.process(SQSRecord(redelivered)))
    assert results == [{"invoice": "o-7"}]  # the result Powertools stored, now replayed from retrysafe's record


def test_sqs_in_flight_powertools_record_is_a_batch_item_failure(store: Any, ddb: Any, old_table: str) -> None:
    record = sqs_record({"order_id": "o-8"})
    cutover = PowertoolsCutover(function_name=f"{__name__}.test_sqs_in_flight_powertools_record_is_a_batch_item_"
                                              "failure.<locals>.record_handler",
                                table_name=POWERTOOLS_TABLE, until=window(), **SQS_CONFIG)

    @idempotent_sqs(subscriber="billing", key="body.order_id", powertools_cutover=cutover, engine=Engine(store, cache=None))
    def handler(message: Message, txn: Transaction) -> None:
        effect(ddb, "sqs")

    config = IdempotencyConfig(**SQS_CONFIG)
    during: list[Any] = []

    @powertools_function(data_keyword_argument="record", config=config, persistence_store=old_layer())
    def record_handler(record: SQSRecord) -> None:
        during.append(handler({"Records": [record.raw_event]}, DrillContext()))
        effect(ddb, "sqs")

    config.register_lambda_context(DrillContext())
    process_partial_response(event={"Records": [record]}, record_handler=record_handler,
                             processor=BatchProcessor(event_type=EventType.SQS), context=DrillContext())
    assert during == [{"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}]
    assert applied(ddb, "sqs") == 1


def test_sqs_expired_powertools_record_runs(store: Any, ddb: Any, old_table: str) -> None:
    record = sqs_record({"order_id": "o-9"})
    old_sqs_handler(ddb)({"Records": [record]}, DrillContext())
    expire_powertools_records(ddb)
    cutover = PowertoolsCutover(function_name=f"{__name__}.old_sqs_handler.<locals>.record_handler",
                                table_name=POWERTOOLS_TABLE, until=window(), **SQS_CONFIG)

    @idempotent_sqs(subscriber="billing", key="body.order_id", powertools_cutover=cutover, engine=Engine(store, cache=None))
    def handler(message: Message, txn: Transaction) -> None:
        effect(ddb, "sqs")

    assert handler(sqs_event([], "inbox") | {"Records": [record]}, DrillContext()) == {"batchItemFailures": []}
    assert applied(ddb, "sqs") == 2


# -- a plain function -------------------------------------------------------------------------------------


def old_charge(ddb: Any) -> Any:
    config = IdempotencyConfig(event_key_jmespath="order_id")
    config.register_lambda_context(DrillContext())

    @powertools_function(data_keyword_argument="order", config=config, persistence_store=old_layer())
    def charge(order: dict[str, Any]) -> dict[str, Any]:
        effect(ddb, "charge")
        return {"receipt": f"r-{order['order_id']}", "amount": order["amount"]}

    return charge


def new_charge(ddb: Any, engine: Engine, cutover: PowertoolsCutover) -> Any:
    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id",
                         powertools_cutover=cutover, engine=engine)
    def charge(order: dict[str, Any]) -> dict[str, Any]:
        effect(ddb, "charge")
        return {"receipt": f"new-{order['order_id']}", "amount": order["amount"]}

    return charge


def charge_cutover() -> PowertoolsCutover:
    return PowertoolsCutover(function_name=f"{__name__}.old_charge.<locals>.charge", event_key_jmespath="order_id",
                             table_name=POWERTOOLS_TABLE, until=window())


def test_function_retry_across_the_deploy_returns_powertools_result(store: Any, ddb: Any, old_table: str,
                                                                    calls: CallCounter) -> None:
    order = {"order_id": "o-1", "amount": 12}
    assert old_charge(ddb)(order=order) == {"receipt": "r-o-1", "amount": 12}
    charge = new_charge(ddb, Engine(store, cache=None), charge_cutover())
    calls.reset()
    assert charge(order=order) == {"receipt": "r-o-1", "amount": 12}
    assert applied(ddb, "charge") == 1
    assert calls.calls["GetItem"] == 1  # claim first (no txn parameter): claim, GetItem, complete
    calls.reset()
    assert charge(order) == {"receipt": "r-o-1", "amount": 12}  # retrysafe's record now: no lookup
    assert dict(calls.calls) == {"PutItem": 1} and applied(ddb, "charge") == 1


def test_function_in_flight_powertools_record_raises_in_flight(store: Any, ddb: Any, old_table: str) -> None:
    charge = new_charge(ddb, Engine(store, cache=None), PowertoolsCutover(
        function_name=f"{__name__}.test_function_in_flight_powertools_record_raises_in_flight.<locals>.old",
        event_key_jmespath="order_id", table_name=POWERTOOLS_TABLE, until=window()))
    config = IdempotencyConfig(event_key_jmespath="order_id")
    config.register_lambda_context(DrillContext())
    errors: list[Exception] = []

    @powertools_function(data_keyword_argument="order", config=config, persistence_store=old_layer())
    def old(order: dict[str, Any]) -> None:
        with pytest.raises(RequestInFlightError) as raised:
            charge(order=order)
        errors.append(raised.value)

    old(order={"order_id": "o-2", "amount": 1})
    assert len(errors) == 1 and applied(ddb, "charge") == 0
    # the claim the new code made was released: once Powertools completed, the record decides
    assert charge(order={"order_id": "o-2", "amount": 1}) is None


def test_function_expired_powertools_record_runs(store: Any, ddb: Any, old_table: str) -> None:
    order = {"order_id": "o-3", "amount": 5}
    old_charge(ddb)(order=order)
    expire_powertools_records(ddb)
    assert new_charge(ddb, Engine(store, cache=None), charge_cutover())(order=order) == {"receipt": "new-o-3",
                                                                                         "amount": 5}
    assert applied(ddb, "charge") == 2


def test_payload_mismatch_of_a_function_raises_key_reuse(store: Any, ddb: Any, old_table: str) -> None:
    config = IdempotencyConfig(event_key_jmespath="order_id", payload_validation_jmespath="amount")
    config.register_lambda_context(DrillContext())

    @powertools_function(data_keyword_argument="order", config=config, persistence_store=old_layer())
    def charge(order: dict[str, Any]) -> str:
        return "ok"

    charge(order={"order_id": "o-4", "amount": 1})
    new = new_charge(ddb, Engine(store, cache=None), PowertoolsCutover(
        function_name=f"{__name__}.test_payload_mismatch_of_a_function_raises_key_reuse.<locals>.charge",
        event_key_jmespath="order_id", payload_validation_jmespath="amount", table_name=POWERTOOLS_TABLE,
        until=window()))
    with pytest.raises(KeyReuseMismatchError, match="Powertools"):
        new(order={"order_id": "o-4", "amount": 2})


def test_a_composite_key_table_sha256_and_a_key_prefix_as_powertools_configured_them(
        store: Any, ddb: Any, old_table: str) -> None:
    ddb.create_table(TableName="composite", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                       {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    config = IdempotencyConfig(event_key_jmespath="order_id", hash_function="sha256")
    config.register_lambda_context(DrillContext())
    layer = DynamoDBPersistenceLayer(table_name="composite", key_attr="pk", sort_key_attr="sk",
                                     status_attr="state", data_attr="response", boto3_client=boto3.client("dynamodb"))

    @powertools_function(data_keyword_argument="order", config=config, persistence_store=layer, key_prefix="charges")
    def charge(order: dict[str, Any]) -> dict[str, Any]:
        effect(ddb, "charge")
        return {"receipt": "r-old"}

    charge(order={"order_id": "o-6", "amount": 1})
    new = new_charge(ddb, Engine(store, cache=None), PowertoolsCutover(
        key_prefix="charges", event_key_jmespath="order_id", hash_function="sha256",
        table_name="composite", key_attr="pk", sort_key_attr="sk", status_attr="state", data_attr="response",
        until=window()))
    assert new(order={"order_id": "o-6", "amount": 1}) == {"receipt": "r-old"} and applied(ddb, "charge") == 1


def test_a_key_prefix_needs_no_function_name_and_neither_is_refused_by_name() -> None:
    """``key_prefix=`` alone is a whole configuration (Powertools then ignores the function's name)."""
    assert PowertoolsCutover(key_prefix="charges", table_name="old", until=window()).function_name is None
    with pytest.raises(ConfigurationError, match="function_name= .* or the old key_prefix="):
        PowertoolsCutover(table_name="old", until=window())


def test_a_renamed_function_finds_the_records_keyed_on_the_old_function_name(
        store: Any, ddb: Any, old_table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Powertools keyed on ``<AWS_LAMBDA_FUNCTION_NAME>.<module>.<qualname>``: the new function has another name."""
    missed, found = {"order_id": "o-10", "amount": 2}, {"order_id": "o-11", "amount": 2}
    old_charge(ddb)(order=missed)  # the old code, run as FUNCTION
    old_charge(ddb)(order=found)
    monkeypatch.setenv(retrysafe_names.LAMBDA_FUNCTION_NAME_ENV, "orders-api-NewFunction-1A2B3C")
    qualname = f"{__name__}.old_charge.<locals>.charge"
    unnamed = PowertoolsCutover(function_name=qualname, event_key_jmespath="order_id", table_name=POWERTOOLS_TABLE,
                                until=window())
    assert new_charge(ddb, Engine(store, cache=None), unnamed)(order=missed)["receipt"] == "new-o-10"
    named = PowertoolsCutover(function_name=qualname, lambda_function_name=FUNCTION, event_key_jmespath="order_id",
                              table_name=POWERTOOLS_TABLE, until=window())
    assert new_charge(ddb, Engine(store, cache=None), named)(order=found) == {"receipt": "r-o-11", "amount": 2}
    assert applied(ddb, "charge") == 3  # o-10 twice (the new code missed it), o-11 once


def test_the_old_function_name_and_key_prefix_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``CutoverFromPowertools(function=..., key_prefix=...)`` sets; the code's own options win."""
    monkeypatch.setenv(retrysafe_names.POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV, "orders-api")
    options = PowertoolsCutover(function_name="app.h", table_name="old", until=window())
    assert (options.lambda_function_name, options.key_prefix) == ("orders-api", None)
    assert PowertoolsCutover(function_name="app.h", lambda_function_name="other", table_name="old",
                             until=window()).lambda_function_name == "other"
    monkeypatch.setenv(retrysafe_names.POWERTOOLS_KEY_PREFIX_ENV, "charges")
    assert PowertoolsCutover(table_name="old", until=window()).key_prefix == "charges"  # no function_name needed
    assert PowertoolsCutover(key_prefix="mine", table_name="old", until=window()).key_prefix == "mine"


def test_an_event_without_the_powertools_key_runs_without_a_warning(store: Any, ddb: Any, old_table: str,
                                                                    recwarn: pytest.WarningsRecorder) -> None:
    charge = new_charge(ddb, Engine(store, cache=None), PowertoolsCutover(
        function_name="app.charge", event_key_jmespath="legacy_id", table_name=POWERTOOLS_TABLE, until=window()))
    assert charge(order={"order_id": "o-7", "amount": 3}) == {"receipt": "new-o-7", "amount": 3}
    assert applied(ddb, "charge") == 1 and [str(w.message) for w in recwarn] == []


def test_a_missing_powertools_table_is_a_configuration_error_naming_it(store: Any, ddb: Any) -> None:
    charge = new_charge(ddb, Engine(store, cache=None), PowertoolsCutover(
        function_name="app.charge", event_key_jmespath="order_id", table_name="no-such-table", until=window()))
    with pytest.raises(ConfigurationError, match="'no-such-table': no such table"):
        charge(order={"order_id": "o-5", "amount": 1})
    assert applied(ddb, "charge") == 0


# -- configuration ----------------------------------------------------------------------------------------


def test_table_and_window_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(retrysafe_names.POWERTOOLS_TABLE_ENV, "old")
    monkeypatch.setenv(retrysafe_names.POWERTOOLS_UNTIL_ENV, "1900000000")
    options = PowertoolsCutover(function_name="app.lambda_handler")
    assert (options.table_name, options.until) == ("old", 1_900_000_000.0)


@pytest.mark.parametrize(("options", "message"), [
    ({"function_name": "", "table_name": "t", "until": 1}, "function_name="),
    ({"function_name": "app.h", "until": 1}, "the old table"),
    ({"function_name": "app.h", "table_name": "t"}, "end of the cut-over window"),
    ({"function_name": "app.h", "table_name": "t", "until": 1, "hash_function": "crc32"}, "hashlib"),
])
def test_incomplete_configuration_is_refused_at_cold_start(options: dict[str, Any], message: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(retrysafe_names.POWERTOOLS_TABLE_ENV, raising=False)
    monkeypatch.delenv(retrysafe_names.POWERTOOLS_UNTIL_ENV, raising=False)
    monkeypatch.delenv(retrysafe_names.POWERTOOLS_KEY_PREFIX_ENV, raising=False)
    with pytest.raises(ConfigurationError, match=message):
        PowertoolsCutover(**options)


# -- faults -----------------------------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["token-honoured", "token-ignored"])
def boundary(request: pytest.FixtureRequest, ddb: Any) -> Iterator[Boundary]:
    """A store client whose calls can lose their answers or be throttled (botocore retries, instantly)."""
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 2}))
    instant_retries(client)
    if request.param:
        DynamoSemantics().install(client)
    faults = Boundary(client)
    yield faults
    faults.close()


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_a_lost_response_on_the_recording_write_still_answers_from_powertools(
        ddb: Any, old_table: str, boundary: Boundary, mode: Mode) -> None:
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))(http_event({}, key="k-1"), DrillContext())
    engine = Engine(DynamoStore(TABLE, client=boundary.client), cache=None)
    new = new_http_handler(ddb, engine, http_cutover(), mode)
    boundary.lose_response("PutItem", match=completes_record)  # record-only in both modes: a conditional PutItem
    retry = new(http_event({}, key="k-1"), DrillContext())
    assert [kind for _, kind in boundary.fired] == ["lost response"]
    assert retry["statusCode"] == 201 and json.loads(retry["body"]) == {"order": "o-1"}
    assert retry["headers"][retrysafe_names.REPLAYED_HEADER] == "true" and applied(ddb, "http") == 1
    again = new(http_event({}, key="k-1"), DrillContext())
    assert json.loads(again["body"]) == {"order": "o-1"} and applied(ddb, "http") == 1


def test_a_throttled_lookup_answers_503_and_frees_the_claim_for_the_retry(ddb: Any, old_table: str,
                                                                         boundary: Boundary) -> None:
    old_http_handler(ddb, IdempotencyConfig(event_key_jmespath=HEADER_KEY))(http_event({}, key="k-1"), DrillContext())
    new = new_http_handler(ddb, Engine(DynamoStore(TABLE, client=boundary.client), cache=None), http_cutover(),
                           Mode.CLAIM_FIRST)
    boundary.throttle("GetItem", times=ALWAYS)
    refused = new(http_event({}, key="k-1"), DrillContext())
    assert refused["statusCode"] == 503 and applied(ddb, "http") == 0 + 1  # the old run's effect only
    boundary.close()
    retry = new(http_event({}, key="k-1"), DrillContext())  # the claim was released: the lookup is made again
    assert json.loads(retry["body"]) == {"order": "o-1"} and applied(ddb, "http") == 1


def test_an_unkeyed_function_call_is_answered_from_powertools_record(store: Any, ddb: Any, old_table: str) -> None:
    order = {"order_id": "o-8", "amount": 4}
    old_charge(ddb)(order=order)

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="missing_key", key_required=False,
                         powertools_cutover=charge_cutover(), engine=Engine(store, cache=None))
    def charge(order: dict[str, Any]) -> dict[str, Any]:
        effect(ddb, "charge")
        return {"receipt": "new"}

    assert charge(order=order) == {"receipt": "r-o-8", "amount": 4} and applied(ddb, "charge") == 1
