"""A stack with every event source construct: an EventBridge rule, SNS subscriptions (one to a SnapStart
function), a new Kinesis stream, an imported one, and an existing table's DynamoDB stream."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentEventRule,
    IdempotentFunction,
    IdempotentStreamConsumer,
    IdempotentTopicSubscription,
)

from app import feature_flags

STACK = "Sourced"
HANDLERS = "examples/orders/handlers"
IMPORTED_STREAM = "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks"


def build(outdir: str) -> cdk.App:
    """The app (cdk-nag attached, not yet synthesized)."""
    app = cdk.App(context=feature_flags(), outdir=outdir)
    stack = cdk.Stack(app, STACK, env=cdk.Environment(account="123456789012", region="eu-west-1"))
    table = IdempotencyTable(stack, "Idempotency")
    code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])

    def function(name: str, handler: str, *, snap_start: bool = False) -> IdempotentFunction:
        return IdempotentFunction(stack, name, table=table, code=code, handler=handler, snap_start=snap_start)

    bus = events.EventBus(stack, "Bus")
    IdempotentEventRule(stack, "OrderPlaced", function=function("Fulfil", "events.fulfil"),
                        rule_props=events.RuleProps(event_bus=bus, event_pattern=events.EventPattern(
                            source=["shop.orders"], detail_type=["OrderPlaced"])))
    receipts = IdempotentTopicSubscription(stack, "Receipts", function=function("Receipt", "sns.receipt"))
    # a producer of the topic: its grant (the topic's KMS key included) must pass cdk-nag without acknowledgements
    receipts.grant_publish(iam.Role(stack, "ReceiptProducer", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com")))
    own_topic = sns.Topic(stack, "OwnTopic", enforce_ssl=True,
                          master_key=kms.Key(stack, "OwnTopicKey", enable_key_rotation=True))
    own_dlq = sqs.Queue(stack, "OwnDlq", retention_period=Duration.days(7), enforce_ssl=True,
                        encryption=sqs.QueueEncryption.SQS_MANAGED)
    IdempotentTopicSubscription(stack, "Refunds", function=function("Refund", "sns.refund", snap_start=True),
                                existing_topic=own_topic, existing_dead_letter_queue=own_dlq)
    IdempotentStreamConsumer(stack, "Clicks", function=function("Click", "kinesis.click"))
    IdempotentStreamConsumer(stack, "Imported", function=function("Import", "kinesis.imported"),
                             existing_stream=kinesis.Stream.from_stream_arn(stack, "ClickStream", IMPORTED_STREAM),
                             retention_period=Duration.days(3))
    orders = dynamodb.Table(
        stack, "Orders", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST, stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True))
    IdempotentStreamConsumer(stack, "OrderChanges", function=function("Change", "ddb.change"), existing_table=orders)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app
