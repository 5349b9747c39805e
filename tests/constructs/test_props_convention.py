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
                      cors_origins=["https://example.com"])


def _outbox(stack: cdk.Stack) -> None:
    Outbox(stack, "Outbox", table=IdempotencyTable(stack, "T"), target=_bus(stack),
           existing_failure_queue=sqs.Queue(stack, "Own"),
           failure_queue_props=sqs.QueueProps(retention_period=Duration.days(3)))


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
    (_http_api, "existing_http_api", "Own", "cors_origins"),
    (_outbox, "existing_failure_queue", "Own", "failure_queue_props"),
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
