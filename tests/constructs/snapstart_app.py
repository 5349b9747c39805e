"""A stack where every retrysafe integration invokes a SnapStart function: API routes (REST and HTTP), a queue
consumer, the outbox relay, a webhook receiver and a saga's tasks."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from cdk_nag import AwsSolutionsChecks
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentFunction,
    IdempotentHttpApi,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    Outbox,
    OutboxTarget,
    Saga,
    SagaStep,
    WebhookReceiver,
)

from app import feature_flags

STACK = "SnapStarted"
HANDLERS = "examples/orders/handlers"
SAGA = "examples/saga"


def build(outdir: str) -> cdk.App:
    """The app (cdk-nag attached, not yet synthesized)."""
    app = cdk.App(context=feature_flags(), outdir=outdir)
    stack = cdk.Stack(app, STACK)
    table = IdempotencyTable(stack, "Idempotency")
    code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])
    orders = IdempotentFunction(stack, "Orders", table=table, code=code, handler="orders.handler", snap_start=True)
    rest = IdempotentRestApi(stack, "Rest", iam_authorization=True,
                             rest_api_props=apigw.RestApiProps(cloud_watch_role=True))
    rest.add_route("POST", "/orders", orders)
    IdempotentHttpApi(stack, "Http", authorizer=authorizers.HttpIamAuthorizer()).add_route("POST", "/orders", orders)
    worker = IdempotentFunction(stack, "Worker", table=table, code=code, handler="github.handler", snap_start=True)
    IdempotentQueueConsumer(stack, "Inventory", function=IdempotentFunction(
        stack, "Consumer", table=table, code=code, handler="inventory.handler", snap_start=True))
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"))
    Outbox(stack, "Outbox", table=table, target=target, snap_start=True)
    WebhookReceiver(stack, "Hooks", table=table, api=rest, worker=worker, outbox_target=target, snap_start=True)
    tasks = lambda_.Code.from_asset(SAGA, exclude=["__pycache__", "*.pyc", "stack.py"])
    Saga(stack, "Saga", steps=[SagaStep("Confirm", IdempotentFunction(
        stack, "Confirm", table=table, code=tasks, handler="handlers.tasks.confirm_order", snap_start=True),
        "$.confirmation")])
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app
