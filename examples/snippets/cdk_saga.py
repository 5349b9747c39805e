"""A Step Functions saga of idempotent tasks (the snippet of the constructs page)."""

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

HANDLERS = str(Path(__file__).parent)


class SagaStack(Stack):
    """An order saga: reserve, charge, confirm, with compensations."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        from retrysafe_cdk import IdempotencyTable, IdempotentFunction

        self.table = table = IdempotencyTable(self, "Idempotency")
        code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])

        def task(name: str) -> IdempotentFunction:
            return IdempotentFunction(self, name, table=table, code=code, handler=f"task.{name}")

        reserve, release, refund, confirm = (task(n) for n in ("Reserve", "Release", "Refund", "Confirm"))
        api_role = iam.Role(self, "ApiRole", assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"))
        # --8<-- [start:saga]
        from retrysafe_cdk import Compensation, Saga, SagaStep, idempotent_invoke

        charge = IdempotentFunction(self, "Charge", table=table, code=code, handler="task.charge_payment")
        state = idempotent_invoke(self, "ChargePayment", charge, result_path="$.payment",
                                  business_errors=["PaymentDeclined"])   # a LambdaInvoke; add .next / .add_catch

        saga = Saga(self, "OrderSaga", business_errors=["PaymentDeclined", "OutOfStock"], steps=[
            SagaStep("ReserveInventory", reserve, "$.reservation", compensate_on=["OutOfStock"],
                     compensation=Compensation("ReleaseInventory", release, "$.release")),
            SagaStep("ChargePayment", charge, "$.payment", compensate_on=["PaymentDeclined"],
                     compensation=Compensation("RefundPayment", refund, "$.refund")),
            SagaStep("ConfirmOrder", confirm, "$.confirmation"),          # compensate_on: any error
        ])
        saga.state_machine.grant_start_execution(api_role)
        # --8<-- [end:saga]
        self.state = state
        self.saga = saga
