"""The orders service: an example stack built from the retrysafe constructs.

- ``POST /orders`` (atomic) and ``POST /orders/{id}/payments`` (claim-first, simulated provider)
  behind a Lambda TOKEN authorizer that supplies the tenant
- ``OrderPlaced`` / ``PaymentCaptured`` through the outbox to an EventBridge bus
- an inventory consumer on SQS, fed ``OrderPlaced`` by an EventBridge rule
- shipping, an EventBridge rule target (``OrderPlaced``, invoked asynchronously), writing shipments to a
  table whose DynamoDB stream feeds the shipping notices consumer
- a GitHub webhook receiver whose receipts reach a worker through the outbox and a queue
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentEventRule,
    IdempotentFunction,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    IdempotentStreamConsumer,
    Outbox,
    OutboxTarget,
    WebhookReceiver,
    acknowledge,
    python_function,
)

from constructs import Construct
from examples.tables import business_table

HANDLERS = Path(__file__).parent / "handlers"


class OrdersStack(Stack):
    """The example orders service (see the module docstring)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        code = lambda_.Code.from_asset(str(HANDLERS), exclude=["__pycache__", "*.pyc"])
        orders, inventory = business_table(self, "Orders"), business_table(self, "Inventory")
        shipments = business_table(self, "Shipments", stream=dynamodb.StreamViewType.NEW_IMAGE)
        table = IdempotencyTable(self, "Idempotency")
        bus = events.EventBus(self, "Bus")
        target = OutboxTarget.event_bus(bus, source="orders")
        env = {"ORDERS_TABLE": orders.table_name, "INVENTORY_TABLE": inventory.table_name,
               "SHIPMENTS_TABLE": shipments.table_name}

        def function(construct_id: str, handler: str, business: list[dynamodb.ITable]) -> IdempotentFunction:
            return IdempotentFunction(self, construct_id, table=table, code=code, handler=handler,
                                      business_tables=business, function_props=lambda_.FunctionOptions(environment=env))

        api = IdempotentRestApi(self, "Api", authorizer=self._authorizer(code), rest_api_props=apigw.RestApiProps(
            default_cors_preflight_options=apigw.CorsOptions(allow_origins=["https://shop.example.com"]),
            cloud_watch_role=True))
        api.add_route("POST", "/orders", function("CreateOrder", "orders.handler", [orders]))
        api.add_route("POST", "/orders/{id}/payments", function("CapturePayment", "payments.handler", [orders]))

        Outbox(self, "Outbox", table=table, target=target)
        reserve = function("ReserveStock", "inventory.handler", [inventory])
        stock = IdempotentQueueConsumer(self, "InventoryQueue", function=reserve)
        placed = events.EventPattern(source=["orders"], detail_type=["OrderPlaced"])
        events.Rule(self, "OrderPlacedToInventory", event_bus=bus, event_pattern=placed,
                    targets=[events_targets.SqsQueue(stock.queue)])

        IdempotentEventRule(self, "ShipOrders", function=function("ShipOrder", "shipping.handler", [shipments]),
                            rule_props=events.RuleProps(event_bus=bus, event_pattern=placed))
        # Only the shipments' own INSERTs: the notices the consumer writes to the same table stay out.
        IdempotentStreamConsumer(
            self, "ShippingNotices", function=function("NotifyShipped", "notifications.handler", [shipments]),
            existing_table=shipments, batch_size=10, filters=[lambda_.FilterCriteria.filter({
                "eventName": lambda_.FilterRule.is_equal("INSERT"),
                "dynamodb": {"Keys": {"pk": {"S": lambda_.FilterRule.begins_with("shipment#")}}}})])

        WebhookReceiver(self, "GitHub", table=table, api=api, outbox_target=target,
                        worker=function("ApplyPush", "github.handler", [orders]))
        table.add_fencing_alarm()
        CfnOutput(self, "ApiUrl", value=api.url)

    def _authorizer(self, code: lambda_.Code) -> apigw.TokenAuthorizer:
        scope = Construct(self, "Authorizer")
        secret = secretsmanager.Secret(scope, "TokenSecret", description="HMAC key of the example's bearer tokens",
                                       generate_secret_string=secretsmanager.SecretStringGenerator(
                                           password_length=48, exclude_punctuation=True))
        acknowledge(secret, "AwsSolutions-SMG4",
                    "Example token-signing key; rotating it invalidates issued tokens, so it is rotated by hand.")
        function, role, _ = python_function(scope, code=code, handler="authorizer.handler",
                                            function_props=lambda_.FunctionOptions(
                                                environment={"TOKEN_SECRET_ARN": secret.secret_arn},
                                                timeout=Duration.seconds(5)))
        secret.grant_read(role)
        return apigw.TokenAuthorizer(scope, "Token", handler=function, results_cache_ttl=Duration.minutes(5))
