"""The retrysafe constructs added to an existing CDK app (the snippet of the constructs page)."""

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from constructs import Construct

HANDLERS = str(Path(__file__).parent)              # the folder with the handler modules


class ExistingStack(Stack):
    """A stack that already has an orders table, an event bus and a queue with a DLQ."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        orders = dynamodb.Table(self, "Orders", partition_key=dynamodb.Attribute(
            name="pk", type=dynamodb.AttributeType.STRING), billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST)
        my_bus = events.EventBus(self, "Bus")
        dlq = sqs.Queue(self, "BillingDlq", enforce_ssl=True)
        my_queue = sqs.Queue(self, "BillingQueue", enforce_ssl=True, visibility_timeout=Duration.minutes(1),
                             dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=5))
        self.add_idempotency(orders, my_bus, my_queue)

    # --8<-- [start:constructs]
    def add_idempotency(self, orders: dynamodb.ITable, my_bus: events.IEventBus, my_queue: sqs.Queue) -> None:
        from retrysafe_cdk import (
            IdempotencyTable,
            IdempotentFunction,
            IdempotentQueueConsumer,
            IdempotentRestApi,
            Outbox,
            OutboxTarget,
        )

        code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])
        table = IdempotencyTable(self, "Idempotency")     # or IdempotencyTable(..., existing_table=my_table)
        create = IdempotentFunction(self, "CreateOrder", table=table, handler="http_atomic.handler",
                                    code=code, business_tables=[orders])
        api = IdempotentRestApi(self, "Api", iam_authorization=True)   # or authorizer=my_authorizer
        api.add_route("POST", "/orders", create)
        Outbox(self, "Outbox", table=table, target=OutboxTarget.event_bus(my_bus))
        billing = IdempotentFunction(self, "Billing", table=table, handler="sqs_consumer.handler", code=code)
        IdempotentQueueConsumer(self, "BillingConsumer", function=billing,
                                existing_queue=my_queue)         # my_queue needs a DLQ
    # --8<-- [end:constructs]
