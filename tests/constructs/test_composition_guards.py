"""Compositions that used to synthesize and then fail silently at run time now stop at synth with the fix."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from retrysafe import names
from retrysafe_cdk import (
    DeployedQueue,
    IdempotencyTable,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    Outbox,
    OutboxPipe,
    OutboxTarget,
    WebhookReceiver,
)

from .builders import DAY, inline_function, new_stack


@pytest.fixture
def stack() -> cdk.Stack:
    return new_stack("Guards")


# -- 2. a webhook receiver needs a relay for its table's outbox ----------------------------------------------

def _webhook(stack: cdk.Stack, table: IdempotencyTable, target: OutboxTarget) -> WebhookReceiver:
    api = IdempotentRestApi(stack, "Api", iam_authorization=True)
    return WebhookReceiver(stack, "Hook", table=table, api=api, worker=inline_function(stack, table),
                           outbox_target=target)


def test_webhook_without_a_relay_to_its_bus_is_refused_at_synth(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"))
    hook = _webhook(stack, table, target)
    Outbox(stack, "Elsewhere", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "OtherBus")))
    (error,) = hook.node.validate()
    assert "nothing publishes the outbox of Guards/Table to the bus Guards/Bus" in error
    assert "never reach the worker" in error and "add Outbox(" in error
    with pytest.raises(RuntimeError, match="nothing publishes the outbox"):
        stack.node.root.synth()  # type: ignore[attr-defined]


@pytest.mark.parametrize("relay", [Outbox, OutboxPipe])
def test_webhook_with_a_relay_added_later_is_accepted(stack: cdk.Stack, relay: type) -> None:
    table = IdempotencyTable(stack, "Table")
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"))
    hook = _webhook(stack, table, target)
    relay(stack, "Relay", table=table, target=target)
    assert hook.node.validate() == []
    assert len(table.relays) == 1


# -- 4. IdempotentQueueConsumer with existing queues ---------------------------------------------------------

def test_imported_queue_needs_its_settings_and_then_works(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    function = inline_function(stack, table, timeout=20)
    imported = sqs.Queue.from_queue_arn(stack, "Imported", "arn:aws:sqs:eu-west-1:123456789012:orders")
    with pytest.raises(ValueError, match="cannot be inspected") as raised:
        IdempotentQueueConsumer(stack, "Bare", function=function, existing_queue=imported)
    assert "existing_queue_settings=DeployedQueue(visibility_timeout=" in str(raised.value)
    dlq = sqs.Queue.from_queue_arn(stack, "ImportedDlq", "arn:aws:sqs:eu-west-1:123456789012:orders-dlq")
    with pytest.raises(ValueError, match=r"visibility_timeout \(30s\) must be at least 6x .* \(120s = 6 x 20s") as low:
        IdempotentQueueConsumer(stack, "Low", function=function, existing_queue=imported,
                                existing_queue_settings=DeployedQueue(visibility_timeout=Duration.seconds(30),
                                                                      max_receive_count=5, dead_letter_queue=dlq))
    assert "raise the visibility timeout of Guards/Imported to 120s" in str(low.value)
    consumer = IdempotentQueueConsumer(stack, "Consumer", function=function, existing_queue=imported,
                                       existing_queue_settings=DeployedQueue(visibility_timeout=Duration.minutes(2),
                                                                             max_receive_count=6,
                                                                             dead_letter_queue=dlq))
    assert consumer.queue is imported and consumer.dead_letter_queue is dlq
    # retention unknown: 14 days (SQS's maximum) for the queue and the DLQ, so the horizon is never short
    assert consumer.redelivery_seconds == 28 * DAY + 6 * 120
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": "arn:aws:sqs:eu-west-1:123456789012:orders",
        "FunctionResponseTypes": ["ReportBatchItemFailures"]})
    template.has_resource_properties("AWS::CloudWatch::Alarm", {"Dimensions": [
        {"Name": "QueueName", "Value": "orders-dlq"}]})


def _own_queue(stack: cdk.Stack, visibility: Duration | None = None) -> sqs.Queue:
    dlq = sqs.Queue(stack, "OwnDlq")
    return sqs.Queue(stack, "Own", visibility_timeout=visibility,
                     dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=5))


@pytest.mark.parametrize("option", [{"queue_props": sqs.QueueProps(retention_period=Duration.days(1))},
                                    {"dead_letter_queue_props": sqs.QueueProps(retention_period=Duration.days(2))},
                                    {"max_receive_count": 9}, {"queue_logical_id": "Pinned"}])
def test_props_that_would_not_apply_to_an_existing_queue_are_refused(stack: cdk.Stack,
                                                                      option: dict[str, object]) -> None:
    function = inline_function(stack, IdempotencyTable(stack, "Table"))
    (name,) = option
    with pytest.raises(ValueError, match=f"existing_queue=Guards/Own is given, so {name} would not apply") as raised:
        IdempotentQueueConsumer(stack, "Consumer", function=function,
                                existing_queue=_own_queue(stack, Duration.minutes(2)), **option)  # type: ignore[arg-type]
    assert "Fix: set them on that queue" in str(raised.value)


def test_existing_queue_with_sqs_default_visibility_says_what_to_set_where(stack: cdk.Stack) -> None:
    function = inline_function(stack, IdempotencyTable(stack, "Table"))
    with pytest.raises(ValueError, match=r"visibility_timeout \(30s\) must be at least 6x") as raised:
        IdempotentQueueConsumer(stack, "Consumer", function=function, existing_queue=_own_queue(stack))
    message = str(raised.value)
    assert "create Guards/Own with visibility_timeout=Duration.seconds(60)" in message
    assert "SQS's default: the queue sets none" in message


def test_new_queue_visibility_error_names_the_value_to_pass(stack: cdk.Stack) -> None:
    function = inline_function(stack, IdempotencyTable(stack, "Table"))
    with pytest.raises(ValueError, match=r"pass queue_props=QueueProps\(visibility_timeout=Duration.seconds\(60\)\) or more"):
        IdempotentQueueConsumer(stack, "Consumer", function=function,
                                queue_props=sqs.QueueProps(visibility_timeout=Duration.seconds(30)))


# -- 5. an existing REST API keeps its own stage ------------------------------------------------------------

def test_existing_rest_api_refuses_stage_props_and_creates_no_log_group(stack: cdk.Stack) -> None:
    own = apigw.RestApi(stack, "Own", cloud_watch_role=False)
    with pytest.raises(ValueError, match="existing_rest_api=Guards/Own is given, so rest_api_props would not apply"):
        IdempotentRestApi(stack, "Refused", iam_authorization=True, existing_rest_api=own,
                          rest_api_props=apigw.RestApiProps(deploy_options=apigw.StageOptions(stage_name="dev")))
    api = IdempotentRestApi(stack, "Api", iam_authorization=True, existing_rest_api=own)
    api.add_route("POST", "/orders", inline_function(stack, IdempotencyTable(stack, "Table")))
    assert api.access_logs is None and api.rest_api is own
    logs = Template.from_stack(stack).find_resources("AWS::Logs::LogGroup")
    assert [k for k in logs if k.startswith("Api")] == []


# -- 6. OutboxPipe targets ----------------------------------------------------------------------------------

def test_pipe_refuses_a_fifo_topic_and_groups_fifo_queue_messages(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    topic = sns.Topic(stack, "Topic", fifo=True, topic_name="events.fifo")
    with pytest.raises(ValueError, match="Pipes cannot publish to a FIFO SNS topic"):
        OutboxPipe(stack, "TopicPipe", table=table, target=OutboxTarget.topic(topic))
    queue = sqs.Queue(stack, "Fifo", fifo=True)
    OutboxPipe(stack, "QueuePipe", table=table, target=OutboxTarget.queue(queue))
    Template.from_stack(stack).has_resource_properties("AWS::Pipes::Pipe", {"TargetParameters": {
        "SqsQueueParameters": {"MessageGroupId": "$.aggregate_id", "MessageDeduplicationId": "$.event_id"}}})
    with pytest.raises(ValueError, match="message_group_id only applies to a FIFO SQS target"):
        OutboxPipe(stack, "Standard", table=table, target=OutboxTarget.queue(sqs.Queue(stack, "Plain")),
                   message_group_id="$.aggregate_type")


# -- 7. an existing table must have the index and the TTL ---------------------------------------------------

def _table(stack: cdk.Stack, *, ttl: bool, index: bool, v2: bool = False) -> dynamodb.ITable:
    key = dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING)
    obq, at = (dynamodb.Attribute(name=n, type=dynamodb.AttributeType.STRING) for n in (names.UNPUBLISHED_ATTRIBUTE, "at"))
    if v2:
        indexes = [dynamodb.GlobalSecondaryIndexPropsV2(index_name=names.OUTBOX_INDEX, partition_key=obq,
                                                        sort_key=at)] if index else None
        return dynamodb.TableV2(stack, "V2", partition_key=key, time_to_live_attribute="exp" if ttl else None,
                                global_secondary_indexes=indexes)
    table = dynamodb.Table(stack, "V1", partition_key=key, time_to_live_attribute="exp" if ttl else None,
                           billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST)
    if index:
        table.add_global_secondary_index(index_name=names.OUTBOX_INDEX, partition_key=obq, sort_key=at)
    return table


@pytest.mark.parametrize("v2", [False, True])
def test_existing_table_without_index_or_ttl_is_refused(stack: cdk.Stack, v2: bool) -> None:
    table = IdempotencyTable(stack, "Idempotency", existing_table=_table(stack, ttl=False, index=False, v2=v2))
    errors = table.node.validate()
    assert len(errors) == 2
    assert "TTL must be enabled on 'exp'" in errors[0]
    assert "global secondary index 'outbox-unpublished'" in errors[1] and "add_global_secondary_index" in errors[1]


@pytest.mark.parametrize("v2", [False, True])
def test_existing_table_with_index_and_ttl_is_accepted(stack: cdk.Stack, v2: bool) -> None:
    assert IdempotencyTable(stack, "Idempotency", existing_table=_table(stack, ttl=True, index=True, v2=v2)).node.validate() == []


def test_index_added_after_the_construct_counts_and_imported_tables_are_assumed_right(stack: cdk.Stack) -> None:
    own = _table(stack, ttl=True, index=False)
    table = IdempotencyTable(stack, "Idempotency", existing_table=own)
    assert isinstance(own, dynamodb.Table)
    own.add_global_secondary_index(index_name=names.OUTBOX_INDEX,
                                   partition_key=dynamodb.Attribute(name=names.UNPUBLISHED_ATTRIBUTE, type=dynamodb.AttributeType.STRING),
                                   sort_key=dynamodb.Attribute(name="at", type=dynamodb.AttributeType.STRING))
    assert table.node.validate() == []
    imported = IdempotencyTable(stack, "Imported", existing_table=dynamodb.Table.from_table_name(stack, "Named", "idem"))
    assert imported.node.validate() == []


def test_webhook_receiver_on_an_http_api_gets_a_public_route(stack: cdk.Stack) -> None:
    from aws_cdk import aws_apigatewayv2_authorizers as authorizers
    from retrysafe_cdk import IdempotentHttpApi

    table = IdempotencyTable(stack, "Table")
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"))
    api = IdempotentHttpApi(stack, "Http", authorizer=authorizers.HttpIamAuthorizer())
    api.add_route("POST", "/orders", inline_function(stack, table, timeout=20))
    hook = WebhookReceiver(stack, "Hook", table=table, api=api, worker=inline_function(stack, table),
                           outbox_target=target, provider="stripe", consumer_props={"alarms": False})
    Outbox(stack, "Outbox", table=table, target=target)
    assert hook.method is None and len(hook.routes) == 1 and hook.node.validate() == []
    assert hook.consumer.dlq_alarm is None
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::ApiGatewayV2::Route", {"RouteKey": "POST /webhooks/stripe",
                                                                  "AuthorizationType": "NONE"})
    template.has_resource_properties("AWS::ApiGatewayV2::Route", {"RouteKey": "POST /orders",
                                                                  "AuthorizationType": "AWS_IAM"})
