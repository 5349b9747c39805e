"""Early, precise errors: each raised while the app is built (``cdk synth`` runs the app), saying how to fix it."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from retrysafe import names
from retrysafe_cdk import (
    IdempotencyTable,
    IdempotentQueueConsumer,
    IdempotentRestApi,
    Outbox,
    OutboxTarget,
    RetryHorizon,
    WebhookReceiver,
    queue_redelivery,
)

from .builders import DAY, inline_function, new_stack


@pytest.fixture
def stack() -> cdk.Stack:
    return new_stack("Checks")


def test_horizon_parts_and_queue_redelivery() -> None:
    horizon = RetryHorizon.of(client_retries=Duration.hours(12), settlement=Duration.days(3))
    assert horizon.parts() == {"client_retries": 43_200, "queue_redelivery": 0, "webhook_replay": 3 * DAY,
                               "operator_replay": 2 * DAY, "settlement": 3 * DAY}
    window = queue_redelivery(Duration.days(4), Duration.seconds(60), 5, Duration.days(14))
    assert window == 18 * DAY + 300
    assert queue_redelivery(Duration.days(4), Duration.seconds(60), 5) == 4 * DAY + 300  # no redrive
    wired = horizon.with_queue("a", window).with_queue("b", DAY)
    assert wired.queue_redelivery == window
    assert wired.total_seconds == 43_200 + window + 8 * DAY
    assert RetryHorizon(client_retries=0, webhook_replay=0, operator_replay=0, settlement=0).total_seconds == DAY


def test_record_ttl_below_the_computed_horizon_fails_with_the_fix(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.days(8))
    function = inline_function(stack, table)
    with pytest.raises(ValueError, match=r"record_ttl \(691200s\) is shorter than the retry horizon") as raised:
        IdempotentQueueConsumer(stack, "Consumer", function=function)
    message = str(raised.value)
    assert "queue_redelivery=1555500s" in message  # 4 d + 14 d + 5 x 60 s
    assert "Duration.seconds(2160300)" in message and "retention_period" in message


def test_record_ttl_long_enough_is_what_the_runtime_gets(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.days(30))
    inline_function(stack, table)
    IdempotentQueueConsumer(stack, "Consumer", function=inline_function(stack, table, 20))
    assert table.retention_seconds == 30 * DAY
    assert stack.resolve(table.retention_env()) == str(30 * DAY)


def test_record_ttl_under_a_day_is_refused(stack: cdk.Stack) -> None:
    with pytest.raises(ValueError, match="at least 24 hours"):
        IdempotencyTable(stack, "Table", record_ttl=Duration.minutes(5))  # SQS FIFO's dedup window


@pytest.mark.parametrize(("options", "message"), [
    ({"max_receive_count": 3}, "max_receive_count must be at least 5"),
    ({"queue_props": sqs.QueueProps(visibility_timeout=Duration.seconds(59))},
     r"visibility_timeout \(59s\) must be at least 6x"),
    ({"max_concurrency": 1}, "max_concurrency must be 2..1000"),
])
def test_queue_consumer_validation(stack: cdk.Stack, options: dict[str, object], message: str) -> None:
    function = inline_function(stack, IdempotencyTable(stack, "Table"))
    with pytest.raises(ValueError, match=message):
        IdempotentQueueConsumer(stack, "Consumer", function=function, **options)  # type: ignore[arg-type]


def test_existing_queue_needs_a_dlq(stack: cdk.Stack) -> None:
    function = inline_function(stack, IdempotencyTable(stack, "Table"))
    with pytest.raises(ValueError, match="has no dead-letter queue"):
        IdempotentQueueConsumer(stack, "Consumer", function=function, existing_queue=sqs.Queue(stack, "Plain"))


def test_outbox_validation(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    bus = events.EventBus(stack, "Bus")
    with pytest.raises(ValueError, match="max_record_age must be 60 s..24 h"):
        Outbox(stack, "Outbox", table=table, target=OutboxTarget.event_bus(bus), max_record_age=Duration.hours(25))
    with pytest.raises(ValueError, match="exactly one target"):
        OutboxTarget(bus=bus, sns_topic=sns.Topic(stack, "Topic"))
    with pytest.raises(ValueError, match="exactly one target"):
        OutboxTarget()


def test_outbox_target_environment_names(stack: cdk.Stack) -> None:
    topic, queue = sns.Topic(stack, "Topic"), sqs.Queue(stack, "Queue")
    assert OutboxTarget.topic(topic).environment()[names.OUTBOX_TARGET_ENV] == "sns"
    assert set(OutboxTarget.topic(topic).environment()) == {names.TOPIC_ENV, names.OUTBOX_TARGET_ENV}
    raised = OutboxTarget.queue(queue, max_message_bytes=1024 * 1024).environment()
    assert set(raised) == {names.QUEUE_ENV, names.OUTBOX_TARGET_ENV, names.OUTBOX_MAX_MESSAGE_ENV}
    assert raised[names.OUTBOX_MAX_MESSAGE_ENV] == "1048576"
    bus_env = OutboxTarget.event_bus(events.EventBus(stack, "Bus")).environment()
    assert set(bus_env) == {names.EVENT_BUS_ENV, names.EVENT_SOURCE_ENV, names.OUTBOX_TARGET_ENV}
    assert bus_env[names.EVENT_SOURCE_ENV] == names.DEFAULT_EVENT_SOURCE
    with pytest.raises(ValueError, match="max_message_bytes"):
        OutboxTarget.queue(queue, max_message_bytes=2 * 1024 * 1024)


def test_api_requires_an_authenticated_caller(stack: cdk.Stack) -> None:
    with pytest.raises(ValueError, match="the tenant comes from it"):
        IdempotentRestApi(stack, "Api")


def test_webhook_needs_a_bus_target(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    api = IdempotentRestApi(stack, "Api", iam_authorization=True)
    with pytest.raises(ValueError, match="must be OutboxTarget.event_bus"):
        WebhookReceiver(stack, "Hook", table=table, api=api, worker=inline_function(stack, table),
                        outbox_target=OutboxTarget.queue(sqs.Queue(stack, "Queue")))


def test_existing_table_without_stream_cannot_feed_an_outbox(stack: cdk.Stack) -> None:
    from aws_cdk import aws_dynamodb as dynamodb

    imported = dynamodb.Table.from_table_name(stack, "Imported", "idempotency")
    table = IdempotencyTable(stack, "Table", existing_table=imported)
    with pytest.raises(ValueError, match="table_stream_arn"):
        table.enable_stream()


def test_fifo_consumer_and_redrive_denied(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    fifo = IdempotentQueueConsumer(stack, "Fifo", function=inline_function(stack, table),
                                   queue_props=sqs.QueueProps(fifo=True))
    assert fifo.queue.fifo and fifo.dead_letter_queue.fifo
    closed = IdempotentQueueConsumer(stack, "Closed", function=inline_function(stack, table, 20),
                                     dead_letter_queue_props=sqs.QueueProps(redrive_allow_policy=sqs.RedriveAllowPolicy(
                                         redrive_permission=sqs.RedrivePermission.DENY_ALL)))
    assert closed.visibility_seconds == 120
    assert closed.redelivery_seconds == 4 * DAY + 5 * 120  # the DLQ's retention no longer counts
    assert table.horizon.queue_redelivery == fifo.redelivery_seconds == 18 * DAY + 5 * 60
