"""Every error a store call can raise maps to a documented answer: HTTP problem, SQS batch item failure,
or a named Step Functions error (retried when the runtime's RETRIABLE_ERRORS name it)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import Engine, Mode, Transaction, idempotent_http, idempotent_task
from retrysafe.sqs import idempotent_sqs
from retrysafe.store import DynamoStore

from tests.conftest import ORDERS, TABLE
from tests.events import LambdaContext, rest_event
from tests.messaging.helpers import sqs_record
from tests.workflow.conftest import payload

PREFIX = "com.amazonaws.dynamodb.v20120810#"


def _answer(url: str, code: str, reasons: list[dict[str, Any]] | None = None) -> Any:
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, **_: Any) -> Any:
            yield b""

    body: dict[str, Any] = {"__type": PREFIX + code, "message": f"{code} (injected)"}
    if reasons is not None:
        body["CancellationReasons"] = reasons
    response = AWSResponse(url, 400, {"x-amzn-requestid": "injected"}, Raw())
    response._content = json.dumps(body).encode()
    return response


class Failing:
    """A client whose chosen operation answers with an injected DynamoDB error; everything else reaches moto."""

    def __init__(self, operation: str, code: str, reasons: list[dict[str, Any]] | None = None) -> None:
        import boto3
        from botocore.config import Config

        self.client = boto3.client("dynamodb", region_name="eu-west-1",
                                   config=Config(retries={"mode": "standard", "max_attempts": 1}))
        self.operation, self.code, self.reasons = operation, code, reasons
        from moto.core.models import botocore_stubber

        # botocore runs every before-send handler (the first response wins): without moto's own
        # handler on this client, a refused request is not applied behind the injected error.
        self.client.meta.events.unregister("before-send", botocore_stubber)
        self.client.meta.events.register_first("before-send.dynamodb", self._send)
        self.client.meta.events.register_first("needs-retry.dynamodb", lambda attempts, **_: 0 if attempts < 2 else None)

    def _send(self, request: Any, **kwargs: Any) -> Any:
        from moto.core.models import botocore_stubber

        if kwargs["event_name"].endswith(self.operation):
            return _answer(request.url, self.code, self.reasons)
        return botocore_stubber(request=request, **kwargs)

    def engine(self) -> Engine:
        return Engine(DynamoStore(TABLE, client=self.client))


def reasons(code: str, *, at: int = 1, size: int = 2, message: str = "injected") -> list[dict[str, Any]]:
    """Cancellation reasons: ``code`` at index ``at`` (0 = the record), ``None`` elsewhere."""
    return [{"Code": code, "Message": message} if i == at else {"Code": "None"} for i in range(size)]


def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    txn.update({"pk": "balance"}, "ADD n :one", table=ORDERS, values={":one": 1})
    return {"statusCode": 201, "body": "{}"}


def problem(response: dict[str, Any]) -> dict[str, Any]:
    assert response["headers"]["Content-Type"] == "application/problem+json"
    doc: dict[str, Any] = json.loads(response["body"])
    assert doc["status"] == response["statusCode"]
    return doc


def claims(ddb: Any) -> list[dict[str, Any]]:
    return [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith("idem#")]


@pytest.mark.parametrize("code", ["ThrottlingError", "ProvisionedThroughputExceeded"])
@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_throttled_transaction_is_a_503_with_retry_after(ddb, mode, code):
    """The reasons inside CancellationReasons are not the operation error codes (ThrottlingException...)."""
    failing = Failing("TransactWriteItems", "TransactionCanceledException", reasons(code))
    response = idempotent_http(api, mode=mode, engine=failing.engine())(rest_event({"a": 1}), LambdaContext())
    assert response["statusCode"] == 503 and int(response["headers"]["Retry-After"]) >= 1
    assert problem(response)["type"].endswith("store-unavailable")
    assert claims(ddb) == []  # a claim-first claim is released: the retry runs


def test_transaction_conflict_on_a_claim_first_commit_is_a_409_and_the_claim_is_released(ddb):
    failing = Failing("TransactWriteItems", "TransactionCanceledException", reasons("TransactionConflict", at=0))
    response = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=failing.engine())(rest_event({"a": 1}),
                                                                                   LambdaContext())
    assert response["statusCode"] == 409 and response["headers"]["Retry-After"]
    assert problem(response)["type"].endswith("transaction-conflict")
    assert claims(ddb) == []


@pytest.mark.parametrize(("code", "message", "status", "slug"), [
    ("ValidationError", "One or more parameter values were invalid: Type mismatch for key pk", 500, "store-rejected"),
    ("ValidationError", "Item size has exceeded the maximum allowed size", 500, "result-too-large"),
    ("ItemCollectionSizeLimitExceeded", "Collection size exceeded", 500, "store-rejected"),
])
@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_rejected_transaction_is_a_clear_500_problem(ddb, mode, code, message, status, slug):
    failing = Failing("TransactWriteItems", "TransactionCanceledException", reasons(code, message=message))
    response = idempotent_http(api, mode=mode, engine=failing.engine())(rest_event({"a": 1}), LambdaContext())
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
def test_operation_errors_map_to_documented_problems(ddb, operation, code, status, slug):
    failing = Failing(operation, code)
    response = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=failing.engine())(rest_event({"a": 1}),
                                                                                   LambdaContext())
    assert response["statusCode"] == status and problem(response)["type"].endswith(slug), response["body"]


def test_a_failing_release_does_not_hide_the_handlers_error(ddb):
    """The claim could not be freed (throttled): the handler's own error surfaces; the lease lapses by itself."""
    failing = Failing("DeleteItem", "ProvisionedThroughputExceededException")

    def broken(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        raise TimeoutError("provider timed out")

    with pytest.raises(TimeoutError):
        idempotent_http(broken, mode=Mode.CLAIM_FIRST, engine=failing.engine())(rest_event({"a": 1}), LambdaContext())


def test_a_throttled_sqs_record_is_a_batch_item_failure_of_its_own(ddb):
    failing = Failing("TransactWriteItems", "TransactionCanceledException", reasons("ThrottlingError"))

    def consume(message: Any, txn: Transaction) -> None:
        txn.update({"pk": "balance"}, "ADD n :one", table=ORDERS, values={":one": 1})

    handler = idempotent_sqs(consume, subscriber="billing", engine=failing.engine())
    record = sqs_record({"n": 1}, message_id="m-1")
    assert handler({"Records": [record]}, LambdaContext()) == {"batchItemFailures": [{"itemIdentifier": "m-1"}]}


@pytest.mark.parametrize(("reason", "error"), [("ThrottlingError", "StoreUnavailableError"),
                                               ("TransactionConflict", "TransactionRaced"),
                                               ("ValidationError", "StoreRejectedError")])
def test_step_functions_sees_named_errors(ddb, reason, error):
    from retrysafe.workflow import RETRIABLE_ERRORS

    failing = Failing("TransactWriteItems", "TransactionCanceledException", reasons(reason, at=0))
    handler = idempotent_task(lambda task_input, context, txn: {"ok": True}, engine=failing.engine())
    with pytest.raises(Exception) as caught:
        handler(payload("Charge", {"amount": 1}), LambdaContext())
    assert type(caught.value).__name__ == error
    assert (error in {e.__name__ for e in RETRIABLE_ERRORS}) == (error != "StoreRejectedError")
