"""The outbox relay: the table's stream to EventBridge, SNS or SQS (a Lambda publisher, or EventBridge Pipes)."""

from __future__ import annotations

import json

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs

from constructs import Construct

from .function import IdempotentFunction
from .nag import acknowledge
from .table import IdempotencyTable
from .targets import OutboxTarget

MAX_RECORD_AGE = Duration.hours(24)
SWEEP_EVERY = Duration.minutes(5)
SWEEP_AFTER = Duration.seconds(900)
#: Outbox INSERTs only: updates (marking published) and TTL removals are ignored.
STREAM_FILTER = {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"kind": {"S": ["outbox"]}}}}


def _runtime_only() -> lambda_.Code:
    """Function code for handlers that live entirely in the runtime layer (/opt/python)."""
    return lambda_.Code.from_inline("# The handler is in the retrysafe runtime layer (/opt/python).\n")


def _validate(scope: Construct, max_record_age: Duration, retry_attempts: int) -> None:
    age = int(max_record_age.to_seconds())
    if not 60 <= age <= int(MAX_RECORD_AGE.to_seconds()):
        raise ValueError(f"{scope.node.path}: max_record_age must be 60 s..24 h (stream records live 24 h; "
                         f"older ones go to the on-failure queue and the sweeper), got {age}s.")
    if not 0 <= retry_attempts <= 10_000:
        raise ValueError(f"{scope.node.path}: retry_attempts must be 0..10000 (bounded), got {retry_attempts}.")


def _failure_queue(scope: Construct) -> sqs.Queue:
    queue = sqs.Queue(scope, "FailureQueue", retention_period=Duration.days(14),
                      encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True)
    acknowledge(queue, "AwsSolutions-SQS3",
                "This queue is itself the on-failure destination (dead letters of the stream relay).")
    return queue


def _depth_alarm(scope: Construct, queue: sqs.IQueue) -> cloudwatch.Alarm:
    return queue.metric_approximate_number_of_messages_visible(statistic="Maximum").create_alarm(
        scope, "FailureQueueAlarm", threshold=1, evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        alarm_description=f"{scope.node.path}: outbox events failed to publish (the sweeper retries them)")


class Outbox(Construct):
    """Publishes outbox events: stream -> publisher Lambda -> target, plus a scheduled sweeper.

    Props:

    - ``table`` (required): the :class:`IdempotencyTable` (its NEW_IMAGE stream is enabled).
    - ``target`` (required): an :class:`OutboxTarget` (bus, topic or queue).
    - ``batch_size``: default 100. ``retry_attempts``: default 5 (then bisect-split batches
      have been retried and the record goes to the on-failure queue).
    - ``max_record_age``: default 24 h (at most 24 h: the stream's retention).
    - ``failure_queue``: the on-failure destination; default a new encrypted queue.
    - ``sweep_every``: default 5 minutes. ``sweep_after``: unpublished events older than this
      are re-published by the sweeper (default 900 s).
    - ``alarms``: default True (publisher errors, iterator age > 5 min, failure queue depth, parked
      events: ``OutboxEventParked`` >= 1, an event the target refuses permanently; see
      ``python -m retrysafe.outbox_parked``).

    Attributes: ``table``, ``publisher``, ``sweeper``, ``failure_queue``, ``event_source``, ``schedule``, ``alarms``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, target: OutboxTarget,
                 batch_size: int = 100, retry_attempts: int = 5, max_record_age: Duration = MAX_RECORD_AGE,
                 failure_queue: sqs.IQueue | None = None, sweep_every: Duration = SWEEP_EVERY,
                 sweep_after: Duration = SWEEP_AFTER, alarms: bool = True) -> None:
        super().__init__(scope, construct_id)
        _validate(self, max_record_age, retry_attempts)
        self.table = table
        env = target.environment()
        self.failure_queue = failure_queue or _failure_queue(self)
        self.publisher = IdempotentFunction(self, "Publisher", table=table, code=_runtime_only(),
                                            handler="retrysafe.outbox_publisher.handler", environment=env,
                                            timeout=Duration.seconds(60), description="retrysafe outbox publisher")
        table.grant_stream_read(self.publisher.role)
        target.grant_publish(self.publisher.role)
        self.event_source = lambda_.EventSourceMapping(
            self, "StreamMapping", target=self.publisher.function, event_source_arn=table.enable_stream(),
            starting_position=lambda_.StartingPosition.TRIM_HORIZON, batch_size=batch_size,
            bisect_batch_on_error=True, retry_attempts=retry_attempts, max_record_age=max_record_age,
            report_batch_item_failures=True, on_failure=sources.SqsDlq(self.failure_queue),
            filters=[{"pattern": json.dumps(STREAM_FILTER)}],
        )
        self.sweeper = IdempotentFunction(
            self, "Sweeper", table=table, code=_runtime_only(), handler="retrysafe.outbox_sweeper.handler",
            environment={**env, "RETRYSAFE_SWEEP_AFTER_SECONDS": str(int(sweep_after.to_seconds()))},
            timeout=Duration.minutes(2), description="retrysafe outbox sweeper")
        table.grant_sweep(self.sweeper.role)
        target.grant_publish(self.sweeper.role)
        self.schedule = events.Rule(self, "SweepSchedule", schedule=events.Schedule.rate(sweep_every),
                                    targets=[events_targets.LambdaFunction(self.sweeper.function)])
        self.alarms = self._alarms() if alarms else []

    def metric_publisher_errors(self) -> cloudwatch.Metric:
        """Publisher invocation errors (sum per 5 minutes)."""
        return self.publisher.function.metric_errors(statistic="Sum")

    def metric_iterator_age(self) -> cloudwatch.Metric:
        """How far the publisher lags behind the stream (maximum, milliseconds)."""
        return self.publisher.function.metric("IteratorAge", statistic="Maximum")

    def metric_parked_events(self) -> cloudwatch.Metric:
        """``OutboxEventParked``: events the target refused permanently (too large, malformed), set aside."""
        return self.table.metric("OutboxEventParked")

    def _alarms(self) -> list[cloudwatch.Alarm]:
        above = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD
        calm = cloudwatch.TreatMissingData.NOT_BREACHING
        return [
            self.metric_publisher_errors().create_alarm(
                self, "PublisherErrorsAlarm", threshold=1, evaluation_periods=1, comparison_operator=above,
                treat_missing_data=calm, alarm_description=f"{self.node.path}: outbox publisher errors"),
            self.metric_iterator_age().create_alarm(
                self, "IteratorAgeAlarm", threshold=300_000, evaluation_periods=3, comparison_operator=above,
                treat_missing_data=calm, alarm_description=f"{self.node.path}: publisher > 5 min behind the stream"),
            _depth_alarm(self, self.failure_queue),
            self.metric_parked_events().create_alarm(
                self, "ParkedEventsAlarm", threshold=1, evaluation_periods=1, comparison_operator=above,
                treat_missing_data=calm, alarm_description=f"{self.node.path}: outbox events parked (refused "
                "permanently by the target); fix, then republish with python -m retrysafe.outbox_parked"),
        ]


class OutboxPipe(Construct):
    """The no-code relay: an EventBridge Pipe from the table's stream to the target.

    Filters outbox INSERTs, bisects failing batches, retries a bounded number of times and
    dead-letters the rest. Pipes does not mark events published, so there is no sweeper:
    replay the failure queue instead. Consumers dedupe on the event id (``eid``).

    Props: ``table``, ``target`` (required); ``batch_size`` (default 10), ``retry_attempts``
    (default 5), ``max_record_age`` (default 24 h), ``failure_queue`` (default new), ``alarms``
    (default True: failure queue depth).
    Attributes: ``pipe``, ``role``, ``failure_queue``, ``alarms``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, target: OutboxTarget,
                 batch_size: int = 10, retry_attempts: int = 5, max_record_age: Duration = MAX_RECORD_AGE,
                 failure_queue: sqs.IQueue | None = None, alarms: bool = True) -> None:
        super().__init__(scope, construct_id)
        _validate(self, max_record_age, retry_attempts)
        stream_arn = table.enable_stream()
        self.failure_queue = failure_queue or _failure_queue(self)
        self.role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"),
                             description=f"{self.node.path}: read the outbox stream, publish, dead-letter")
        table.grant_stream_read(self.role)
        target.grant_publish(self.role)
        self.failure_queue.grant_send_messages(self.role)
        self.pipe = pipes.CfnPipe(
            self, "Pipe", role_arn=self.role.role_arn, source=stream_arn, target=target.arn,
            source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
                filter_criteria=pipes.CfnPipe.FilterCriteriaProperty(
                    filters=[pipes.CfnPipe.FilterProperty(pattern=json.dumps(STREAM_FILTER))]),
                dynamo_db_stream_parameters=pipes.CfnPipe.PipeSourceDynamoDBStreamParametersProperty(
                    starting_position="TRIM_HORIZON", batch_size=batch_size, maximum_retry_attempts=retry_attempts,
                    maximum_record_age_in_seconds=int(max_record_age.to_seconds()),
                    on_partial_batch_item_failure="AUTOMATIC_BISECT",
                    dead_letter_config=pipes.CfnPipe.DeadLetterConfigProperty(arn=self.failure_queue.queue_arn)),
            ),
            target_parameters=self._target_parameters(target),
        )
        self.pipe.node.add_dependency(self.role)
        self.alarms = [_depth_alarm(self, self.failure_queue)] if alarms else []

    @staticmethod
    def _target_parameters(target: OutboxTarget) -> pipes.CfnPipe.PipeTargetParametersProperty:
        image = "$.dynamodb.NewImage"
        fields = {"id": "eid", "type": "etype", "aggregateType": "aggt", "aggregateId": "aggid", "occurredAt": "at",
                  "payload": "payload"}
        # Pipes wants quotes around JSON-path variables and escapes the values itself.
        template = "{" + ", ".join(f'"{name}": "<{image}.{attr}.S>"' for name, attr in fields.items()) + "}"
        bus = None
        if target.bus is not None:
            bus = pipes.CfnPipe.PipeTargetEventBridgeEventBusParametersProperty(
                source=target.event_source, detail_type=f"{image}.etype.S")
        return pipes.CfnPipe.PipeTargetParametersProperty(input_template=template, event_bridge_event_bus_parameters=bus)
