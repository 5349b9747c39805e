"""The event source constructs: EventBridge rules, Kinesis / DynamoDB stream consumers and SNS subscriptions.

Their wiring (retry policies, DLQs, partial batch failures, least-privilege grants, alarms), their
part of the retry horizon, and the synth-time refusals with the fix. The small app of
``sources_app.py`` is checked with cdk-nag and cfn-lint."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template
from retrysafe import names
from retrysafe_cdk import (
    AlarmOptions,
    IdempotencyTable,
    IdempotentEventRule,
    IdempotentFunction,
    IdempotentStreamConsumer,
    IdempotentTopicSubscription,
    Outbox,
    OutboxPipe,
    OutboxTarget,
)
from retrysafe_cdk.horizon import SNS_LAMBDA_DELIVERY_SECONDS

from constructs import Construct
from tests.helpers import Synthesized

from .builders import DAY, inline_function, new_stack

ORDER_PLACED = events.RuleProps(event_pattern=events.EventPattern(source=["shop.orders"]))


@pytest.fixture
def stack() -> cdk.Stack:
    return new_stack("Sources")


@pytest.fixture
def table(stack: cdk.Stack) -> IdempotencyTable:
    return IdempotencyTable(stack, "Table")


def _resource(stack: cdk.Stack, construct: Any) -> dict[str, Any]:
    """The synthesized properties of one L2 construct's resource."""
    template = Template.from_stack(stack).to_json()["Resources"]
    properties: dict[str, Any] = template[stack.get_logical_id(construct.node.default_child)]["Properties"]
    return properties


def _statements(stack: cdk.Stack, role: iam.IRole) -> list[dict[str, Any]]:
    role_id = stack.get_logical_id(role.node.default_child)  # type: ignore[arg-type]
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role_id}]}})
    return [s for policy in policies.values() for s in policy["Properties"]["PolicyDocument"]["Statement"]]


# -- EventBridge -------------------------------------------------------------------------------------------


def test_event_rule_retries_then_dead_letters_both_deliveries_and_failed_invocations(
        stack: cdk.Stack, table: IdempotencyTable) -> None:
    fn = inline_function(stack, table)
    rule = IdempotentEventRule(stack, "OrderPlaced", function=fn, rule_props=ORDER_PLACED,
                               max_event_age=Duration.hours(2), retry_attempts=20)
    template = Template.from_stack(stack)
    dlq_arn = {"Fn::GetAtt": [stack.get_logical_id(rule.dead_letter_queue.node.default_child), "Arn"]}  # type: ignore[arg-type]
    template.has_resource_properties("AWS::Events::Rule", {
        "EventPattern": {"source": ["shop.orders"]},
        "Targets": [Match.object_like({"DeadLetterConfig": {"Arn": dlq_arn},
                                       "RetryPolicy": {"MaximumEventAgeInSeconds": 7200, "MaximumRetryAttempts": 20}})]})
    template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "MaximumEventAgeInSeconds": 6 * 3600, "MaximumRetryAttempts": 2,
        "DestinationConfig": {"OnFailure": {"Destination": dlq_arn}}})
    template.has_resource_properties("AWS::SQS::Queue", {"MessageRetentionPeriod": 14 * DAY,
                                                         "SqsManagedSseEnabled": True})
    # the part of the horizon: 2 h of EventBridge retries + 6 h in Lambda's queue + 14 days in the DLQ
    assert rule.redelivery_seconds == 2 * 3600 + 6 * 3600 + 14 * DAY
    assert table.horizon.queues == {rule.node.path: rule.redelivery_seconds}
    assert stack.resolve(table.retention_env()) == str(7 * DAY + rule.redelivery_seconds)
    assert [a.node.id for a in (rule.dlq_alarm, rule.lost_alarm) if a is not None] == [
        "DlqDepthAlarm", "DlqSendFailedAlarm"]
    assert rule.metric_failed_invocations().metric_name == "FailedInvocations"
    # a rule on the default bus reports under RuleName alone
    assert set(rule.metric_dlq_send_failures().dimensions or {}) == {"RuleName"}


def test_event_rule_on_an_existing_rule_and_dlq(stack: cdk.Stack, table: IdempotencyTable) -> None:
    own = events.Rule(stack, "OwnRule", schedule=events.Schedule.rate(Duration.hours(1)))
    dlq = sqs.Queue(stack, "OwnDlq", retention_period=Duration.days(2))
    rule = IdempotentEventRule(stack, "Hourly", function=inline_function(stack, table), existing_rule=own,
                               existing_dead_letter_queue=dlq, alarms=False)
    assert rule.rule is own and rule.dead_letter_queue is dlq and rule.dlq_alarm is None
    assert rule.redelivery_seconds == DAY + 6 * 3600 + 2 * DAY
    assert len(_resource(stack, own)["Targets"]) == 1
    Template.from_stack(stack).resource_count_is("AWS::CloudWatch::Alarm", 0)


def test_a_rule_on_a_custom_bus_alarms_on_that_bus_s_metrics(stack: cdk.Stack, table: IdempotencyTable) -> None:
    bus = events.EventBus(stack, "Shop")
    rule = IdempotentEventRule(stack, "OnShop", function=inline_function(stack, table), rule_props=events.RuleProps(
        event_bus=bus, event_pattern=events.EventPattern(source=["shop.orders"])))
    bus_ref = {"Ref": stack.get_logical_id(bus.node.default_child)}  # type: ignore[arg-type]
    Template.from_stack(stack).has_resource_properties("AWS::CloudWatch::Alarm", {
        "MetricName": "InvocationsFailedToBeSentToDlq", "Namespace": "AWS/Events",
        "Dimensions": Match.array_with([{"Name": "EventBusName", "Value": bus_ref}])})
    assert rule.lost_alarm is not None


@pytest.mark.parametrize(("options", "message"), [
    ({"rule_props": events.RuleProps(description="no pattern")}, r"a new rule needs an event pattern or a schedule"),
    ({"rule_props": ORDER_PLACED, "max_event_age": Duration.hours(25)}, r"max_event_age must be 60 s..24 h.*90000s"),
    ({"rule_props": ORDER_PLACED, "retry_attempts": 186}, r"retry_attempts must be 0..185"),
    ({"rule_props": ORDER_PLACED, "async_max_event_age": Duration.hours(7)}, r"async_max_event_age must be 60 s..6 h"),
    ({"rule_props": ORDER_PLACED, "async_retry_attempts": 3}, r"async_retry_attempts must be 0..2"),
])
def test_event_rule_refusals(stack: cdk.Stack, table: IdempotencyTable, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IdempotentEventRule(stack, "Rule", function=inline_function(stack, table), **options)


def test_record_ttl_shorter_than_an_event_rule_can_redeliver_fails_with_the_numbers(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.days(10))
    fn = inline_function(stack, table)
    with pytest.raises(ValueError) as raised:
        IdempotentEventRule(stack, "Rule", function=fn, rule_props=ORDER_PLACED)
    message = str(raised.value)
    total = 7 * DAY + DAY + 6 * 3600 + 14 * DAY
    assert "EventBridge's max_event_age (86400s) + Lambda's async_max_event_age (21600s) + the dead-letter " \
           "queue's retention (1209600s) = 1317600s" in message
    assert f"the retry horizon is {total}s" in message and "record_ttl of Sources/Table (864000s)" in message
    assert f"Duration.seconds({total})" in message and "shorten max_event_age" in message
    # what fits is accepted: the DLQ kept 1 day, EventBridge retrying 1 hour
    IdempotentEventRule(stack, "Short", function=fn, rule_props=ORDER_PLACED, max_event_age=Duration.hours(1),
                        dead_letter_queue_props=sqs.QueueProps(retention_period=Duration.days(1)))
    assert table.horizon.total_seconds == 7 * DAY + 3600 + 6 * 3600 + DAY <= table.retention_seconds


def test_asynchronous_sources_of_one_function_share_its_settings_or_are_refused(
        stack: cdk.Stack, table: IdempotencyTable) -> None:
    fn = inline_function(stack, table)
    first = IdempotentEventRule(stack, "Placed", function=fn, rule_props=ORDER_PLACED)
    with pytest.raises(ValueError, match=r"Sources/Fn10 already has Lambda's asynchronous invocation settings.*"
                                         r"that construct's dead-letter queue as existing_dead_letter_queue"):
        IdempotentTopicSubscription(stack, "Topic", function=fn)
    with pytest.raises(ValueError, match=r"async_max_event_age=21600s, async_retry_attempts=2"):
        IdempotentEventRule(stack, "Other", function=fn, rule_props=ORDER_PLACED, async_retry_attempts=0,
                            existing_dead_letter_queue=first.dead_letter_queue)
    second = IdempotentEventRule(stack, "Cancelled", function=fn, existing_dead_letter_queue=first.dead_letter_queue,
                                 rule_props=events.RuleProps(event_pattern=events.EventPattern(
                                     source=["shop.orders"], detail_type=["OrderCancelled"])), alarms=False)
    assert second.dead_letter_queue is first.dead_letter_queue
    Template.from_stack(stack).resource_count_is("AWS::Lambda::EventInvokeConfig", 1)


def test_async_settings_from_function_props_are_not_overwritten(stack: cdk.Stack, table: IdempotencyTable) -> None:
    fn = IdempotentFunction(stack, "Own", table=table, code=lambda_.Code.from_inline("x = 1"), handler="index.handler",
                            function_props=lambda_.FunctionOptions(retry_attempts=0))
    with pytest.raises(ValueError, match=r"Sources/Own already has Lambda's asynchronous invocation settings "
                                         r"\(from another event rule or subscription, or its function_props\)"):
        IdempotentEventRule(stack, "Rule", function=fn, rule_props=ORDER_PLACED)


# -- SNS ---------------------------------------------------------------------------------------------------


def test_topic_subscription_has_a_dlq_and_covers_sns_delivery_retries(stack: cdk.Stack,
                                                                      table: IdempotencyTable) -> None:
    fn = inline_function(stack, table)
    sub = IdempotentTopicSubscription(stack, "Receipts", function=fn, filter_policy={
        "kind": sns.SubscriptionFilter.string_filter(allowlist=["receipt"])})
    publisher = iam.Role(stack, "Publisher", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    assert sub.grant_publish(publisher).success
    template = Template.from_stack(stack)
    dlq_arn = {"Fn::GetAtt": [stack.get_logical_id(sub.dead_letter_queue.node.default_child), "Arn"]}  # type: ignore[arg-type]
    template.has_resource_properties("AWS::SNS::Subscription", {
        "Protocol": "lambda", "RedrivePolicy": {"deadLetterTargetArn": dlq_arn},
        "FilterPolicy": {"kind": ["receipt"]}})
    template.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    template.has_resource_properties("AWS::CloudWatch::Alarm", {
        "MetricName": "NumberOfNotificationsFailedToRedriveToDlq", "Namespace": "AWS/SNS",
        "Dimensions": [{"Name": "TopicName", "Value": Match.any_value()}]})
    template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "DestinationConfig": {"OnFailure": {"Destination": dlq_arn}}})
    assert SNS_LAMBDA_DELIVERY_SECONDS == 2_000_202  # 2 x 1 s + 10 x at most 20 s + 100,000 x 20 s
    assert sub.redelivery_seconds == SNS_LAMBDA_DELIVERY_SECONDS + 6 * 3600 + 14 * DAY
    actions = {a for s in _statements(stack, publisher) for a in ([s["Action"]] if isinstance(s["Action"], str)
                                                                   else s["Action"])}
    assert actions == {"sns:Publish", "kms:Decrypt", "kms:GenerateDataKey"}  # exact: no GenerateDataKey* wildcard


def test_topic_subscription_refusals(stack: cdk.Stack, table: IdempotencyTable) -> None:
    fifo = sns.Topic(stack, "Fifo", fifo=True)
    with pytest.raises(ValueError, match=r"Sources/Fifo is a FIFO topic.*deliver only to SQS queues"):
        IdempotentTopicSubscription(stack, "Fifos", function=inline_function(stack, table), existing_topic=fifo)
    with pytest.raises(ValueError, match=r"Sources/NewFifo/Topic is a FIFO topic"):
        IdempotentTopicSubscription(stack, "NewFifo", function=inline_function(stack, table, 40),
                                    topic_props=sns.TopicProps(fifo=True, topic_name="t.fifo"))
    with pytest.raises(ValueError, match=r"Sources/FifoDlq is a FIFO queue; a dead-letter queue .* standard queue"):
        IdempotentTopicSubscription(stack, "FifoDead", function=inline_function(stack, table, 50),
                                    existing_dead_letter_queue=sqs.Queue(stack, "FifoDlq", fifo=True))
    with pytest.raises(ValueError, match=r"must be a standard queue .* omit fifo from its props"):
        IdempotentStreamConsumer(stack, "FifoFailures", function=inline_function(stack, table, 60),
                                 failure_queue_props=sqs.QueueProps(fifo=True))
    short = IdempotencyTable(stack, "Short", record_ttl=Duration.days(30))
    with pytest.raises(ValueError, match=r"SNS's delivery retries to Lambda \(2000202s, fixed\).*"
                                         r"record_ttl of Sources/Short \(2592000s\)"):
        IdempotentTopicSubscription(stack, "Late", function=inline_function(stack, short, 30))


# -- streams -----------------------------------------------------------------------------------------------


def test_kinesis_consumer_reports_batch_item_failures_in_shard_order(stack: cdk.Stack,
                                                                      table: IdempotencyTable) -> None:
    fn = inline_function(stack, table)
    consumer = IdempotentStreamConsumer(stack, "Clicks", function=fn,
                                        stream_props=kinesis.StreamProps(retention_period=Duration.days(3)))
    assert consumer.stream is not None
    template = Template.from_stack(stack)
    stream_arn = {"Fn::GetAtt": [stack.get_logical_id(consumer.stream.node.default_child), "Arn"]}  # type: ignore[arg-type]
    queue_arn = {"Fn::GetAtt": [stack.get_logical_id(consumer.failure_queue.node.default_child), "Arn"]}  # type: ignore[arg-type]
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": stream_arn, "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "BisectBatchOnFunctionError": True, "ParallelizationFactor": 1, "MaximumRetryAttempts": 10,
        "StartingPosition": "TRIM_HORIZON", "DestinationConfig": {"OnFailure": {"Destination": queue_arn}}})
    template.has_resource_properties("AWS::Kinesis::Stream", {
        "RetentionPeriodHours": 72, "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"}})
    assert consumer.retention_seconds == 3 * DAY and table.horizon.queues == {consumer.node.path: 3 * DAY}
    # the stream and the failure queue only, never "*"
    resources = [s["Resource"] for s in _statements(stack, fn.role) if any(
        a.startswith(("kinesis:", "sqs:")) for a in s["Action"])]
    assert resources == [stream_arn, queue_arn]
    assert [a.node.id for a in consumer.alarms] == ["IteratorAgeAlarm", "FailureQueueAlarm",
                                                    "DestinationDeliveryFailuresAlarm"]
    template.has_resource_properties("AWS::CloudWatch::Alarm", {"MetricName": "IteratorAge", "Threshold": 300_000,
                                                                "EvaluationPeriods": 3})


def test_dynamodb_stream_consumer_reads_the_tables_stream_only(stack: cdk.Stack, table: IdempotencyTable) -> None:
    orders = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES)
    fn = inline_function(stack, table)
    consumer = IdempotentStreamConsumer(stack, "Changes", function=fn, existing_table=orders,
                                        alarms=AlarmOptions(disabled={"IteratorAgeAlarm"}))
    assert consumer.stream is None and consumer.retention_seconds == DAY
    stream_arn = {"Fn::GetAtt": [stack.get_logical_id(orders.node.default_child), "StreamArn"]}  # type: ignore[arg-type]
    Template.from_stack(stack).has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": stream_arn, "FunctionResponseTypes": ["ReportBatchItemFailures"]})
    reads = [s for s in _statements(stack, fn.role) if s["Action"][0].startswith("dynamodb:Describe")]
    assert reads == [{"Action": ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
                                 "dynamodb:ListStreams"], "Effect": "Allow", "Resource": stream_arn}]
    assert [a.node.id for a in consumer.alarms] == ["FailureQueueAlarm", "DestinationDeliveryFailuresAlarm"]
    with pytest.raises(ValueError, match="a DynamoDB stream is written through its table"):
        consumer.grant_write(fn)


def test_a_table_encrypted_with_its_own_key_lets_the_consumer_decrypt_its_stream(
        stack: cdk.Stack, table: IdempotencyTable) -> None:
    key = kms.Key(stack, "OrdersKey", enable_key_rotation=True)
    orders = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), stream=dynamodb.StreamViewType.NEW_IMAGE,
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED, encryption_key=key)
    fn = inline_function(stack, table)
    IdempotentStreamConsumer(stack, "Changes", function=fn, existing_table=orders)
    key_arn = {"Fn::GetAtt": [stack.get_logical_id(key.node.default_child), "Arn"]}  # type: ignore[arg-type]
    assert {"Action": "kms:Decrypt", "Effect": "Allow", "Resource": key_arn} in _statements(stack, fn.role)


def test_opting_out_of_ordering_allows_parallel_batches(stack: cdk.Stack, table: IdempotencyTable) -> None:
    with pytest.raises(ValueError, match=r"parallelization_factor=4 runs several batches of one shard at once.*"
                                         r"Pass ordered=False"):
        IdempotentStreamConsumer(stack, "Ordered", function=inline_function(stack, table), parallelization_factor=4)
    consumer = IdempotentStreamConsumer(stack, "Parallel", function=inline_function(stack, table, 20), ordered=False,
                                        parallelization_factor=4)
    assert _resource(stack, consumer.event_source)["ParallelizationFactor"] == 4


def test_a_stream_of_this_app_brings_its_retention_and_an_imported_one_must_say_it(
        stack: cdk.Stack, table: IdempotencyTable) -> None:
    own = kinesis.Stream(stack, "Own", retention_period=Duration.days(30))
    consumer = IdempotentStreamConsumer(stack, "Own30", function=inline_function(stack, table), existing_stream=own)
    assert consumer.retention_seconds == 30 * DAY
    imported = kinesis.Stream.from_stream_arn(stack, "Imported", "arn:aws:kinesis:eu-west-1:123456789012:stream/x")
    with pytest.raises(ValueError, match=r"the imported stream Sources/Imported cannot be inspected.*"
                                         r"retention_period=Duration.hours"):
        IdempotentStreamConsumer(stack, "NoRetention", function=inline_function(stack, table, 20),
                                 existing_stream=imported)
    later = IdempotentStreamConsumer(stack, "Said", function=inline_function(stack, table, 30),
                                     existing_stream=imported, retention_period=Duration.days(365))
    assert later.retention_seconds == 365 * DAY and table.horizon.queue_redelivery == 365 * DAY


@pytest.mark.parametrize(("options", "message"), [
    ({"existing_stream": "own", "retention_period": Duration.days(2)},
     r"existing_stream=Sources/Own brings its own retention, so retention_period would not apply"),
    ({"retention_period": Duration.days(2)}, r"retention_period describes an imported stream"),
    ({"existing_table": "no_stream"}, r"the table Sources/Plain has no stream"),
    ({"retry_attempts": 10_001}, r"retry_attempts must be 0..10000"),
    ({"ordered": False, "parallelization_factor": 11}, r"parallelization_factor must be 1..10"),
])
def test_stream_consumer_refusals(stack: cdk.Stack, table: IdempotencyTable, options: dict[str, Any],
                                  message: str) -> None:
    made = {"own": lambda: kinesis.Stream(stack, "Own"),
            "no_stream": lambda: dynamodb.Table(stack, "Plain", partition_key=dynamodb.Attribute(
                name="id", type=dynamodb.AttributeType.STRING))}
    given = {name: made[value]() if isinstance(value, str) else value for name, value in options.items()}
    with pytest.raises(ValueError, match=message):
        IdempotentStreamConsumer(stack, "Consumer", function=inline_function(stack, table), **given)


def test_record_ttl_shorter_than_the_kinesis_retention_fails_with_the_fix(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.days(30))
    with pytest.raises(ValueError) as raised:
        IdempotentStreamConsumer(stack, "Year", function=inline_function(stack, table),
                                 stream_props=kinesis.StreamProps(retention_period=Duration.days(365)))
    message = str(raised.value)
    assert "the Kinesis stream's retention (31536000s)" in message
    assert f"Duration.seconds({7 * DAY + 365 * DAY})" in message and "shorten the stream's retention_period" in message


# -- the small app, synthesized with cdk-nag and linted ----------------------------------------------------


@pytest.fixture(scope="module")
def sourced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synthesized]:
    from .sources_app import build

    outdir = tmp_path_factory.mktemp("sources-cdk-out")
    build(str(outdir)).synth()
    yield Synthesized(outdir)


@pytest.mark.synth
def test_sources_app_has_no_unacknowledged_finding(sourced: Synthesized) -> None:
    report = sourced.validation_report()
    assert [v["ruleName"] for plugin in report["pluginReports"] for v in plugin["violations"]] == []


@pytest.mark.synth
def test_sources_app_passes_cfn_lint(sourced: Synthesized) -> None:
    templates = sorted(str(p) for p in sourced.outdir.glob("*.template.json"))
    assert templates
    done = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable", *templates],
                          capture_output=True, text=True, timeout=120, check=False)
    rules = [line.split(":")[5] for line in done.stdout.splitlines() if line.strip()]
    assert [rule for rule in rules if rule != "W3005"] == [], done.stdout
    assert done.returncode in (0, 4), done.stderr


@pytest.mark.synth
def test_sources_app_functions_get_the_horizon_of_their_longest_source(sourced: Synthesized) -> None:
    from .sources_app import STACK

    resources = sourced.template(STACK)["Resources"]
    horizons = {r["Properties"]["Environment"]["Variables"][names.HORIZON_ENV]
                for r in resources.values() if r["Type"] == "AWS::Lambda::Function"
                and names.HORIZON_ENV in r["Properties"].get("Environment", {}).get("Variables", {})}
    # the SNS subscription's window is the longest: 7 days + SNS retries + 6 h + 14 days
    assert horizons == {str(7 * DAY + SNS_LAMBDA_DELIVERY_SECONDS + 6 * 3600 + 14 * DAY)}
    alias_subscriptions = [r for r in resources.values() if r["Type"] == "AWS::SNS::Subscription"
                           and "Ref" in r["Properties"]["Endpoint"]]
    assert len(alias_subscriptions) == 1  # the SnapStart subscriber is invoked through its alias


def test_construct_ids_are_contract(stack: cdk.Stack, table: IdempotencyTable) -> None:
    # The logical ids of the stateful children (queues, stream, topic) follow these ids: renaming one replaces
    # the resource, and with it the messages or records it holds.
    rule = IdempotentEventRule(stack, "Rule", function=inline_function(stack, table), rule_props=ORDER_PLACED)
    consumer = IdempotentStreamConsumer(stack, "Stream", function=inline_function(stack, table, 20))
    subscription = IdempotentTopicSubscription(stack, "Topic", function=inline_function(stack, table, 30))
    assert [c.node.id for c in rule.node.children] == ["DeadLetterQueue", "Rule", "DlqDepthAlarm",
                                                         "DlqSendFailedAlarm", "DestinationDeliveryFailuresAlarm"]
    assert [c.node.id for c in consumer.node.children] == [
        "Stream", "FailureQueue", "Mapping", "IteratorAgeAlarm", "FailureQueueAlarm", "DestinationDeliveryFailuresAlarm"]
    assert [c.node.id for c in subscription.node.children] == ["TopicKey", "Topic", "DeadLetterQueue", "DlqDepthAlarm",
                                                                 "DlqSendFailedAlarm", "DestinationDeliveryFailuresAlarm"]


def test_the_dashboard_charts_their_dead_letter_and_failure_queues(stack: cdk.Stack, table: IdempotencyTable) -> None:
    from retrysafe_cdk import Dashboard

    rule = IdempotentEventRule(stack, "Rule", function=inline_function(stack, table), rule_props=ORDER_PLACED)
    subscription = IdempotentTopicSubscription(stack, "Topic", function=inline_function(stack, table, 20))
    stream = IdempotentStreamConsumer(stack, "Stream", function=inline_function(stack, table, 30))
    board = Dashboard(stack, "Board", table=table, consumers=[rule, subscription], streams=[stream])
    body = json.dumps(stack.resolve(board.dashboard.node.default_child.dashboard_body))  # type: ignore[union-attr]
    for label in ("Rule DLQ", "Topic DLQ", "Stream failures"):
        assert label in body


def test_grant_put_events_names_the_rules_bus_only(stack: cdk.Stack, table: IdempotencyTable) -> None:
    bus = events.EventBus(stack, "Shop")
    on_bus = IdempotentEventRule(stack, "OnBus", function=inline_function(stack, table), rule_props=events.RuleProps(
        event_bus=bus, event_pattern=events.EventPattern(source=["shop.orders"])))
    existing = events.Rule(stack, "OwnRule", event_pattern=events.EventPattern(source=["shop.orders"]))
    on_default = IdempotentEventRule(stack, "OnDefault", function=inline_function(stack, table, 20),
                                     existing_rule=existing)
    producer = iam.Role(stack, "Producer", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    assert on_bus.grant_put_events(producer).success and on_default.grant_put_events(producer).success
    statements = _statements(stack, producer)
    assert [s["Action"] for s in statements] == ["events:PutEvents", "events:PutEvents"]
    bus_arn = {"Fn::GetAtt": [stack.get_logical_id(bus.node.default_child), "Arn"]}  # type: ignore[arg-type]
    assert statements[0]["Resource"] == bus_arn
    assert "event-bus/default" in json.dumps(statements[1]["Resource"])


@pytest.mark.parametrize(("arn", "what"), [
    ("arn:aws:events:eu-west-1:210987654321:event-bus/shop", "account 210987654321, this stack in 123456789012"),
    ("arn:aws:events:us-east-1:123456789012:event-bus/shop", "region us-east-1, this stack in eu-west-1"),
])
def test_a_rule_on_a_bus_of_another_account_or_region_is_refused_with_the_pattern(arn: str, what: str) -> None:
    """The rule would be created here on a same-named bus of this account, while grants and alarms name the other."""
    stack = cdk.Stack(cdk.App(), "Consumer", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    table = IdempotencyTable(stack, "Table")
    foreign = events.EventBus.from_event_bus_arn(stack, "Shop", arn)
    with pytest.raises(ValueError, match=rf"^Consumer/OnShop: the event bus Consumer/Shop is in the {what}\. "
                                         r".*would attach to a same-named bus.*Fix: in the bus owner's account and "
                                         r"region, add a rule on that bus targeting an event bus of this account"):
        IdempotentEventRule(stack, "OnShop", function=inline_function(stack, table), rule_props=events.RuleProps(
            event_bus=foreign, event_pattern=events.EventPattern(source=["shop.orders"])))
    # the same bus imported by ARN in its own account and region, and an environment-agnostic stack, are fine
    own = cdk.Stack(cdk.App(), "Owner", env=cdk.Environment(account=arn.split(":")[4], region=arn.split(":")[3]))
    agnostic = new_stack("Agnostic")
    for where in (own, agnostic):
        IdempotentEventRule(where, "OnShop", function=inline_function(where, IdempotencyTable(where, "Table")),
                            rule_props=events.RuleProps(event_bus=events.EventBus.from_event_bus_arn(where, "Shop", arn),
                                                        event_pattern=events.EventPattern(source=["shop.orders"])))


# -- one subscriber per function, one function per subscriber and table ----------------------------------------


def _variables(stack: cdk.Stack, fn: IdempotentFunction) -> dict[str, Any]:
    variables: dict[str, Any] = _resource(stack, fn.function)["Environment"]["Variables"]
    return variables


def test_each_source_gives_its_function_a_subscriber_named_by_its_path(stack: cdk.Stack,
                                                                       table: IdempotencyTable) -> None:
    rule_fn, topic_fn, stream_fn = (inline_function(stack, table, t) for t in (10, 20, 30))
    rule = IdempotentEventRule(stack, "OrderPlaced", function=rule_fn, rule_props=ORDER_PLACED)
    topic = IdempotentTopicSubscription(stack, "Receipts", function=topic_fn, subscriber="send-receipt")
    consumer = IdempotentStreamConsumer(stack, "Clicks", function=stream_fn)
    assert (rule.subscriber, topic.subscriber, consumer.subscriber) == ("OrderPlaced", "send-receipt", "Clicks")
    for fn, source in ((rule_fn, rule), (topic_fn, topic), (stream_fn, consumer)):
        assert _variables(stack, fn)[names.SUBSCRIBER_ENV] == source.subscriber
    assert table.subscribers == {"OrderPlaced": rule.node.path, "send-receipt": topic.node.path,
                                "Clicks": consumer.node.path}


def test_two_functions_with_one_subscriber_on_one_table_are_refused(stack: cdk.Stack, table: IdempotencyTable) -> None:
    # Copied with the same handler and namespace, the second would acknowledge the first one's events as duplicates.
    IdempotentEventRule(stack, "Fulfil", function=inline_function(stack, table), rule_props=ORDER_PLACED,
                        subscriber="fulfil")
    with pytest.raises(ValueError, match=r"Sources/FulfilEu: the subscriber 'fulfil' is already used by Sources/Fulfil "
                                         r"on the idempotency table Sources/Table.*Fix: pass a distinct subscriber="):
        IdempotentTopicSubscription(stack, "FulfilEu", function=inline_function(stack, table, 20), subscriber="fulfil")
    with pytest.raises(ValueError, match=r"the subscriber 'fulfil' is already used by Sources/Fulfil"):
        IdempotentStreamConsumer(stack, "FulfilStream", function=inline_function(stack, table, 30),
                                 subscriber="fulfil")


def test_a_second_source_of_one_function_shares_its_subscriber_or_is_refused(stack: cdk.Stack,
                                                                           table: IdempotencyTable) -> None:
    fn = inline_function(stack, table)
    first = IdempotentEventRule(stack, "Placed", function=fn, rule_props=ORDER_PLACED)
    second = IdempotentEventRule(stack, "Cancelled", function=fn, existing_dead_letter_queue=first.dead_letter_queue,
                                 rule_props=events.RuleProps(event_pattern=events.EventPattern(
                                     source=["shop.orders"], detail_type=["OrderCancelled"])), alarms=False)
    assert second.subscriber == first.subscriber == "Placed" == _variables(stack, fn)[names.SUBSCRIBER_ENV]
    with pytest.raises(ValueError, match=r"Sources/Other: Sources/Fn10 already has the subscriber 'Placed' \(from "
                                         r"Sources/Placed\), and a function has one \(RETRYSAFE_SUBSCRIBER\).*Fix: omit "
                                         r"subscriber= here \(or pass 'Placed'\), or give this source its own"):
        IdempotentEventRule(stack, "Other", function=fn, existing_dead_letter_queue=first.dead_letter_queue,
                            rule_props=ORDER_PLACED, subscriber="other")


# -- moving the stateful resources -------------------------------------------------------------------------


def _stateful_ids(parent: Construct, table: IdempotencyTable, pins: bool) -> dict[str, str]:
    stack = cdk.Stack.of(parent)
    pinned: dict[str, Any] = {"rule": {"dead_letter_queue_logical_id": "RuleDlq"},
                              "stream": {"stream_logical_id": "Clicks", "failure_queue_logical_id": "ClickFailures"},
                              "topic": {"topic_logical_id": "Receipts", "dead_letter_queue_logical_id": "ReceiptDlq"}}
    given = pinned if pins else {"rule": {}, "stream": {}, "topic": {}}
    rule = IdempotentEventRule(parent, "Rule", function=inline_function(stack, table), rule_props=ORDER_PLACED,
                               subscriber="rule", **given["rule"])
    consumer = IdempotentStreamConsumer(parent, "Stream", function=inline_function(stack, table, 20),
                                        subscriber="stream", **given["stream"])
    topic = IdempotentTopicSubscription(parent, "Topic", function=inline_function(stack, table, 30),
                                        subscriber="topic", **given["topic"])
    assert consumer.stream is not None
    resources = {"rule dlq": rule.dead_letter_queue, "stream": consumer.stream,
                 "failure queue": consumer.failure_queue, "topic": topic.topic, "topic dlq": topic.dead_letter_queue}
    # the rendered logical id (get_logical_id allocates from the path and does not see an override)
    return {name: stack.resolve(r.node.default_child.logical_id)  # type: ignore[union-attr]
            for name, r in resources.items()}


@pytest.mark.parametrize("pins", [False, True], ids=["derived", "pinned"])
def test_pinned_logical_ids_survive_moving_the_constructs(pins: bool) -> None:
    before_stack = new_stack("Sources")
    before = _stateful_ids(before_stack, IdempotencyTable(before_stack, "Table"), pins)
    after_stack = new_stack("Sources")
    after = _stateful_ids(Construct(after_stack, "Ingest"), IdempotencyTable(after_stack, "Table"), pins)
    if pins:
        assert before == after == {"rule dlq": "RuleDlq", "stream": "Clicks", "failure queue": "ClickFailures",
                                   "topic": "Receipts", "topic dlq": "ReceiptDlq"}
    else:  # what the pins are for: every one of them would be replaced, empty
        assert all(before[name] != after[name] for name in before)


# -- a table's stream in another region --------------------------------------------------------------------


def test_a_table_stream_of_another_region_is_refused_with_the_fix() -> None:
    app = cdk.App()
    data = cdk.Stack(app, "Data", env=cdk.Environment(account="123456789012", region="us-east-1"))
    service = cdk.Stack(app, "Service", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    orders = dynamodb.Table(data, "Orders", table_name="orders", stream=dynamodb.StreamViewType.NEW_IMAGE,
                            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING))
    fn = inline_function(service, IdempotencyTable(service, "Table"))
    with pytest.raises(ValueError, match=r"Service/Changes: the table whose stream is consumed Data/Orders is in "
                                         r"us-east-1, the function in eu-west-1\. Lambda maps a stream only to a "
                                         r"function of its region.*Fix: put the function in a stack of us-east-1"):
        IdempotentStreamConsumer(service, "Changes", function=fn, existing_table=orders)


def test_existing_table_with_kinesis_props_says_what_omitting_it_does(stack: cdk.Stack,
                                                                      table: IdempotencyTable) -> None:
    orders = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), stream=dynamodb.StreamViewType.NEW_IMAGE)
    with pytest.raises(ValueError, match=r"existing_table=Sources/Orders is given, so retention_period would not "
                                         r"apply.*or omit existing_table to consume a Kinesis stream with them\.$"):
        IdempotentStreamConsumer(stack, "Changes", function=inline_function(stack, table), existing_table=orders,
                                 retention_period=Duration.days(2))


# -- the readers of a table's stream (DynamoDB Streams: at most two processes per shard) ------------------

ORDERS_STREAM = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-12-01T00:00:00.000"


@pytest.mark.parametrize("relay", [Outbox, OutboxPipe])
def test_a_relay_and_one_consumer_share_a_table_stream_and_a_third_reader_is_refused_with_the_fix(
        relay: type[Outbox | OutboxPipe]) -> None:
    app = cdk.App()
    env = cdk.Environment(account="123456789012", region="eu-west-1")
    data, service = cdk.Stack(app, "Data", env=env), cdk.Stack(app, "Service", env=env)
    orders = dynamodb.Table.from_table_attributes(data, "Orders", table_name="orders", table_stream_arn=ORDERS_STREAM)
    table = IdempotencyTable(data, "Table", existing_table=orders)
    relay(data, "Relay", table=table, target=OutboxTarget.event_bus(events.EventBus(data, "Bus")))
    IdempotentStreamConsumer(data, "Audit", function=inline_function(data, table), existing_table=orders)
    Template.from_stack(data)  # two readers synthesize
    # the same stream imported again, in another stack, is the same stream
    again = dynamodb.Table.from_table_attributes(service, "Orders", table_name="orders",
                                                 table_stream_arn=ORDERS_STREAM)
    fn = inline_function(service, IdempotencyTable(service, "Table"))
    with pytest.raises(ValueError, match=r"^Service/Search: the stream of the table Service/Orders is already read "
                                         r"by Data/Relay and Data/Audit, and DynamoDB Streams serves at most 2 "
                                         r"processes reading one shard at the same time: a third reader's GetRecords "
                                         r"calls are throttled.*Fix: read the stream once and fan out from there"):
        IdempotentStreamConsumer(service, "Search", function=fn, existing_table=again)


def test_two_consumers_of_a_business_tables_stream_are_fine_a_third_is_refused(
        stack: cdk.Stack, table: IdempotencyTable) -> None:
    orders = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), stream=dynamodb.StreamViewType.NEW_IMAGE)
    IdempotentStreamConsumer(stack, "Audit", function=inline_function(stack, table, 10), existing_table=orders)
    IdempotentStreamConsumer(stack, "Search", function=inline_function(stack, table, 11), existing_table=orders)
    Template.from_stack(stack).resource_count_is("AWS::Lambda::EventSourceMapping", 2)
    with pytest.raises(ValueError, match=r"^Sources/Billing: the stream of the table Sources/Orders is already read "
                                         r"by Sources/Audit and Sources/Search, and DynamoDB Streams serves at most 2"):
        IdempotentStreamConsumer(stack, "Billing", function=inline_function(stack, table, 12), existing_table=orders)
    # another table's stream has its own two readers
    other = dynamodb.Table(stack, "Payments", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), stream=dynamodb.StreamViewType.NEW_IMAGE)
    IdempotentStreamConsumer(stack, "Ledger", function=inline_function(stack, table, 13), existing_table=other)


def test_the_apps_own_mappings_of_a_stream_count_as_its_readers() -> None:
    """A DynamoEventSource already on the stream plus two consumers are three readers (and so is a raw
    CfnEventSourceMapping or a Pipe): refused at synthesis, naming every reader."""
    from aws_cdk import aws_lambda_event_sources as lambda_sources
    from aws_cdk import aws_pipes as pipes

    stack = new_stack("Sources")
    table = IdempotencyTable(stack, "Table")
    orders = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), stream=dynamodb.StreamViewType.NEW_IMAGE)
    legacy = lambda_.Function(stack, "Legacy", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                              code=lambda_.Code.from_inline("x = 1"))
    legacy.add_event_source(lambda_sources.DynamoEventSource(orders, starting_position=lambda_.StartingPosition.LATEST))
    audit = IdempotentStreamConsumer(stack, "Audit", function=inline_function(stack, table, 10), existing_table=orders)
    IdempotentStreamConsumer(stack, "Search", function=inline_function(stack, table, 11), existing_table=orders)
    (error,) = audit.node.validate()
    assert error.startswith("Sources/Search: the stream of the table Sources/Orders is already read by Sources/Audit "
                            "and Sources/Legacy/DynamoDBEventSource:SourcesOrders")
    assert "DynamoDB Streams serves at most 2 processes" in error and "Fix: read the stream once" in error
    with pytest.raises(RuntimeError, match="DynamoDB Streams serves at most 2"):
        Template.from_stack(stack)

    # a raw mapping and a pipe on an imported stream, each next to one consumer
    for kind in ("mapping", "pipe"):
        other = new_stack("Raw")
        imported = dynamodb.Table.from_table_attributes(other, "Orders", table_name="orders",
                                                        table_stream_arn=ORDERS_STREAM)
        if kind == "mapping":
            lambda_.CfnEventSourceMapping(other, "Raw", function_name="legacy", event_source_arn=ORDERS_STREAM,
                                          starting_position="LATEST")
        else:
            pipes.CfnPipe(other, "Raw", role_arn="arn:aws:iam::123456789012:role/pipe", source=ORDERS_STREAM,
                          target="arn:aws:sqs:eu-west-1:123456789012:q")
        own = IdempotencyTable(other, "Table")
        first = IdempotentStreamConsumer(other, "Audit", function=inline_function(other, own, 10),
                                         existing_table=imported)
        assert first.node.validate() == []  # two readers
        IdempotentStreamConsumer(other, "Search", function=inline_function(other, own, 11), existing_table=imported)
        (error,) = first.node.validate()
        assert error.startswith("Raw/Search: the stream of the table Raw/Orders is already read by Raw/Audit and Raw/Raw")
