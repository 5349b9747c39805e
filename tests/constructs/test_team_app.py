"""Issue 24: the constructs in a real team's app (imported and cross-account resources, existing APIs and tables,
customer-managed keys, refactors). Each case used to synthesize and then fail silently; now it is refused at
synthesis with the fix, or the template is right."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template
from retrysafe import names
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentFunction,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    Outbox,
    OutboxPipe,
    OutboxTarget,
    WebhookReceiver,
)

from constructs import Construct

from .builders import inline_function, new_stack

CENTRAL_BUS = "arn:aws:events:us-east-1:999988887777:event-bus/central"


@pytest.fixture
def stack() -> cdk.Stack:
    return new_stack("Team")


def _statements(stack: cdk.Stack, role: Any) -> list[dict[str, Any]]:
    """The statements of the role's default policy, resolved."""
    policy = role.node.find_child("DefaultPolicy")
    statements: list[dict[str, Any]] = stack.resolve(policy.document.to_json())["Statement"]
    return statements


def _actions(stack: cdk.Stack, role: Any) -> set[str]:
    return {a for s in _statements(stack, role) for a in ([s["Action"]] if isinstance(s["Action"], str)
                                                         else s["Action"])}


def _variables(stack: cdk.Stack, function: IdempotentFunction) -> dict[str, Any]:
    """The function's environment variables as synthesized."""
    resource = Template.from_stack(stack).to_json()["Resources"][stack.get_logical_id(
        function.function.node.default_child)]  # type: ignore[arg-type]
    variables: dict[str, Any] = resource["Properties"]["Environment"]["Variables"]
    return variables


def _own_table(stack: cdk.Stack, view: dynamodb.StreamViewType) -> dynamodb.Table:
    table = dynamodb.Table(stack, "Own", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
                           time_to_live_attribute="exp", stream=view)
    table.add_global_secondary_index(
        index_name=names.OUTBOX_INDEX,
        partition_key=dynamodb.Attribute(name=names.UNPUBLISHED_ATTRIBUTE, type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name=names.COMMITTED_AT_ATTRIBUTE, type=dynamodb.AttributeType.STRING))
    return table


# -- 1. a bus of another account or region is addressed by its ARN ---------------------------------------------

def test_an_imported_cross_account_bus_reaches_the_publisher_and_sweeper_as_its_arn(stack: cdk.Stack) -> None:
    bus = events.EventBus.from_event_bus_arn(stack, "Central", CENTRAL_BUS)
    outbox = Outbox(stack, "Outbox", table=IdempotencyTable(stack, "Table"), target=OutboxTarget.event_bus(bus))
    for function in (outbox.publisher, outbox.sweeper):
        assert _variables(stack, function)[names.EVENT_BUS_ENV] == CENTRAL_BUS  # PutEvents takes the ARN; a bare name meant our own bus
        assert {"Action": "events:PutEvents", "Effect": "Allow", "Resource": CENTRAL_BUS} in _statements(
            stack, function.role)


# -- 2. an existing table's stream must carry new images -------------------------------------------------------

@pytest.mark.parametrize(("view", "relay"), [(dynamodb.StreamViewType.KEYS_ONLY, Outbox),
                                             (dynamodb.StreamViewType.OLD_IMAGE, OutboxPipe)])
def test_an_existing_table_whose_stream_has_no_new_image_is_refused_for_an_outbox(
        stack: cdk.Stack, view: dynamodb.StreamViewType, relay: type) -> None:
    table = IdempotencyTable(stack, "Idempotency", existing_table=_own_table(stack, view))
    assert table.node.validate() == []  # no relay yet: records alone do not need the stream
    relay(stack, "Relay", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    (error,) = table.node.validate()
    assert f"its stream is {view.value}" in error and "dynamodb.NewImage.kind" in error
    assert "stream=StreamViewType.NEW_IMAGE (or NEW_AND_OLD_IMAGES)" in error
    with pytest.raises(RuntimeError, match=f"its stream is {view.value}"):
        stack.node.root.synth()  # type: ignore[attr-defined]


def test_an_existing_table_with_new_and_old_images_feeds_an_outbox(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Idempotency",
                             existing_table=_own_table(stack, dynamodb.StreamViewType.NEW_AND_OLD_IMAGES))
    Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    assert table.node.validate() == []


# -- 3. stateful resources keep a logical id the user pins -------------------------------------------------------

def _pinned_app(nest: bool) -> dict[str, Any]:
    stack = new_stack("Pins")
    scope: Construct = Construct(stack, "Moved") if nest else stack
    table = IdempotencyTable(scope, "Idempotency", logical_id="IdempotencyTable")
    api = IdempotentRestApi(scope, "Api", iam_authorization=True)
    target = OutboxTarget.event_bus(events.EventBus(scope, "Bus"))
    Outbox(scope, "Outbox", table=table, target=target)
    worker = inline_function(stack, table)
    WebhookReceiver(scope, "Hook", table=table, api=api, worker=worker, outbox_target=target,
                    bodies_logical_id="WebhookBodies",
                    consumer_props={"queue_logical_id": "WebhookQueue", "dead_letter_queue_logical_id": "WebhookDlq"})
    template: dict[str, Any] = Template.from_stack(stack).to_json()
    return {k: v["Type"] for k, v in template["Resources"].items()
            if v["Type"] in ("AWS::DynamoDB::Table", "AWS::S3::Bucket") or k.startswith("Webhook")}


def test_moving_the_constructs_keeps_the_pinned_stateful_resources() -> None:
    """Without the pins the table's logical id follows the construct path: moving it under ``Moved`` created a new,
    empty table and orphaned the old one (RETAIN), so every in-flight retry would run again."""
    expected = {"IdempotencyTable": "AWS::DynamoDB::Table", "WebhookBodies": "AWS::S3::Bucket",
                "WebhookQueue": "AWS::SQS::Queue", "WebhookDlq": "AWS::SQS::Queue"}
    assert _pinned_app(nest=False) == expected
    assert _pinned_app(nest=True) == expected


# -- 4. two consumers with one subscriber would drop each other's messages ---------------------------------------

def test_each_consumer_gets_its_own_subscriber_and_a_shared_one_is_refused(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    billing = IdempotentQueueConsumer(stack, "Billing", function=inline_function(stack, table))
    copied = IdempotentQueueConsumer(stack, "BillingEu", function=inline_function(stack, table, 20))
    assert (billing.subscriber, copied.subscriber) == ("Billing", "BillingEu")  # below the stack: stable across stages
    for consumer, fn in ((billing, "Fn10"), (copied, "Fn20")):
        function = stack.node.find_child(fn)
        assert isinstance(function, IdempotentFunction)
        assert _variables(stack, function)[names.SUBSCRIBER_ENV] == consumer.subscriber
    with pytest.raises(ValueError, match="the subscriber 'invoices' is already used by Team/First") as raised:
        IdempotentQueueConsumer(stack, "First", function=inline_function(stack, table, 30), subscriber="invoices")
        IdempotentQueueConsumer(stack, "Second", function=inline_function(stack, table, 40), subscriber="invoices")
    assert "acknowledge the other's messages as duplicates" in str(raised.value)
    assert "pass a distinct subscriber=" in str(raised.value)


# -- 5. one function behind two consumers gets one lease ---------------------------------------------------------

def test_a_function_behind_a_second_consumer_is_refused(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    function = inline_function(stack, table)
    IdempotentQueueConsumer(stack, "Fast", function=function)
    with pytest.raises(ValueError, match="Team/Slow: Team/Fn10 is already fed by Team/Fast") as raised:
        IdempotentQueueConsumer(stack, "Slow", function=function,
                                queue_props=sqs.QueueProps(visibility_timeout=Duration.seconds(900)))
    assert "the second source's 900s would replace the first one's" in str(raised.value)
    assert "give each consumer its own IdempotentFunction" in str(raised.value)


# -- 6. one relay per table ----------------------------------------------------------------------------------------

def test_a_second_relay_on_one_table_is_refused(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    Outbox(stack, "ToBus", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    with pytest.raises(ValueError, match="already published by Team/ToBus") as raised:
        Outbox(stack, "ToTopic", table=table, target=OutboxTarget.topic(sns.Topic(stack, "Topic")))
    assert "one published/parked marker" in str(raised.value) and "fan out" in str(raised.value)


# -- 7. the table must be in the function's region ------------------------------------------------------------------

def test_a_table_of_another_region_is_refused_with_the_fix() -> None:
    app = cdk.App()
    data = cdk.Stack(app, "Data", env=cdk.Environment(account="111122223333", region="eu-west-1"))
    service = cdk.Stack(app, "Service", env=cdk.Environment(account="111122223333", region="us-east-1"))
    table = IdempotencyTable(data, "Table", table_props={"table_name": "idempotency"})
    with pytest.raises(ValueError, match="the idempotency table Data/Table/Table is in eu-west-1, the function in "
                                         "us-east-1") as raised:
        inline_function(service, table)
    assert "ResourceNotFound" in str(raised.value) and "replicas=" in str(raised.value)
    imported = dynamodb.Table.from_table_arn(service, "Orders", "arn:aws:dynamodb:eu-west-1:111122223333:table/orders")
    same = IdempotencyTable(service, "Local")
    with pytest.raises(ValueError, match="the business table Service/Orders is in eu-west-1"):
        IdempotentFunction(service, "Fn", table=same, code=lambda_.Code.from_inline("x"), handler="index.handler",
                           business_tables=[imported])


# -- 8. the bodies outlive the final horizon ---------------------------------------------------------------------------

def test_the_bodies_expire_after_the_horizon_of_everything_wired_later(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"))
    Outbox(stack, "Outbox", table=table, target=target)
    WebhookReceiver(stack, "Hook", table=table, api=IdempotentRestApi(stack, "Api", iam_authorization=True),
                    worker=inline_function(stack, table), outbox_target=target)
    # Added after the receiver: a queue with 14 days' retention raises the horizon to 7 + 14 + 14 days + 5 x 120 s.
    IdempotentQueueConsumer(stack, "Late", function=inline_function(stack, table, 20),
                            queue_props=sqs.QueueProps(retention_period=Duration.days(14)))
    assert table.retention_seconds == 35 * 86_400 + 600
    Template.from_stack(stack).has_resource_properties("AWS::S3::Bucket", {"LifecycleConfiguration": {"Rules": [
        Match.object_like({"ExpirationInDays": 37})]}})  # ceil(35 d + 600 s) + 1


# -- 9. an existing REST API keeps its own 400s; wrappers share an API ----------------------------------------------------

def test_wrappers_on_an_existing_api_add_no_api_wide_response_and_can_share_it(stack: cdk.Stack) -> None:
    own = apigw.RestApi(stack, "Own", cloud_watch_role=False)
    own.root.add_method("GET")
    table = IdempotencyTable(stack, "Table")
    orders = IdempotentRestApi(stack, "Orders", iam_authorization=True, existing_rest_api=own)
    payments = IdempotentRestApi(stack, "Payments", iam_authorization=True, existing_rest_api=own)
    orders.add_route("POST", "/orders", inline_function(stack, table))
    payments.add_route("POST", "/payments", inline_function(stack, table, 20))
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::ApiGateway::GatewayResponse", 0)
    template.resource_count_is("AWS::ApiGateway::RequestValidator", 2)
    assert orders.bad_request_response is None and payments.bad_request_response is None


def test_the_problem_json_response_is_explicit_and_never_added_twice(stack: cdk.Stack) -> None:
    own = apigw.RestApi(stack, "Own", cloud_watch_role=False)
    own.root.add_method("GET")
    own.add_gateway_response("Theirs", type=apigw.ResponseType.BAD_REQUEST_PARAMETERS, status_code="400")
    opted = IdempotentRestApi(stack, "Opted", iam_authorization=True, existing_rest_api=own,
                              problem_json_bad_request=True)
    assert opted.bad_request_response is None  # the API already answers those 400s its own way
    fresh = apigw.RestApi(stack, "Fresh", cloud_watch_role=False)
    fresh.root.add_method("GET")
    first = IdempotentRestApi(stack, "First", iam_authorization=True, existing_rest_api=fresh,
                              problem_json_bad_request=True)
    second = IdempotentRestApi(stack, "Second", iam_authorization=True, existing_rest_api=fresh,
                               problem_json_bad_request=True)
    assert first.bad_request_response is not None and second.bad_request_response is None
    Template.from_stack(stack).resource_count_is("AWS::ApiGateway::GatewayResponse", 2)


# -- 10. customer-managed keys: the actions DynamoDB needs, no wildcards ---------------------------------------------------

def test_customer_managed_keys_get_exact_actions(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "TableKey", enable_key_rotation=True)
    table = IdempotencyTable(stack, "Table", encryption_key=key)
    business = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="pk", type=dynamodb.AttributeType.STRING), encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
        encryption_key=kms.Key(stack, "OrdersKey", enable_key_rotation=True))
    fn = IdempotentFunction(stack, "Fn", table=table, code=lambda_.Code.from_inline("x"), handler="index.handler",
                            business_tables=[business])
    kms_actions = {a for a in _actions(stack, fn.role) if a.startswith("kms:")}
    assert kms_actions == {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"}
    assert not any("*" in a for a in _actions(stack, fn.role))
    outbox = Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    assert not any("*" in a for a in _actions(stack, outbox.publisher.role) | _actions(stack, outbox.sweeper.role))


# -- 11. the webhook receiver and the pipe's enrichment take function and log group props -----------------------------

def test_receiver_and_enrichment_take_function_and_log_group_props(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    target = OutboxTarget.event_bus(events.EventBus(stack, "Bus"))
    pipe = OutboxPipe(stack, "Pipe", table=table, target=target,
                      enrichment_function_props=lambda_.FunctionOptions(memory_size=256,
                                                                        reserved_concurrent_executions=2),
                      enrichment_log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_YEAR,
                                                                    removal_policy=cdk.RemovalPolicy.RETAIN))
    hook = WebhookReceiver(stack, "Hook", table=table, api=IdempotentRestApi(stack, "Api", iam_authorization=True),
                           worker=inline_function(stack, table), outbox_target=target,
                           receiver_function_props=lambda_.FunctionOptions(tracing=lambda_.Tracing.ACTIVE,
                                                                           memory_size=1024),
                           receiver_log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.THREE_MONTHS,
                                                                       removal_policy=cdk.RemovalPolicy.RETAIN))
    template = Template.from_stack(stack)
    functions = template.find_resources("AWS::Lambda::Function")
    enrichment = functions[stack.get_logical_id(pipe.enrichment.node.default_child)]["Properties"]  # type: ignore[arg-type]
    receiver = functions[stack.get_logical_id(hook.receiver.function.node.default_child)]["Properties"]  # type: ignore[arg-type]
    assert (enrichment["MemorySize"], enrichment["ReservedConcurrentExecutions"], enrichment["Timeout"]) == (256, 2, 30)
    assert (receiver["MemorySize"], receiver["TracingConfig"], receiver["Timeout"]) == (1024, {"Mode": "Active"}, 10)
    assert receiver["Environment"]["Variables"][names.WEBHOOK_PROVIDER_ENV] == "github"
    template.has_resource("AWS::Logs::LogGroup", {"Properties": {"RetentionInDays": 365}, "DeletionPolicy": "Retain"})
    template.has_resource("AWS::Logs::LogGroup", {"Properties": {"RetentionInDays": 90}, "DeletionPolicy": "Retain"})


# -- 12. an L1 table is refused with the wrapper to use -------------------------------------------------------------------

def test_an_l1_table_is_a_type_error_naming_from_table_attributes(stack: cdk.Stack) -> None:
    cfn = dynamodb.CfnTable(stack, "Raw", key_schema=[dynamodb.CfnTable.KeySchemaProperty(
        attribute_name="pk", key_type="HASH")])
    with pytest.raises(TypeError, match="is an L1 CfnTable.*Table.from_table_attributes"):
        IdempotencyTable(stack, "Idempotency", existing_table=cfn)  # type: ignore[arg-type]


# -- 13. the same bus as an object and imported by name is one bus -------------------------------------------------------------

def test_a_receiver_with_the_bus_imported_by_name_finds_the_outbox_of_the_bus_object(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus",
                                                                                       event_bus_name="central")))
    by_name = OutboxTarget.event_bus(events.EventBus.from_event_bus_name(stack, "ByName", "central"))
    hook = WebhookReceiver(stack, "Hook", table=table, api=IdempotentRestApi(stack, "Api", iam_authorization=True),
                           worker=inline_function(stack, table), outbox_target=by_name)
    assert hook.node.validate() == []
    other = OutboxTarget.event_bus(events.EventBus.from_event_bus_name(stack, "Other", "elsewhere"))
    stray = WebhookReceiver(stack, "Stray", table=table, api=IdempotentRestApi(stack, "Api2", iam_authorization=True),
                            worker=inline_function(stack, table, 20), outbox_target=other)
    (error,) = stray.node.validate()
    assert "nothing publishes the outbox" in error


# -- 14. the publisher and sweeper may do only what they call ------------------------------------------------------------------

def test_publisher_and_sweeper_have_only_the_actions_they_call(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    outbox = Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    logs_actions = {"logs:CreateLogStream", "logs:PutLogEvents"}
    assert _actions(stack, outbox.publisher.role) - logs_actions == {
        "dynamodb:UpdateItem", "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
        "dynamodb:ListStreams", "events:PutEvents", "sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
    assert _actions(stack, outbox.sweeper.role) - logs_actions == {"dynamodb:Query", "dynamodb:UpdateItem",
                                                                  "events:PutEvents"}
    table_arn = stack.resolve(table.table.table_arn)
    update = next(s for s in _statements(stack, outbox.publisher.role) if s["Action"] == "dynamodb:UpdateItem")
    assert update["Resource"] == table_arn


# -- 15. a FIFO queue needs a FIFO DLQ ------------------------------------------------------------------------------------------

def test_fifo_and_standard_queues_do_not_mix(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    standard_dlq = sqs.Queue(stack, "StandardDlq")
    with pytest.raises(ValueError, match="is a FIFO queue and its dead-letter queue Team/StandardDlq is a standard "
                                         "queue") as raised:
        IdempotentQueueConsumer(stack, "Fifo", function=inline_function(stack, table),
                                queue_props=sqs.QueueProps(fifo=True), existing_dead_letter_queue=standard_dlq)
    assert "make the DLQ the same type" in str(raised.value)
    fifo_dlq = sqs.Queue(stack, "FifoDlq", fifo=True)
    own = sqs.Queue(stack, "Own", visibility_timeout=Duration.minutes(2),
                    dead_letter_queue=sqs.DeadLetterQueue(queue=fifo_dlq, max_receive_count=5))
    with pytest.raises(ValueError, match="Team/Own is a standard queue and its dead-letter queue Team/FifoDlq is a FIFO"):
        IdempotentQueueConsumer(stack, "Std", function=inline_function(stack, table, 20), existing_queue=own)

