"""A user's CDK app: the idempotency table, the handler as an IdempotentFunction, a REST API in front."""

from aws_cdk import App, Environment, Stack
from aws_cdk import aws_lambda as lambda_
from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentRestApi

app = App(outdir="cdk.out")
stack = Stack(app, "Greetings", env=Environment(account="111111111111", region="eu-west-1"))
table = IdempotencyTable(stack, "Idempotency")
create = IdempotentFunction(stack, "CreateGreeting", table=table, handler="greetings.handler",
                            code=lambda_.Code.from_asset("handlers", exclude=["__pycache__", "*.pyc"]))
IdempotentRestApi(stack, "Api", iam_authorization=True).add_route("POST", "/greetings", create)
app.synth()
