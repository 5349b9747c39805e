"""A stack that already has its own table, queue and event bus, with the retrysafe constructs added."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks
from retrysafe import names
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentFunction,
    IdempotentHttpApi,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    Outbox,
    OutboxPipe,
    OutboxTarget,
    WebhookReceiver,
)

from app import feature_flags

STACK = "Existing"
HANDLERS = "examples/orders/handlers"


def _queue(stack: cdk.Stack) -> sqs.Queue:
    dlq = sqs.Queue(stack, "OwnDlq", retention_period=Duration.days(7), enforce_ssl=True,
                    encryption=sqs.QueueEncryption.SQS_MANAGED)
    return sqs.Queue(stack, "OwnQueue", retention_period=Duration.days(2), visibility_timeout=Duration.minutes(3),
                     enforce_ssl=True, encryption=sqs.QueueEncryption.SQS_MANAGED,
                     dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=8))


def _table(stack: cdk.Stack) -> dynamodb.Table:
    table = dynamodb.Table(
        stack, "OwnTable", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST, time_to_live_attribute="exp",
        stream=dynamodb.StreamViewType.NEW_IMAGE, encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True))
    table.add_global_secondary_index(
        index_name=names.OUTBOX_INDEX, partition_key=dynamodb.Attribute(name=names.UNPUBLISHED_ATTRIBUTE, type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="at", type=dynamodb.AttributeType.STRING))
    return table


def build(outdir: str) -> cdk.App:
    """The app (cdk-nag attached, not yet synthesized)."""
    app = cdk.App(context=feature_flags(), outdir=outdir)
    stack = cdk.Stack(app, STACK)
    bus = events.EventBus(stack, "OwnBus")
    table = IdempotencyTable(stack, "Idempotency", existing_table=_table(stack))
    code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])
    handler = IdempotentFunction(stack, "Orders", table=table, code=code, handler="orders.handler",
                                 function_props=lambda_.FunctionOptions(timeout=Duration.seconds(20)))
    consumer = IdempotentFunction(stack, "Consumer", table=table, code=code, handler="inventory.handler",
                                  function_props=lambda_.FunctionOptions(timeout=Duration.seconds(30)))
    IdempotentQueueConsumer(stack, "OwnQueueConsumer", function=consumer, existing_queue=_queue(stack))

    rest = IdempotentRestApi(stack, "Rest", iam_authorization=True,
                             rest_api_props=apigw.RestApiProps(cloud_watch_role=True))
    rest.add_route("POST", "/orders", handler)
    http = IdempotentHttpApi(stack, "Http", authorizer=authorizers.HttpIamAuthorizer(),
                             http_api_props=apigwv2.HttpApiProps(cors_preflight=apigwv2.CorsPreflightOptions(
                                 allow_origins=["https://example.com"])))
    http.add_route("POST", "/orders", handler)

    target = OutboxTarget.event_bus(bus)
    Outbox(stack, "Outbox", table=table, target=target)
    topic = sns.Topic(stack, "OwnTopic", enforce_ssl=True,
                      master_key=kms.Key(stack, "TopicKey", enable_key_rotation=True))
    # One relay per table: the pipe publishes a second table's outbox, encrypted with a customer-managed key.
    keyed = IdempotencyTable(stack, "PipeIdempotency",
                             encryption_key=kms.Key(stack, "TableKey", enable_key_rotation=True))
    OutboxPipe(stack, "Pipe", table=keyed, target=OutboxTarget.topic(topic))
    IdempotentFunction(stack, "Keyed", table=keyed, code=code, handler="orders.handler")
    worker = IdempotentFunction(stack, "Worker", table=table, code=code, handler="github.handler")
    WebhookReceiver(stack, "Hooks", table=table, api=rest, worker=worker, outbox_target=target)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app
