"""CDK conventions: IdempotentFunction is an IFunction/IGrantable with the usual Lambda props, alarms take
actions and can be turned off one by one, API Gateway's account role follows the feature flag, the dashboard."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Match, Template
from retrysafe import metrics
from retrysafe_cdk import (
    AlarmOptions,
    IdempotencyTable,
    IdempotentFunction,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    Outbox,
    OutboxTarget,
)

from .builders import inline_function, new_stack


@pytest.fixture
def stack() -> cdk.Stack:
    return new_stack("Conventions")


def test_idempotent_function_is_a_grantee_and_an_ifunction(stack: cdk.Stack) -> None:
    fn = inline_function(stack, IdempotencyTable(stack, "Table"))
    orders = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING))
    grant = orders.grant_read_data(fn)
    assert grant.success
    events.Rule(stack, "Every5", schedule=events.Schedule.rate(Duration.minutes(5)), targets=[targets.LambdaFunction(fn)])
    fn.add_permission("S3", principal=iam.ServicePrincipal("s3.amazonaws.com"))
    assert fn.grant_principal is fn.role and fn.function_arn == fn.function.function_arn
    assert fn.metric_errors(period=Duration.minutes(1)).period.to_seconds() == 60
    template = Template.from_stack(stack)
    function_id = stack.get_logical_id(fn.function.node.default_child)  # type: ignore[arg-type]
    template.has_resource_properties("AWS::Events::Rule", {"Targets": [
        {"Arn": {"Fn::GetAtt": [function_id, "Arn"]}, "Id": Match.any_value()}]})
    template.has_resource_properties("AWS::Lambda::Permission", {"Principal": "s3.amazonaws.com"})
    role_id = stack.get_logical_id(fn.role.node.default_child)  # type: ignore[arg-type]
    template.has_resource_properties("AWS::IAM::Policy", {
        "Roles": [{"Ref": role_id}],
        "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
            "Action": Match.array_with(["dynamodb:Query"])})])}})


def test_lambda_props_pass_through(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0, subnet_configuration=[
        ec2.SubnetConfiguration(name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)])
    role = iam.Role(stack, "OwnRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    extra = lambda_.LayerVersion.from_layer_version_arn(
        stack, "Extra", "arn:aws:lambda:eu-west-1:123456789012:layer:extra:1")
    powertools = lambda_.LayerVersion.from_layer_version_arn(
        stack, "Powertools", "arn:aws:lambda:eu-west-1:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:7")
    fn = IdempotentFunction(stack, "Fn", table=table, code=lambda_.Code.from_inline("x = 1"), handler="index.handler",
                            runtime=lambda_.Runtime.PYTHON_3_13, existing_role=role, powertools_layer=powertools,
                            function_props=lambda_.FunctionOptions(
                                architecture=lambda_.Architecture.X86_64, memory_size=1024,
                                tracing=lambda_.Tracing.ACTIVE, vpc=vpc, layers=[extra],
                                reserved_concurrent_executions=3,
                                environment_encryption=kms.Key(stack, "EnvKey", enable_key_rotation=True),
                                ephemeral_storage_size=cdk.Size.mebibytes(1024)))
    assert fn.role is role
    props = Template.from_stack(stack).find_resources("AWS::Lambda::Function")
    (function,) = [r["Properties"] for r in props.values()]
    assert function["Runtime"] == "python3.13" and function["Architectures"] == ["x86_64"]
    assert function["MemorySize"] == 1024 and function["TracingConfig"] == {"Mode": "Active"}
    assert function["ReservedConcurrentExecutions"] == 3 and function["EphemeralStorage"] == {"Size": 1024}
    assert "VpcConfig" in function and "KmsKeyArn" in function
    assert function["Role"]["Fn::GetAtt"][0].startswith("OwnRole")
    layers = function["Layers"]
    assert len(layers) == 3 and layers[1:] == [powertools.layer_version_arn, extra.layer_version_arn]
    assert fn.layer.node.id == "RetrysafeRuntimeLayerNoPowertools"


def test_alarm_actions_and_single_alarms_off(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    topic = sns.Topic(stack, "Pager")
    options = AlarmOptions(actions=[cw_actions.SnsAction(topic)], disabled={"IteratorAgeAlarm"})
    outbox = Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")),
                    alarms=options)
    assert [a.node.id for a in outbox.alarms] == ["PublisherErrorsAlarm", "FailureQueueAlarm", "ParkedEventsAlarm",
                                                  "DestinationDeliveryFailuresAlarm"]
    consumer = IdempotentQueueConsumer(stack, "Consumer", function=inline_function(stack, table), alarms=False)
    assert consumer.dlq_alarm is None
    table.add_fencing_alarm(actions=[cw_actions.SnsAction(topic)])
    alarms = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    assert len(alarms) == 5
    topic_id = stack.get_logical_id(topic.node.default_child)  # type: ignore[arg-type]
    assert all(a["Properties"]["AlarmActions"] == [{"Ref": topic_id}] for a in alarms.values())


def _api(stack: cdk.Stack, name: str, cloud_watch_role: bool | None = None) -> IdempotentRestApi:
    api = IdempotentRestApi(stack, name, iam_authorization=True,
                            rest_api_props=apigw.RestApiProps(cloud_watch_role=cloud_watch_role))
    api.rest_api.root.add_method("GET")  # a REST API needs a method to synthesize
    return api


def test_cloudwatch_role_follows_the_flag_and_is_never_created_twice() -> None:
    flagged = cdk.Stack(cdk.App(context={"@aws-cdk/aws-apigateway:disableCloudWatchRole": True}), "Flagged")
    api = _api(flagged, "Api")
    assert api.cloud_watch_role is None and api.account is None
    Template.from_stack(flagged).resource_count_is("AWS::ApiGateway::Account", 0)

    opted_in = cdk.Stack(cdk.App(context={"@aws-cdk/aws-apigateway:disableCloudWatchRole": True}), "OptIn")
    first = _api(opted_in, "First", cloud_watch_role=True)
    second = _api(opted_in, "Second", cloud_watch_role=True)
    assert first.account is not None and first.cloud_watch_role is not None and second.account is None
    Template.from_stack(opted_in).resource_count_is("AWS::ApiGateway::Account", 1)

    unflagged = cdk.Stack(cdk.App(context={"@aws-cdk/aws-apigateway:disableCloudWatchRole": False}), "Unflagged")
    _api(unflagged, "A")
    _api(unflagged, "B")
    off = _api(unflagged, "Off", cloud_watch_role=False)
    assert off.account is None
    Template.from_stack(unflagged).resource_count_is("AWS::ApiGateway::Account", 1)


def test_dashboard_charts_what_on_call_opens_first(stack: cdk.Stack) -> None:
    import json

    from retrysafe_cdk import Dashboard

    table = IdempotencyTable(stack, "Table")
    fn = inline_function(stack, table)
    outbox = Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    consumer = IdempotentQueueConsumer(stack, "Consumer", function=fn)
    board = Dashboard(stack, "Board", table=table, functions=[fn], outboxes=[outbox], consumers=[consumer])
    titles = [stack.resolve(w.to_json())[0]["properties"]["title"] for w in board.widgets]
    assert titles == ["Executions (invocations)", "Replays", "Key mismatches (422)", "In-flight conflicts (409)",
                      "Fencing rejections", "Publisher lag (iterator age, ms)", "Parked outbox events",
                      "Dead-letter and failure queues (messages)"]
    body = json.dumps(stack.resolve(board.dashboard.node.default_child.dashboard_body))  # type: ignore[union-attr]
    for name in ("Invocations", metrics.REPLAYED, metrics.KEY_MISMATCH, metrics.IN_FLIGHT, metrics.FENCING_REJECTED, "IteratorAge",
                 metrics.OUTBOX_EVENT_PARKED, "ApproximateNumberOfMessagesVisible"):
        assert name in body
    Template.from_stack(stack).resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_grants_return_every_statement_they_add(stack: cdk.Stack) -> None:
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    table = IdempotencyTable(stack, "Table", encryption_key=key)
    role = iam.Role(stack, "Reader", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    sweep = table.grant_sweep(role)
    statements = [s.to_statement_json()["Action"] for s in sweep.principal_statements]
    actions = [a for action in statements for a in ([action] if isinstance(action, str) else action)]
    assert set(actions) == {"dynamodb:Query", "dynamodb:UpdateItem", "kms:Decrypt", "kms:Encrypt",
                            "kms:GenerateDataKey"}
    assert table.grant_records(role).success and table.grant_stream_read(role).success


def test_props_overrides_for_created_resources(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", table_props={"deletion_protection": True, "table_name": "idem"})
    other = IdempotencyTable(stack, "Other")
    with pytest.raises(ValueError, match="table_props cannot set partition_key"):
        IdempotencyTable(stack, "Bad", table_props={"partition_key": dynamodb.Attribute(
            name="id", type=dynamodb.AttributeType.STRING)})
    outbox = Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")),
                    function_props=lambda_.FunctionOptions(memory_size=256, tracing=lambda_.Tracing.ACTIVE))
    assert other.relays == []
    template = Template.from_stack(stack)
    template.has_resource_properties("AWS::DynamoDB::Table", {"TableName": "idem", "DeletionProtectionEnabled": True,
                                                              "TimeToLiveSpecification": {"AttributeName": "exp",
                                                                                          "Enabled": True}})
    for fn in (outbox.publisher, outbox.sweeper):
        function = stack.resolve(fn.function.node.default_child.memory_size)  # type: ignore[union-attr]
        assert function == 256
