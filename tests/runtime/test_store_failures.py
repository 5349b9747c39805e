"""Every error a store call can raise maps to a documented answer: HTTP problem, SQS batch item failure,
or a named Step Functions error (retried when the runtime's RETRIABLE_ERRORS name it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from retrysafe import Engine, Mode, Transaction, idempotent_http, idempotent_task, names
from retrysafe._store import DynamoStore
from retrysafe.errors import (
    ConfigurationError,
    StoreAccessError,
    StoreError,
    StoreRejectedError,
    StoreUnavailableError,
    TransactionRaced,
)
from retrysafe.sqs import idempotent_sqs
from retrysafe.testing import ALWAYS, Boundary, DynamoSemantics, instant_retries
from retrysafe.testing._boundary import Reason
from retrysafe.testing._events import DrillContext, rest_event, sqs_record, task_payload

from tests.helpers import ORDERS, TABLE, payload, problem


@pytest.fixture
def faults(ddb: Any) -> Iterator[Boundary]:
    """Faults on a client of its own (standard retries, no back-off sleeps), on DynamoDB's semantics."""
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 2}))
    instant_retries(client)
    DynamoSemantics().install(client)
    boundary = Boundary(client)
    yield boundary
    boundary.close()


def engine_of(boundary: Boundary) -> Engine:
    return Engine(DynamoStore(TABLE, client=boundary.client))


def reasons(code: str, *, at: int = 1, message: str | None = None) -> list[Reason]:
    """Cancellation reasons of a record + one business action: ``code`` at index ``at`` (0 = the record)."""
    found: list[Reason] = [None, None]
    found[at] = code if message is None else (code, message)
    return found


def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    txn.update({"pk": "balance"}, "ADD n :one", table=ORDERS, values={":one": 1})
    return {"statusCode": 201, "body": "{}"}


def claims(ddb: Any) -> list[dict[str, Any]]:
    return [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]


@pytest.mark.parametrize("code", ["ThrottlingError", "ProvisionedThroughputExceeded"])
@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_throttled_transaction_is_a_503_with_retry_after(ddb, faults, mode, code):
    """The reasons inside CancellationReasons are not the operation error codes (ThrottlingException...)."""
    faults.cancel(reasons(code), times=ALWAYS)
    response = idempotent_http(api, mode=mode, engine=engine_of(faults))(rest_event({"a": 1}), DrillContext())
    assert response["statusCode"] == 503 and int(response["headers"]["Retry-After"]) >= 1
    assert problem(response)["type"].endswith("store-unavailable")
    assert claims(ddb) == []  # a claim-first claim is released: the retry runs


def test_transaction_conflict_on_a_claim_first_commit_is_a_409_and_the_claim_is_released(ddb, faults):
    faults.cancel(reasons("TransactionConflict", at=0), times=ALWAYS)
    response = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine_of(faults))(rest_event({"a": 1}),
                                                                                    DrillContext())
    assert response["statusCode"] == 409 and response["headers"]["Retry-After"]
    assert problem(response)["type"].endswith("transaction-conflict")
    assert claims(ddb) == []


@pytest.mark.parametrize(("code", "message", "status", "slug"), [
    ("ValidationError", "One or more parameter values were invalid: Type mismatch for key pk", 500, "store-rejected"),
    ("ValidationError", "Item size has exceeded the maximum allowed size", 500, "result-too-large"),
    ("ItemCollectionSizeLimitExceeded", "Collection size exceeded", 500, "store-rejected"),
])
@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_rejected_transaction_is_a_clear_500_problem(ddb, faults, mode, code, message, status, slug):
    faults.cancel(reasons(code, message=message), times=ALWAYS)
    response = idempotent_http(api, mode=mode, engine=engine_of(faults))(rest_event({"a": 1}), DrillContext())
    assert response["statusCode"] == status and problem(response)["type"].endswith(slug)
    assert claims(ddb) == []


@pytest.mark.parametrize(("operation", "code", "status", "slug"), [
    ("TransactWriteItems", "TransactionInProgressException", 503, "store-unavailable"),
    ("TransactWriteItems", "IdempotentParameterMismatchException", 500, "store-rejected"),
    ("TransactWriteItems", "ValidationException", 500, "store-rejected"),
    ("PutItem", "ValidationException", 500, "store-rejected"),
    ("PutItem", "TransactionConflictException", 409, "request-in-progress"),
    ("PutItem", "RequestLimitExceeded", 503, "store-unavailable"),
    ("PutItem", "ItemCollectionSizeLimitExceededException", 500, "store-rejected"),
])
def test_operation_errors_map_to_documented_problems(ddb, faults, operation, code, status, slug):
    faults.fail(operation, 400, code, times=ALWAYS)
    response = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine_of(faults))(rest_event({"a": 1}),
                                                                                    DrillContext())
    assert response["statusCode"] == status and problem(response)["type"].endswith(slug), response["body"]


def test_a_failing_release_does_not_hide_the_handlers_error(ddb, faults):
    """The claim could not be freed (throttled): the handler's own error surfaces; the lease lapses by itself."""
    faults.throttle("DeleteItem", code="ProvisionedThroughputExceededException", times=ALWAYS)

    def broken(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        raise TimeoutError("provider timed out")

    with pytest.raises(TimeoutError):
        idempotent_http(broken, mode=Mode.CLAIM_FIRST, engine=engine_of(faults))(rest_event({"a": 1}),
                                                                                  DrillContext())


def test_a_throttled_sqs_record_is_a_batch_item_failure_of_its_own(ddb, faults):
    faults.cancel(reasons("ThrottlingError"), times=ALWAYS)

    def consume(message: Any, txn: Transaction) -> None:
        txn.update({"pk": "balance"}, "ADD n :one", table=ORDERS, values={":one": 1})

    handler = idempotent_sqs(consume, subscriber="billing", engine=engine_of(faults))
    record = sqs_record({"n": 1}, message_id="m-1")
    assert handler({"Records": [record]}, DrillContext()) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}


@pytest.mark.parametrize(("reason", "error"), [("ThrottlingError", StoreUnavailableError),
                                               ("TransactionConflict", TransactionRaced),
                                               ("ValidationError", StoreRejectedError)])
def test_step_functions_sees_named_errors(ddb, faults, reason, error):
    from retrysafe.stepfunctions import RETRIABLE_ERRORS

    faults.cancel(reasons(reason, at=0), times=ALWAYS)

    def charge(task_input: Any, context: Any, txn: Any) -> dict[str, bool]:
        # a business write: the completion is a transaction, whose cancellation reasons are under test
        txn.update({"pk": "balance"}, "ADD n :one", table=ORDERS, values={":one": 1})
        return {"ok": True}

    handler = idempotent_task(charge, engine=engine_of(faults))
    with pytest.raises(Exception) as caught:
        handler(payload("Charge", {"amount": 1}), DrillContext())
    assert type(caught.value) is error  # its __name__ is the Lambda errorType Step Functions matches
    assert (error in RETRIABLE_ERRORS) == (error is not StoreRejectedError)


@pytest.mark.parametrize(("operation", "code", "error"), [
    ("PutItem", "ProvisionedThroughputExceededException", StoreUnavailableError),
    ("PutItem", "InternalServerError", StoreUnavailableError),
    ("PutItem", "ValidationException", StoreRejectedError),
    ("PutItem", "AccessDeniedException", StoreAccessError),
    ("PutItem", "ResourceNotFoundException", StoreAccessError),
    ("PutItem", "UnrecognizedClientException", StoreAccessError),
])
def test_every_store_failure_is_a_store_error_with_the_aws_code(ddb, faults, operation, code, error):
    """One base for every store failure (Powertools' persistence error), carrying DynamoDB's error code."""
    faults.fail(operation, 400, code, times=ALWAYS)
    with pytest.raises(StoreError) as raised:
        idempotent_task(lambda task, context, txn: {}, engine=engine_of(faults))(
            task_payload({}, execution="exec-1"), DrillContext())
    assert isinstance(raised.value, error) and raised.value.code == code
    if error is StoreAccessError:  # a deployment bug: still what ``except ConfigurationError`` catches
        assert isinstance(raised.value, ConfigurationError)


def test_a_lost_answer_names_botocores_exception(ddb, faults):
    """No answer after botocore's retries (here: every answer lost): the code is botocore's exception name."""
    faults.lose_response("PutItem", times=ALWAYS)
    with pytest.raises(StoreUnavailableError) as raised:
        idempotent_task(lambda task, context, txn: {}, engine=engine_of(faults))(
            task_payload({}, execution="exec-1"), DrillContext())
    assert raised.value.code == "ReadTimeoutError"
