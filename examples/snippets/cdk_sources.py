"""Idempotent functions behind an EventBridge rule, a Kinesis stream, a DynamoDB stream and an SNS topic
(the snippets of the constructs page)."""

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentEventRule,
    IdempotentFunction,
    IdempotentStreamConsumer,
    IdempotentTopicSubscription,
)

from constructs import Construct

HANDLERS = str(Path(__file__).parent)              # the folder with the handler modules


class SourcesStack(Stack):
    """A stack with an orders bus and table; each source gets its own idempotent function."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.table = IdempotencyTable(self, "Idempotency")
        self.code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])
        my_bus = events.EventBus(self, "Bus")
        orders = dynamodb.Table(self, "Orders", partition_key=dynamodb.Attribute(
            name="pk", type=dynamodb.AttributeType.STRING), billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES)
        self.rule = self.add_event_rule(my_bus)
        self.clicks, self.changes = self.add_stream_consumers(orders)
        self.receipts = self.add_topic_subscription()

    def function(self, name: str, handler: str) -> IdempotentFunction:
        """An idempotent function of this stack's code."""
        return IdempotentFunction(self, name, table=self.table, code=self.code, handler=handler)

    # --8<-- [start:event_rule]
    def add_event_rule(self, my_bus: events.IEventBus) -> IdempotentEventRule:
        return IdempotentEventRule(
            self, "OrderPlaced", function=self.function("Fulfil", "fulfil.handler"),
            rule_props=events.RuleProps(event_bus=my_bus, event_pattern=events.EventPattern(
                source=["shop.orders"], detail_type=["OrderPlaced"])),
            max_event_age=Duration.hours(24),          # EventBridge's retries (the default)
        )                                              # or existing_rule=my_rule
    # --8<-- [end:event_rule]

    # --8<-- [start:stream_consumers]
    def add_stream_consumers(self, orders: dynamodb.Table) -> tuple[IdempotentStreamConsumer, ...]:
        clicks = IdempotentStreamConsumer(
            self, "Clicks", function=self.function("Click", "clicks.handler"),
            stream_props=kinesis.StreamProps(retention_period=Duration.days(7)),  # or existing_stream=
        )
        changes = IdempotentStreamConsumer(
            self, "OrderChanges", function=self.function("Change", "order_changes.handler"),
            existing_table=orders,                     # the table's DynamoDB stream
        )
        return clicks, changes
    # --8<-- [end:stream_consumers]

    # --8<-- [start:topic_subscription]
    def add_topic_subscription(self) -> IdempotentTopicSubscription:
        return IdempotentTopicSubscription(
            self, "Receipts", function=self.function("Receipt", "receipts.handler"),
            filter_policy={"kind": sns.SubscriptionFilter.string_filter(allowlist=["receipt"])},
        )                                              # or existing_topic=my_topic
    # --8<-- [end:topic_subscription]
