"""What mypy accepts and refuses of the public API's options (checked by ``make typecheck``, never run).

Modelled on stamina's ``tests/typing/api.py``: each correct use must type-check, and each
misspelled, mistyped or missing option must be a mypy error. The errors are silenced with
``# type: ignore[<code>]`` and mypy runs with ``warn_unused_ignores``: the day a misspelling
stops being an error, its ``type: ignore`` is unused and ``make typecheck`` fails.

To cover a new decorator, add a block like the ones below: the bare form (when no option is
required), the call form with every option, a misspelled option, a mistyped one, and the
handler signature it refuses.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, assert_type

from retrysafe import (
    DynamoDBChange,
    DynamoStore,
    Engine,
    IdempotencyMiddleware,
    KinesisMessage,
    Message,
    Mode,
    PowertoolsCutover,
    ReplayInfo,
    Tenant,
    Transaction,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_function,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
    idempotent_task,
    names,
    register_lambda_context,
)
from retrysafe.errors import BusinessConditionFailedError
from retrysafe.http import HttpLambdaHandler, HttpRequest, authorizer_tenant, default_tenant
from retrysafe.sqs import SqsLambdaHandler
from retrysafe.stepfunctions import TaskFunction, TaskRequest, state_machine_tenant
from retrysafe.testing import DrillContext
from retrysafe.webhook import GitHub, Receipt, WebhookReceiver

store = DynamoStore("idempotency")
engine = Engine(store)


def http_handler(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
    return {"statusCode": 200, "body": ""}


def record_handler(message: Message, txn: Transaction) -> None:
    pass


def on_conflict(error: BusinessConditionFailedError, event: Any) -> dict[str, Any]:
    return {"statusCode": 200, "body": ""}


# -- @idempotent_http -----------------------------------------------------------------------------

@idempotent_http
def bare_http(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
    return {"statusCode": 200}


@idempotent_http(operation="CreateOrder", mode=Mode.CLAIM_FIRST, header=names.IDEMPOTENCY_KEY_HEADER, key_required=False,
                 tenant=authorizer_tenant(claims=("tenant_id",)), fingerprint_query=("page",),
                 replay_headers=("location",), horizon_seconds=86_400 * 7, wait_for_in_flight=1.5,
                 on_state_conflict=on_conflict, retry_hints=False, store=store, engine=engine)
def every_http_option(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
    return {"statusCode": 201}


http_lambda: HttpLambdaHandler = idempotent_http(http_handler, mode="claim_first", tenant=None)
idempotent_http()(http_handler)
idempotent_http(http_handler, operaton="CreateOrder")  # type: ignore[call-overload]
idempotent_http(operaton="CreateOrder")  # type: ignore[call-overload]
idempotent_http(http_handler, mode=3)  # type: ignore[call-overload]
idempotent_http(http_handler, wait_for_in_flight="1s")  # type: ignore[call-overload]
idempotent_http(http_handler, "CreateOrder")  # type: ignore[call-overload]
idempotent_http(http_handler, retry_hint=False)  # type: ignore[call-overload]
idempotent_http(http_handler, retry_hints="no")  # type: ignore[call-overload]
idempotent_http(http_handler, lease_seconds=30.0)
idempotent_http(http_handler, lease_seconds="30")  # type: ignore[call-overload]


# -- tenant=: one type, Tenant[<the adapter's request>] -----------------------------------------


def gateway_account(request: HttpRequest) -> str | None:
    return request.header("X-Gateway-Account")


def task_account(request: TaskRequest) -> str | None:
    return request.state_machine


def numbered(request: HttpRequest) -> int:
    return 7


http_tenant: Tenant[HttpRequest] = gateway_account
task_tenant: Tenant[TaskRequest] = "payments"
idempotent_http(http_handler, tenant="acme")
idempotent_http(http_handler, tenant=gateway_account)
idempotent_http(http_handler, tenant=lambda request: request.header("X-Gateway-Account"))
idempotent_http(http_handler, tenant=http_tenant)
idempotent_http(http_handler, tenant=7)  # type: ignore[call-overload]
idempotent_http(http_handler, tenant=numbered)  # type: ignore[arg-type]
idempotent_http(http_handler, tenant=task_account)  # type: ignore[arg-type]  # another adapter's request
IdempotencyMiddleware(tenant="acme", lease_seconds=10.0)
IdempotencyMiddleware(tenant=gateway_account)
IdempotencyMiddleware(tenant=task_account)  # type: ignore[arg-type]
IdempotencyMiddleware(lease_seconds="10")  # type: ignore[arg-type]
register_lambda_context(DrillContext())
sqs_not_http: SqsLambdaHandler = idempotent_http(http_handler)  # type: ignore[assignment]

# -- IdempotencyMiddleware ------------------------------------------------------------------------

IdempotencyMiddleware()
IdempotencyMiddleware(operation="CreateOrder", mode="atomic", key_required=True, tenant=None,
                      horizon_seconds=86_400, wait_for_in_flight=0.5, on_state_conflict=on_conflict, retry_hints=True,
                      store=store)
IdempotencyMiddleware(retry_hints="no")  # type: ignore[arg-type]
IdempotencyMiddleware(operaton="CreateOrder")  # type: ignore[call-arg]
IdempotencyMiddleware(replay_headers=7)  # type: ignore[arg-type]
IdempotencyMiddleware("CreateOrder")  # type: ignore[call-arg]  # options are keyword-only

# -- @idempotent_sqs ------------------------------------------------------------------------------


def key_of(message: Message) -> str:
    return message.message_id


@idempotent_sqs(subscriber="billing")
def consume(message: Message, txn: Transaction) -> None:
    pass


@idempotent_sqs(subscriber="billing", operation="Invoice", mode=Mode.CLAIM_FIRST, key=key_of, fifo=True,
                lease_seconds=30.0, horizon_seconds=86_400, retry_hints=False, store=store, engine=engine)
def every_sqs_option(message: Message, txn: Transaction) -> None:
    pass


sqs_lambda: SqsLambdaHandler = idempotent_sqs(record_handler, subscriber="billing")
idempotent_sqs(record_handler)  # the subscriber defaults to the deployed function
idempotent_sqs(record_handler, subscribr="billing")  # type: ignore[call-overload]
idempotent_sqs(subscribr="billing")  # type: ignore[call-overload]
idempotent_sqs(record_handler, subscriber="billing", operaton="Invoice")  # type: ignore[call-overload]
idempotent_sqs(record_handler, subscriber="billing", fifo="yes")  # type: ignore[call-overload]
idempotent_sqs(record_handler, subscriber="billing", retry_hint=False)  # type: ignore[call-overload]
idempotent_sqs(http_handler, subscriber="billing")  # type: ignore[arg-type]

# -- @idempotent_task -----------------------------------------------------------------------------


@idempotent_task
def bare_task(task_input: Any, context: Any, txn: Transaction) -> Any:
    return task_input


@idempotent_task(tenant="payments", operation="Charge", horizon_seconds=86_400 * 30, lease_seconds=60.0,
                 store=store, engine=engine)
def every_task_option(task_input: Any, context: Any, txn: Transaction) -> Any:
    return task_input


task_lambda: TaskFunction = idempotent_task(http_handler, operation="Charge")
idempotent_task(http_handler, lease="60")  # type: ignore[call-overload]
idempotent_task(opration="Charge")  # type: ignore[call-overload]
idempotent_task(http_handler, lease_seconds="60")  # type: ignore[call-overload]
idempotent_task(record_handler)  # type: ignore[arg-type]
idempotent_task(http_handler, tenant=None)
idempotent_task(http_handler, tenant=state_machine_tenant)
idempotent_task(http_handler, tenant=lambda request: request.state_machine)
idempotent_task(http_handler, tenant=task_tenant)
idempotent_task(http_handler, tenant=default_tenant)  # type: ignore[arg-type]  # an HTTP request's
idempotent_task(http_handler, tenant=3)  # type: ignore[call-overload]

# -- WebhookReceiver ------------------------------------------------------------------------------


def on_receipt(receipt: Receipt, txn: Transaction) -> None:
    pass


WebhookReceiver(GitHub(), tenant="github", secrets=lambda: [b"secret"], on_receipt=on_receipt,
                max_body_bytes=1 << 20, horizon_seconds=86_400, store=store, engine=engine)
WebhookReceiver(GitHub(), sorce="github")  # type: ignore[call-arg]
WebhookReceiver(GitHub(), max_body_bytes="1MB")  # type: ignore[arg-type]
WebhookReceiver()  # type: ignore[call-arg]
WebhookReceiver(GitHub(), tenant=None)
WebhookReceiver(GitHub(), tenant=gateway_account)
WebhookReceiver(GitHub(), tenant=3)  # type: ignore[arg-type]
WebhookReceiver(GitHub(), tenant=task_account)  # type: ignore[arg-type]

# -- @idempotent (any event) ----------------------------------------------------------------------


@idempotent(subscriber="shipping", key="detail.order_id", fingerprint="detail", operation="Ship",
            mode=Mode.CLAIM_FIRST, key_required=False, lease_seconds=30.0, horizon_seconds=86_400,
            store=store, engine=engine)
def every_event_option(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
    return {}


idempotent(subscriber="shipping")(http_handler)
idempotent(subscribr="shipping")  # type: ignore[call-arg]
idempotent(subscriber="shipping", kye="detail.order_id")  # type: ignore[call-arg]
idempotent(subscriber="shipping", key_required="no")  # type: ignore[arg-type]
idempotent()  # the subscriber defaults to the deployed function
idempotent("shipping")  # type: ignore[call-arg]  # options are keyword-only

# -- @idempotent_function (a plain function) ------------------------------------------------------


@idempotent_function(data_keyword_argument="order", subscriber="payments", key="id", fingerprint="amount",
                     operation="Charge", mode="claim_first", lease_seconds=30.0, horizon_seconds=86_400,
                     store=store, engine=engine)
def charge(order: dict[str, Any]) -> dict[str, Any]:
    return order


idempotent_function(data_keyword_argument="order", namespac="payments")  # type: ignore[call-arg]
idempotent_function(subscriber="payments")  # type: ignore[call-arg]  # data_keyword_argument is required
idempotent_function(data_keyword_argument="order", subscriber="payments", mode=2)  # type: ignore[arg-type]

# -- @idempotent_kinesis, @idempotent_dynamodb_stream ---------------------------------------------


@idempotent_kinesis(subscriber="ledger", operation="Book", mode=Mode.ATOMIC, key="kinesis.partitionKey",
                    fingerprint="content", horizon_seconds=86_400, store=store, engine=engine)
def on_record(message: KinesisMessage, txn: Transaction) -> None:
    pass


@idempotent_dynamodb_stream(subscriber="index", skip_ttl_removals=True)
def on_change(change: DynamoDBChange, txn: Transaction) -> None:
    pass


idempotent_kinesis(subscribr="ledger")  # type: ignore[call-arg]
idempotent_kinesis(subscriber="ledger", horizon_seconds="1d")  # type: ignore[arg-type]
idempotent_kinesis(subscriber="ledger")(record_handler)  # type: ignore[arg-type]  # an SQS handler
idempotent_dynamodb_stream(subscriber="index", skip_ttl_removal=True)  # type: ignore[call-arg]
idempotent_dynamodb_stream(subscriber="index")(on_record)  # type: ignore[arg-type]  # a Kinesis handler

# -- powertools_cutover= (PowertoolsCutover) ------------------------------------------------------

cutover = PowertoolsCutover(function_name="app.lambda_handler", event_key_jmespath='headers."idempotency-key"',
                            payload_validation_jmespath="powertools_json(body)", hash_function="sha256",
                            key_prefix=None, table_name="old", until=1.9e9,
                            key_attr="id", sort_key_attr=None, static_pk_value=None, expiry_attr="expiration",
                            in_progress_expiry_attr="in_progress_expiration", status_attr="status", data_attr="data",
                            validation_key_attr="validation", lambda_function_name="orders-api")
PowertoolsCutover(function_name="app.h", event_key_jmespth="body")  # type: ignore[call-arg]
PowertoolsCutover(function_name="app.h", until="tomorrow")  # type: ignore[arg-type]
PowertoolsCutover("app.h")  # type: ignore[call-arg]  # options are keyword-only
idempotent_http(http_handler, powertools_cutover=cutover)
idempotent_http(http_handler, powertools_cutovr=cutover)  # type: ignore[call-overload]
idempotent_http(http_handler, powertools_cutover="old-table")  # type: ignore[call-overload]
IdempotencyMiddleware(powertools_cutover=cutover)
IdempotencyMiddleware(powertools_cutovr=cutover)  # type: ignore[call-arg]
idempotent_sqs(record_handler, subscriber="billing", powertools_cutover=cutover)
idempotent_sqs(record_handler, subscriber="billing", powertools_cutovr=cutover)  # type: ignore[call-overload]
idempotent_function(data_keyword_argument="order", subscriber="payments", powertools_cutover=cutover)
idempotent_function(data_keyword_argument="order", subscriber="payments",
                    powertools_cutovr=cutover)  # type: ignore[call-arg]


# -- on_replay= (ReplayHook: hook(answer, ReplayInfo) -> answer), on every adapter ------------------


def add_expiry(response: dict[str, Any], info: ReplayInfo) -> dict[str, Any]:
    return {**response, "headers": {**response["headers"], "X-Idempotency-Expires": str(info.expires_at)}}


def count_replay(result: Any, info: ReplayInfo) -> Any:
    return result


def key_only(response: Any) -> Any:
    return response


idempotent_http(http_handler, on_replay=add_expiry)
IdempotencyMiddleware(on_replay=count_replay)
idempotent(on_replay=count_replay)
idempotent_function(data_keyword_argument="order", on_replay=count_replay)
idempotent_sqs(record_handler, on_replay=count_replay)
idempotent_kinesis(on_replay=count_replay)
idempotent_dynamodb_stream(on_replay=count_replay)
idempotent_task(http_handler, on_replay=count_replay)
WebhookReceiver(GitHub(), on_replay=add_expiry)
idempotent_http(http_handler, on_replay=key_only)  # type: ignore[arg-type]  # the hook takes (answer, info)
idempotent_sqs(record_handler, on_replai=count_replay)  # type: ignore[call-overload]
idempotent(on_replay="header")  # type: ignore[arg-type]
WebhookReceiver(GitHub(), on_replay=key_only)  # type: ignore[arg-type]
ReplayInfo("idem#x", 1, source="dynamo")  # type: ignore[arg-type]  # "retrysafe" or "powertools"


# -- the mode follows the handler: one without the transaction is a claim-first handler ------------

@idempotent_http
def http_without_txn(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"statusCode": 200, "body": "{}"}


@idempotent_sqs
def sqs_without_txn(message: Message) -> None:
    pass


@idempotent()
def event_without_txn(event: Any, context: Any) -> None:
    pass


# -- @idempotent_http(key=...) on a Powertools handler as it was ------------------------------------------

def powertools_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return {"statusCode": 201}


body_keyed: HttpLambdaHandler = idempotent_http(powertools_handler, key="powertools_json(body).order_id")
idempotent_http(key=lambda event: event["body"], tenant=None)(powertools_handler)
idempotent_http(powertools_handler, key=3)  # type: ignore[call-overload]


# -- async def handlers and functions ----------------------------------------------------------------------
# A decorated async handler is the sync Lambda handler (its result, not a coroutine); an async function
# under @idempotent_function stays awaitable, with the same result type.


@idempotent(key="detail.order_id")
async def async_event(event: Any, context: Any, txn: Transaction) -> dict[str, int]:
    return {}


@idempotent(key="detail.order_id")
async def async_event_without_txn(event: Any, context: Any) -> int:
    return 1


assert_type(async_event({}, None), dict[str, int])
assert_type(async_event_without_txn({}, None), int)
assert_type(event_without_txn({}, None), None)


@idempotent_function(data_keyword_argument="order")
async def async_charge(order: dict[str, Any]) -> dict[str, Any]:
    return order


async def awaits_charge() -> dict[str, Any]:
    return await async_charge(order={})


def starts_charge() -> Coroutine[Any, Any, dict[str, Any]]:
    return async_charge(order={})


async def awaits_the_wrong_type() -> str:
    return await async_charge(order={})  # type: ignore[return-value]


@idempotent_sqs
async def async_message(message: Message, txn: Transaction) -> None:
    pass


@idempotent_kinesis()
async def async_record(message: KinesisMessage) -> None:
    pass


@idempotent_dynamodb_stream()
async def async_change(change: DynamoDBChange, txn: Transaction) -> None:
    pass


@idempotent_http(operation="CreateOrder")
async def async_http(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
    return {"statusCode": 201}


@idempotent_task
async def async_task(state_input: Any, context: Any, txn: Transaction) -> dict[str, Any]:
    return {}


async def async_receipt(receipt: Receipt, txn: Transaction) -> None:
    pass


WebhookReceiver(GitHub(), on_receipt=async_receipt)
