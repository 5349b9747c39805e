"""Issue 33 items 8, 10, 11, 12 and two wiring gaps: events lost, or run twice, with nothing saying so.

In-process construct tests (``Template``, ``Annotations``, ``node.validate()``; no ``cdk synth``):
an alarm that could never fire is not created (and a warning says why), an alarm covers each event
Lambda drops, an archive that outlives the records is refused with the numbers, and the Outbox's
functions take log group props like every other function.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match, Template
from retrysafe_cdk import (
    AlarmOptions,
    IdempotencyTable,
    IdempotentEventRule,
    IdempotentFunction,
    IdempotentQueueConsumer,
    IdempotentStreamConsumer,
    IdempotentTopicSubscription,
    Outbox,
    OutboxTarget,
)

from .builders import DAY, inline_function, new_stack

ACCOUNT, REGION = "123456789012", "eu-west-1"
ORDER_PLACED = events.EventPattern(source=["shop.orders"])


def regional_stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Lost", env=cdk.Environment(account=ACCOUNT, region=REGION))


def _alarms_on(stack: cdk.Stack, metric: str) -> dict[str, dict[str, object]]:
    return Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm", {"Properties": {"MetricName": metric}})


# -- item 8: a topic of another account or region ------------------------------------------------------------------


@pytest.mark.parametrize("arn", [f"arn:aws:sns:us-east-1:{ACCOUNT}:orders", f"arn:aws:sns:{REGION}:111111111111:orders"],
                         ids=["other-region", "other-account"])
def test_a_topic_elsewhere_gets_no_dlq_send_failed_alarm_and_a_warning_says_why(arn: str) -> None:
    stack = regional_stack()
    table = IdempotencyTable(stack, "Table")
    subscription = IdempotentTopicSubscription(stack, "Orders", function=inline_function(stack, table),
                                               existing_topic=sns.Topic.from_topic_arn(stack, "Theirs", arn))
    assert subscription.lost_alarm is None and subscription.dlq_alarm is not None
    assert _alarms_on(stack, "NumberOfNotificationsFailedToRedriveToDlq") == {}
    Annotations.from_stack(stack).has_warning("/Lost/Orders", Match.string_like_regexp(
        "no DlqSendFailedAlarm: the topic Lost/Theirs is in (region us-east-1|account 111111111111).*"
        "only in the topic's account and region, so an alarm here could never fire"))


@pytest.mark.parametrize("env", [cdk.Environment(account=ACCOUNT, region=REGION), None], ids=["same", "agnostic"])
def test_a_topic_of_this_account_and_region_or_unknown_keeps_its_alarm(env: cdk.Environment | None) -> None:
    stack = cdk.Stack(cdk.App(), "Lost", env=env)
    table = IdempotencyTable(stack, "Table")
    subscription = IdempotentTopicSubscription(
        stack, "Orders", function=inline_function(stack, table),
        existing_topic=sns.Topic.from_topic_arn(stack, "Theirs", f"arn:aws:sns:{REGION}:{ACCOUNT}:orders"))
    assert subscription.lost_alarm is not None
    assert len(_alarms_on(stack, "NumberOfNotificationsFailedToRedriveToDlq")) == 1
    Annotations.from_stack(stack).has_no_warning("*", Match.string_like_regexp("no DlqSendFailedAlarm"))


# -- item 10: an archive of the rule's bus that outlives the records -----------------------------------------------

#: The default horizon (7 days) + the rule's part (24 h + 6 h + 14 days): 22.25 days.
HORIZON = 7 * DAY + DAY + 6 * 3600 + 14 * DAY


def _rule_on_a_bus(stack: cdk.Stack) -> tuple[IdempotentEventRule, events.EventBus, IdempotencyTable]:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.seconds(HORIZON))
    bus = events.EventBus(stack, "Shop")
    rule = IdempotentEventRule(stack, "OnShop", function=inline_function(stack, table),
                               rule_props=events.RuleProps(event_bus=bus, event_pattern=ORDER_PLACED))
    return rule, bus, table


def test_an_archive_of_the_rules_bus_kept_longer_than_the_records_is_refused_with_the_numbers() -> None:
    stack = new_stack("Archived")
    rule, bus, _ = _rule_on_a_bus(stack)
    bus.archive("Archive", event_pattern=ORDER_PLACED, retention=Duration.days(90))  # added after the rule: counts
    (error,) = rule.node.validate()
    assert "the archive Archived/Shop/Archive of the rule's bus keeps its events 90 days (7776000s)" in error
    assert f"longer than the records of Archived/Table live ({HORIZON}s = 22.25 days" in error
    assert "the effect runs twice" in error
    assert "Fix: shorten the archive's retention to at most 22 days (retention=Duration.days(22))" in error
    assert "IdempotencyTable(record_ttl=Duration.days(90))" in error
    with pytest.raises(RuntimeError, match="keeps its events 90 days"):
        stack.node.root.synth()  # type: ignore[attr-defined]


def test_an_archive_kept_forever_is_refused_and_one_within_the_horizon_is_fine() -> None:
    stack = new_stack("Archived")
    rule, bus, _ = _rule_on_a_bus(stack)
    events.CfnArchive(stack, "Forever", source_arn=bus.event_bus_arn, retention_days=0)
    events.CfnArchive(stack, "Unset", source_arn=bus.event_bus_arn)
    bus.archive("Short", event_pattern=ORDER_PLACED, retention=Duration.days(22))
    events.EventBus(stack, "Other").archive("Elsewhere", event_pattern=ORDER_PLACED, retention=Duration.days(90))
    errors = rule.node.validate()
    assert [e.split(" of the rule's bus")[0].rsplit(" ", 1)[1] for e in errors] == ["Archived/Forever", "Archived/Unset"]
    assert all("keeps its events forever (retention 0 or unset)" in e and "(no horizon covers forever)" in e
               for e in errors)


def test_an_existing_rule_on_a_bus_of_the_app_and_a_rule_on_the_default_bus_find_their_archives() -> None:
    stack = regional_stack()
    table = IdempotencyTable(stack, "Table")
    bus = events.EventBus(stack, "Shop")
    own = events.Rule(stack, "Own", event_bus=bus, event_pattern=ORDER_PLACED)
    on_shop = IdempotentEventRule(stack, "OnShop", function=inline_function(stack, table), existing_rule=own)
    on_default = IdempotentEventRule(stack, "OnDefault", function=inline_function(stack, table, timeout=5),
                                     rule_props=events.RuleProps(event_pattern=ORDER_PLACED))
    events.CfnArchive(stack, "ShopArchive", source_arn=bus.event_bus_arn, retention_days=365)
    events.CfnArchive(stack, "DefaultArchive", source_arn=f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default",
                      retention_days=365)
    assert ["Lost/ShopArchive" in e for e in on_shop.node.validate()] == [True]
    assert ["Lost/DefaultArchive" in e for e in on_default.node.validate()] == [True]


# -- item 12: Lambda could not deliver to the destination --------------------------------------------------------


def _delivery_alarm(stack: cdk.Stack, function: IdempotentFunction, path: str) -> None:
    fn_id = stack.get_logical_id(function.function.node.default_child)  # type: ignore[arg-type]
    Template.from_stack(stack).has_resource_properties("AWS::CloudWatch::Alarm", {
        "MetricName": "DestinationDeliveryFailures", "Namespace": "AWS/Lambda", "Statistic": "Sum",
        "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": fn_id}}], "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching",
        "AlarmDescription": Match.string_like_regexp(f"^{path}: ")})


def test_every_source_with_an_on_failure_destination_alarms_when_lambda_cannot_deliver_to_it() -> None:
    stack = new_stack("Delivery")
    table = IdempotencyTable(stack, "Table")
    rule_fn, topic_fn, stream_fn = (inline_function(stack, table, timeout=t) for t in (5, 6, 7))
    rule = IdempotentEventRule(stack, "Rule", function=rule_fn, rule_props=events.RuleProps(event_pattern=ORDER_PLACED))
    topic = IdempotentTopicSubscription(stack, "Topic", function=topic_fn)
    stream = IdempotentStreamConsumer(stack, "Stream", function=stream_fn)
    outbox = Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    for function, path in ((rule_fn, "Delivery/Rule"), (topic_fn, "Delivery/Topic"), (stream_fn, "Delivery/Stream"),
                           (outbox.publisher, "Delivery/Outbox")):
        _delivery_alarm(stack, function, path)
    assert rule.delivery_failures_alarm is not None and topic.delivery_failures_alarm is not None
    assert "DestinationDeliveryFailuresAlarm" in [a.node.id for a in stream.alarms]
    assert "DestinationDeliveryFailuresAlarm" in [a.node.id for a in outbox.alarms]
    assert {m.metric_name for m in (rule.metric_destination_delivery_failures(),
                                    topic.metric_destination_delivery_failures(),
                                    stream.metric_destination_delivery_failures(),
                                    outbox.metric_destination_delivery_failures())} == {"DestinationDeliveryFailures"}


def test_the_delivery_failures_alarm_can_be_turned_off_alone() -> None:
    stack = new_stack("Delivery")
    off = AlarmOptions(disabled={"DestinationDeliveryFailuresAlarm"})
    rule = IdempotentEventRule(stack, "Rule", function=inline_function(stack, IdempotencyTable(stack, "Table")),
                               rule_props=events.RuleProps(event_pattern=ORDER_PLACED), alarms=off)
    assert rule.delivery_failures_alarm is None and rule.lost_alarm is not None
    assert _alarms_on(stack, "DestinationDeliveryFailures") == {}


# -- item 11: the Outbox's functions take log group props ----------------------------------------------------------


def test_the_outbox_publisher_and_sweeper_take_log_group_props() -> None:
    stack = new_stack("Logs")
    own = logs.LogGroup(stack, "Own", retention=logs.RetentionDays.ONE_WEEK)
    outbox = Outbox(stack, "Outbox", table=IdempotencyTable(stack, "Table"),
                    target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")), existing_publisher_log_group=own,
                    sweeper_log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))
    assert outbox.publisher.log_group is own
    template = Template.from_stack(stack)
    sweeper_logs = stack.get_logical_id(outbox.sweeper.log_group.node.default_child)  # type: ignore[arg-type]
    assert template.to_json()["Resources"][sweeper_logs]["Properties"]["RetentionInDays"] == 1
    template.has_resource_properties("AWS::Lambda::Function", {"LoggingConfig": {"LogGroup": {
        "Ref": stack.get_logical_id(own.node.default_child)}}})  # type: ignore[arg-type]


# -- a stream consumer of an IdempotencyTable's stream; a timeout raised on the L1 ---------------------------------


def test_a_stream_consumer_reads_the_stream_an_idempotency_table_switched_on() -> None:
    stack = new_stack("Streamed")
    table = IdempotencyTable(stack, "Table")
    # The L2 learns of no stream switched on through its L1: older aws-cdk-lib releases set table_stream_arn in
    # the constructor, newer ones memoize it on first read (as here, before the Outbox switches the stream on).
    assert table.table.table_stream_arn is None
    Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(stack, "Bus")))
    consumer = IdempotentStreamConsumer(stack, "Changes", function=inline_function(stack, table),
                                        existing_table=table.table)
    table_id = stack.get_logical_id(table.table.node.default_child)  # type: ignore[arg-type]
    assert stack.resolve(consumer.stream_arn) == {"Fn::GetAtt": [table_id, "StreamArn"]}
    Template.from_stack(stack).has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [table_id, "StreamArn"]}})


def test_a_function_timeout_raised_on_its_l1_after_the_queue_consumer_is_refused_at_synth() -> None:
    stack = new_stack("Raised")
    fn = inline_function(stack, IdempotencyTable(stack, "Table"))
    consumer = IdempotentQueueConsumer(stack, "Work", function=fn)
    assert consumer.node.validate() == []
    cfn: lambda_.CfnFunction = fn.function.node.default_child  # type: ignore[assignment]
    cfn.timeout = 120
    (error,) = consumer.node.validate()
    assert "the function Raised/Fn10 now has a timeout of 120s (set on its CfnFunction" in error
    assert "the queue's visibility timeout (60s) must be at least 6x it (720s)" in error
    assert "Fix: set the timeout through function_props=lambda_.FunctionOptions(timeout=...)" in error
    with pytest.raises(RuntimeError, match="now has a timeout of 120s"):
        stack.node.root.synth()  # type: ignore[attr-defined]
