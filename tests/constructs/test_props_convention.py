"""Issue 27 item 4: one props convention. Every construct that takes an existing resource refuses ``existing_<x>``
together with ``<x>_props`` through one check, whose message names the ignored props and the fix."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
import retrysafe_cdk
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from aws_cdk.aws_apigatewayv2_integrations import HttpUrlIntegration
from retrysafe import names
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentEventRule,
    IdempotentFunction,
    IdempotentHttpApi,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    IdempotentStreamConsumer,
    IdempotentTopicSubscription,
    Outbox,
    OutboxPipe,
    OutboxTarget,
    Saga,
    SagaStep,
    WebhookReceiver,
    python_function,
)

from constructs import Construct

from .builders import inline_function, new_stack

MESSAGE = r"{existing}=Props/{resource} is given, so {props} would not apply .* Fix: "


def _bus(stack: cdk.Stack) -> OutboxTarget:
    return OutboxTarget.event_bus(events.EventBus(stack, "Bus"))


def _table(stack: cdk.Stack) -> None:
    own = dynamodb.Table(stack, "Own", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING))
    IdempotencyTable(stack, "Idempotency", existing_table=own, table_props={"deletion_protection": True},
                     logical_id="Pinned")


def _queue(stack: cdk.Stack) -> None:
    dlq = sqs.Queue(stack, "Own")
    IdempotentQueueConsumer(stack, "Consumer", function=inline_function(stack, IdempotencyTable(stack, "T")),
                            existing_dead_letter_queue=dlq,
                            dead_letter_queue_props=sqs.QueueProps(retention_period=Duration.days(3)))


def _http_api(stack: cdk.Stack) -> None:
    own = apigwv2.HttpApi(stack, "Own")
    IdempotentHttpApi(stack, "Api", authorizer=authorizers.HttpIamAuthorizer(), existing_http_api=own,
                      http_api_props=apigwv2.HttpApiProps(api_name="mine"))


def _rest_api(stack: cdk.Stack) -> None:
    IdempotentRestApi(stack, "Api", iam_authorization=True, existing_rest_api=apigw.RestApi(stack, "Own"),
                      rest_api_props=apigw.RestApiProps(deploy_options=apigw.StageOptions(throttling_rate_limit=5)))


def _outbox(stack: cdk.Stack) -> None:
    Outbox(stack, "Outbox", table=IdempotencyTable(stack, "T"), target=_bus(stack),
           existing_failure_queue=sqs.Queue(stack, "Own"),
           failure_queue_props=sqs.QueueProps(retention_period=Duration.days(3)))


def _outbox_publisher_logs(stack: cdk.Stack) -> None:
    Outbox(stack, "Outbox", table=IdempotencyTable(stack, "T"), target=_bus(stack),
           existing_publisher_log_group=logs.LogGroup(stack, "Own"),
           publisher_log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))


def _outbox_sweeper_logs(stack: cdk.Stack) -> None:
    Outbox(stack, "Outbox", table=IdempotencyTable(stack, "T"), target=_bus(stack),
           existing_sweeper_log_group=logs.LogGroup(stack, "Own"),
           sweeper_log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))


def _pipe(stack: cdk.Stack) -> None:
    OutboxPipe(stack, "Pipe", table=IdempotencyTable(stack, "T"), target=_bus(stack),
               existing_failure_queue=sqs.Queue(stack, "Own"),
               failure_queue_props=sqs.QueueProps(retention_period=Duration.days(3)))


def _webhook(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "T")
    WebhookReceiver(stack, "Hook", table=table, api=IdempotentRestApi(stack, "Api", iam_authorization=True),
                    worker=inline_function(stack, table), outbox_target=_bus(stack),
                    existing_bodies_bucket=s3.Bucket(stack, "Own"),
                    bodies_bucket_props=s3.BucketProps(versioned=True))


def _function(stack: cdk.Stack) -> None:
    IdempotentFunction(stack, "Fn", table=IdempotencyTable(stack, "T"), code=lambda_.Code.from_inline("x"),
                       handler="index.handler", existing_log_group=logs.LogGroup(stack, "Own"),
                       log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))


def _python_function(stack: cdk.Stack) -> None:
    python_function(Construct(stack, "Plain"), code=lambda_.Code.from_inline("x"), handler="index.handler",
                    existing_log_group=logs.LogGroup(stack, "Own"),
                    log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))


def _saga(stack: cdk.Stack) -> None:
    Saga(stack, "Saga", steps=[SagaStep("A", inline_function(stack, IdempotencyTable(stack, "T")), "$.a")],
         existing_log_group=logs.LogGroup(stack, "Own"),
         log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))


ORDER_PLACED = events.RuleProps(event_pattern=events.EventPattern(source=["shop.orders"]))
THREE_DAYS = sqs.QueueProps(retention_period=Duration.days(3))


def _event_rule(stack: cdk.Stack) -> None:
    IdempotentEventRule(stack, "Rule", function=inline_function(stack, IdempotencyTable(stack, "T")),
                        existing_rule=events.Rule(stack, "Own", event_pattern=ORDER_PLACED.event_pattern),
                        rule_props=ORDER_PLACED)


def _event_rule_dlq(stack: cdk.Stack) -> None:
    IdempotentEventRule(stack, "Rule", function=inline_function(stack, IdempotencyTable(stack, "T")),
                        rule_props=ORDER_PLACED, existing_dead_letter_queue=sqs.Queue(stack, "Own"),
                        dead_letter_queue_props=THREE_DAYS, dead_letter_queue_logical_id="Pinned")


def _stream(stack: cdk.Stack) -> None:
    IdempotentStreamConsumer(stack, "Stream", function=inline_function(stack, IdempotencyTable(stack, "T")),
                             existing_stream=kinesis.Stream(stack, "Own"),
                             stream_props=kinesis.StreamProps(shard_count=2), stream_logical_id="Pinned")


def _stream_table(stack: cdk.Stack) -> None:
    own = dynamodb.Table(stack, "Own", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
                         stream=dynamodb.StreamViewType.NEW_IMAGE)
    IdempotentStreamConsumer(stack, "Stream", function=inline_function(stack, IdempotencyTable(stack, "T")),
                             existing_table=own, stream_props=kinesis.StreamProps(shard_count=2))


def _stream_failures(stack: cdk.Stack) -> None:
    IdempotentStreamConsumer(stack, "Stream", function=inline_function(stack, IdempotencyTable(stack, "T")),
                             existing_failure_queue=sqs.Queue(stack, "Own"), failure_queue_props=THREE_DAYS)


def _topic(stack: cdk.Stack) -> None:
    IdempotentTopicSubscription(stack, "Sub", function=inline_function(stack, IdempotencyTable(stack, "T")),
                                existing_topic=sns.Topic(stack, "Own"), topic_props=sns.TopicProps(display_name="x"),
                                topic_logical_id="Pinned")


def _topic_dlq(stack: cdk.Stack) -> None:
    IdempotentTopicSubscription(stack, "Sub", function=inline_function(stack, IdempotencyTable(stack, "T")),
                                existing_dead_letter_queue=sqs.Queue(stack, "Own"),
                                dead_letter_queue_props=THREE_DAYS)


@pytest.mark.parametrize(("build", "existing", "resource", "props"), [
    (_table, "existing_table", "Own", "table_props, logical_id"),
    (_queue, "existing_dead_letter_queue", "Own", "dead_letter_queue_props"),
    (_rest_api, "existing_rest_api", "Own", "rest_api_props"),
    (_http_api, "existing_http_api", "Own", "http_api_props"),
    (_outbox, "existing_failure_queue", "Own", "failure_queue_props"),
    (_outbox_publisher_logs, "existing_publisher_log_group", "Own", "publisher_log_group_props"),
    (_outbox_sweeper_logs, "existing_sweeper_log_group", "Own", "sweeper_log_group_props"),
    (_pipe, "existing_failure_queue", "Own", "failure_queue_props"),
    (_webhook, "existing_bodies_bucket", "Own", "bodies_bucket_props"),
    (_function, "existing_log_group", "Own", "log_group_props"),
    (_python_function, "existing_log_group", "Own", "log_group_props"),
    (_saga, "existing_log_group", "Own", "log_group_props"),
    (_event_rule, "existing_rule", "Own", "rule_props"),
    (_event_rule_dlq, "existing_dead_letter_queue", "Own", "dead_letter_queue_props, dead_letter_queue_logical_id"),
    (_stream, "existing_stream", "Own", "stream_props, stream_logical_id"),
    (_stream_table, "existing_table", "Own", "stream_props"),
    (_stream_failures, "existing_failure_queue", "Own", "failure_queue_props"),
    (_topic, "existing_topic", "Own", "topic_props, topic_logical_id"),
    (_topic_dlq, "existing_dead_letter_queue", "Own", "dead_letter_queue_props"),
], ids=lambda value: value.__name__.lstrip("_") if callable(value) else None)
def test_existing_with_props_is_refused_naming_them(build: Callable[[cdk.Stack], None], existing: str, resource: str,
                                                    props: str) -> None:
    with pytest.raises(ValueError, match=MESSAGE.format(existing=existing, resource=resource, props=props)):
        build(new_stack("Props"))


@pytest.mark.parametrize(("setting", "message"), [
    ("role", "function_props cannot set role. Fix: role: pass existing_role="),
    ("log_retention", ("function_props cannot set log_retention. Fix: log_retention: pass log_group_props="
                       r"logs.LogGroupProps\(retention=...\)")),
])
def test_what_the_constructs_own_is_refused_in_function_props(setting: str, message: str) -> None:
    stack = new_stack("Owned")
    options: dict[str, Any] = {
        "role": lambda: iam.Role(stack, "R", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com")),
        "log_retention": lambda: logs.RetentionDays.ONE_DAY}
    with pytest.raises(ValueError, match=message):
        IdempotentFunction(stack, "Fn", table=IdempotencyTable(stack, "T"), code=lambda_.Code.from_inline("x"),
                           handler="index.handler", function_props=lambda_.FunctionOptions(
                               **{setting: options[setting]()}))


def test_every_other_lambda_setting_passes_through_function_props() -> None:
    stack = new_stack("Through")
    fn = IdempotentFunction(stack, "Fn", table=IdempotencyTable(stack, "T"), code=lambda_.Code.from_inline("x"),
                            handler="index.handler", function_props=lambda_.FunctionOptions(
                                memory_size=2048, timeout=Duration.seconds(25), description="mine",
                                environment={"MINE": "1"}, reserved_concurrent_executions=4,
                                max_event_age=Duration.hours(1)))
    props = stack.resolve(fn.function.node.default_child._cfn_properties)  # type: ignore[union-attr]
    assert (props["memorySize"], props["timeout"], props["description"], props["reservedConcurrentExecutions"]) == (
        2048, 25, "mine", 4)
    assert props["environment"]["variables"]["MINE"] == "1" and names.TABLE_ENV in props["environment"]["variables"]
    assert fn.timeout.to_seconds() == 25


def _documented_props() -> list[tuple[str, Any, str]]:
    """(name, callable whose keyword-only parameters are props, the docstring that documents them)."""
    found: list[tuple[str, Any, str]] = [("python_function", python_function, inspect.getdoc(python_function) or "")]
    for name in retrysafe_cdk.__all__:
        value = getattr(retrysafe_cdk, name)
        if inspect.isclass(value) and issubclass(value, Construct):
            found.append((name, value.__init__, inspect.getdoc(value) or ""))
    return found


@pytest.mark.parametrize(("name", "function", "doc"), _documented_props(), ids=lambda value: value
                         if isinstance(value, str) and " " not in value else "")
def test_every_prop_is_documented_once_with_its_default(name: str, function: Any, doc: str) -> None:
    entries = re.findall(r"^:param (\w+): (.*?)(?=^:param |^\S|\Z)", doc, re.MULTILINE | re.DOTALL)
    documented = [prop for prop, _ in entries]
    props = [p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert sorted(prop for prop in documented if prop in props) == sorted(props), f"{name}: not each prop once"
    undefaulted = [prop for prop, text in entries if prop in props
                   and "@default" not in text and "required" not in text.lower()]
    assert undefaulted == [], f"{name}: props without @default (or 'required')"


def test_rest_api_props_are_merged_over_the_defaults_field_by_field() -> None:
    stack = new_stack("Rest")
    api = IdempotentRestApi(stack, "Api", iam_authorization=True, rest_api_props=apigw.RestApiProps(
        description="mine", deploy_options=apigw.StageOptions(throttling_rate_limit=50),
        default_cors_preflight_options=apigw.CorsOptions(allow_origins=["https://shop.example.com"],
                                                         allow_headers=["X-Mine"])))
    api.rest_api.root.add_method("GET")  # a REST API needs a method to synthesize
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::ApiGateway::RestApi", {"Description": "mine"})
    stage = stack.resolve(api.rest_api.deployment_stage.node.default_child._cfn_properties)  # type: ignore[union-attr]
    assert stage["stageName"] == "prod" and api.access_logs is not None
    assert stage["accessLogSetting"]["destinationArn"] == stack.resolve(api.access_logs.log_group_arn)
    assert [(s["throttlingRateLimit"], s["throttlingBurstLimit"]) for s in stage["methodSettings"]] == [(50, 200)]
    preflight = next(r for r in template.find_resources("AWS::ApiGateway::Method").values()
                     if r["Properties"]["HttpMethod"] == "OPTIONS")
    headers = preflight["Properties"]["Integration"]["IntegrationResponses"][0]["ResponseParameters"]
    allowed = headers["method.response.header.Access-Control-Allow-Headers"].strip("'").split(",")
    assert allowed == ["Content-Type", "Authorization", names.IDEMPOTENCY_KEY_HEADER, "X-Mine"]
    assert names.REPLAYED_HEADER in headers["method.response.header.Access-Control-Expose-Headers"]


def test_an_access_log_destination_of_your_own_replaces_the_created_log_group() -> None:
    stack = new_stack("OwnLogs")
    own = logs.LogGroup(stack, "Own", retention=logs.RetentionDays.ONE_YEAR)
    api = IdempotentRestApi(stack, "Api", iam_authorization=True, rest_api_props=apigw.RestApiProps(
        deploy_options=apigw.StageOptions(access_log_destination=apigw.LogGroupLogDestination(own))))
    api.rest_api.root.add_method("GET")
    assert api.access_logs is None
    Template.from_stack(stack).resource_count_is("AWS::Logs::LogGroup", 1)


def test_http_api_props_pass_through_and_what_the_construct_decides_is_refused() -> None:
    stack = new_stack("Http")
    api = IdempotentHttpApi(stack, "Api", authorizer=authorizers.HttpIamAuthorizer(), http_api_props=apigwv2.HttpApiProps(
        api_name="mine", cors_preflight=apigwv2.CorsPreflightOptions(allow_origins=["https://shop.example.com"])))
    api.http_api.add_routes(path="/x", methods=[apigwv2.HttpMethod.GET], integration=HttpUrlIntegration(
        "X", "https://example.com"))
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::ApiGatewayV2::Api", {"Name": "mine", "CorsConfiguration": {
        "AllowOrigins": ["https://shop.example.com"], "AllowMethods": ["*"], "MaxAge": 3600,
        "AllowHeaders": ["Content-Type", "Authorization", names.IDEMPOTENCY_KEY_HEADER],
        "ExposeHeaders": [names.REPLAYED_HEADER, "Retry-After", "Location"]}})
    template.has_resource_properties("AWS::ApiGatewayV2::Stage", {"DefaultRouteSettings": {
        "ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200}})
    with pytest.raises(ValueError, match=r"Http/Refused: http_api_props cannot set default_authorizer, "
                                         r"create_default_stage\. Fix: default_authorizer: pass authorizer="):
        IdempotentHttpApi(stack, "Refused", authorizer=authorizers.HttpIamAuthorizer(),
                          http_api_props=apigwv2.HttpApiProps(default_authorizer=authorizers.HttpIamAuthorizer(),
                                                              create_default_stage=False))
