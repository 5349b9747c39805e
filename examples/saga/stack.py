"""The order saga: a Step Functions state machine of idempotent Lambda tasks, built from the retrysafe constructs.

ReserveInventory -> ChargePayment -> ConfirmOrder -> Succeeded. A declined payment
releases the inventory; a failed confirmation refunds the payment, then releases the
inventory; out of stock ends the saga with nothing to undo. The payment provider is the
fake in ``handlers/provider.py``, with its idempotency-key ledger in a DynamoDB table.
``OrderConfirmed`` goes through the outbox to an EventBridge bus.

Start an execution with ``{"orderId": "o-1", "sku": "sku-1", "quantity": 1, "amount": 4200}``
after putting ``{"pk": "stock#sku-1", "available": 10}`` into the orders table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from retrysafe_cdk import (
    Compensation,
    IdempotencyTable,
    IdempotentFunction,
    Outbox,
    OutboxTarget,
    Saga,
    SagaStep,
)

from constructs import Construct
from examples.tables import business_table

ROOT = Path(__file__).parent
ORDERS_ENV = "SAGA_ORDERS_TABLE"
LEDGER_ENV = "PROVIDER_LEDGER_TABLE"
BUSINESS_ERRORS = ("PaymentDeclined", "OutOfStock")
#: What each task does to the orders table and the provider's ledger (read from ``handlers/``).
ORDERS_ACTIONS = {
    "reserve_inventory": ("GetItem", "UpdateItem", "PutItem"),
    "charge_payment": ("PutItem", "UpdateItem"),
    "confirm_order": ("PutItem",),
    "refund_payment": ("UpdateItem",),
    "release_inventory": ("GetItem", "UpdateItem"),
}
LEDGER_ACTIONS = {"charge_payment": ("PutItem",), "refund_payment": ("PutItem",)}


class SagaStack(Stack):
    """The example order saga (see the module docstring)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        code = lambda_.Code.from_asset(str(ROOT), exclude=["__pycache__", "*.pyc", "stack.py"])
        orders, ledger = business_table(self, "Orders"), business_table(self, "ProviderLedger")
        table = IdempotencyTable(self, "Idempotency")
        env = {ORDERS_ENV: orders.table_name, LEDGER_ENV: ledger.table_name}

        def task(construct_id: str, handler: str) -> IdempotentFunction:
            function = IdempotentFunction(self, construct_id, table=table, code=code,
                                          handler=f"handlers.tasks.{handler}",
                                          function_props=lambda_.FunctionOptions(environment=env))
            for business, actions in ((orders, ORDERS_ACTIONS), (ledger, LEDGER_ACTIONS)):
                if handler in actions:
                    iam.Grant.add_to_principal(grantee=function.role, resource_arns=[business.table_arn],
                                               actions=[f"dynamodb:{action}" for action in actions[handler]])
            return function

        saga = Saga(self, "OrderSaga", business_errors=BUSINESS_ERRORS, steps=[
            SagaStep("ReserveInventory", task("Reserve", "reserve_inventory"), "$.reservation",
                     compensate_on=["OutOfStock"],
                     compensation=Compensation("ReleaseInventory", task("Release", "release_inventory"),
                                               "$.release")),
            SagaStep("ChargePayment", task("Charge", "charge_payment"), "$.payment",
                     compensate_on=["PaymentDeclined"],
                     compensation=Compensation("RefundPayment", task("Refund", "refund_payment"), "$.refund")),
            SagaStep("ConfirmOrder", task("Confirm", "confirm_order"), "$.confirmation"),
        ])
        Outbox(self, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(self, "Bus"),
                                                                          source="orders.saga"))
        table.add_fencing_alarm()
        CfnOutput(self, "StateMachineArn", value=saga.state_machine.state_machine_arn)
        CfnOutput(self, "OrdersTableName", value=orders.table_name)
