"""A user's CDK app: the idempotency table, a greetings table, the handler as an IdempotentFunction, a REST API."""

from aws_cdk import App, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentRestApi

app = App(outdir="cdk.out")
stack = Stack(app, "Greetings")                    # environment-agnostic: the sandbox picks account and region
table = IdempotencyTable(stack, "Idempotency")
greetings = dynamodb.Table(stack, "Greetings", table_name="greetings", removal_policy=RemovalPolicy.DESTROY,
                           partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
                           billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST)
create = IdempotentFunction(stack, "CreateGreeting", table=table, handler="greetings.handler",
                            code=lambda_.Code.from_asset("handlers", exclude=["__pycache__", "*.pyc"]),
                            business_tables=[greetings])
IdempotentRestApi(stack, "Api", iam_authorization=True).add_route("POST", "/greetings", create)
app.synth()
