"""``IdempotentStreamConsumer``: a Kinesis or DynamoDB stream consumed by an idempotent function, shard order kept."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kinesis as kinesis
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs

from constructs import Construct

from ._props import pin_logical_id, refuse_ignored, struct_values
from ._sources import (
    add_redelivery,
    dead_letter_queue,
    delivery_failures_alarm,
    depth_alarm,
    metric_depth,
    metric_destination_delivery_failures,
)
from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction
from .table import KEY_READ_ACTIONS, STREAM_ACTIONS, add_stream_reader, check_same_region, grant_key

#: Kinesis keeps records 24 hours by default, at most 365 days; DynamoDB Streams keeps them 24 hours.
_KINESIS_DEFAULT_RETENTION = Duration.hours(24)
_KINESIS_MAX_RETENTION = Duration.days(365)
_DYNAMODB_STREAM_RETENTION = Duration.hours(24)
#: Lambda's limits for stream event source mappings.
_MAX_RETRY_ATTEMPTS = 10_000
_MAX_PARALLELIZATION = 10
_ITERATOR_AGE_THRESHOLD = Duration.minutes(5)


class IdempotentStreamConsumer(Construct):
    """A Kinesis data stream or a DynamoDB table's stream, consumed by an :class:`IdempotentFunction`.

    The event source mapping reports partial batch failures (``ReportBatchItemFailures``: the
    handler answers with the sequence number of the first failed record, and the rest of its
    shard's batch), bisects a failing batch, retries a bounded number of times, and sends what
    still fails to an on-failure queue. Lambda puts only the failed batch's metadata there (shard,
    sequence numbers), not the records: replaying it means reading the stream again, so the
    stream's retention is this consumer's part of the table's :class:`RetryHorizon`.

    :param function: the consumer; its handler uses ``retrysafe.idempotent_kinesis`` or
        ``retrysafe.idempotent_dynamodb_stream``. Required.
    :param existing_stream: a Kinesis stream of your own. @default a new on-demand stream
        ``Stream`` (AWS-managed encryption, 24 hours' retention) from ``stream_props``.
    :param stream_props: ``kinesis.StreamProps`` of the new stream. @default on demand, AWS-managed
        encryption, 24 hours' retention. Refused with ``existing_stream``.
    :param stream_logical_id: pin the new stream's logical id (moving or renaming this construct
        then keeps the stream and its records). @default derived from the construct path. Refused
        with ``existing_stream``.
    :param existing_table: consume this DynamoDB table's stream instead (it must have one, in the
        function's region; with a customer-managed key the function gets ``kms:Decrypt`` on it; at
        most two readers of one table's stream in the app, an outbox relay included: a third is refused).
        @default none: a Kinesis stream. Refused with ``existing_stream``, ``stream_props``,
        ``stream_logical_id`` and ``retention_period``.
    :param retention_period: the deployed retention of an imported Kinesis stream
        (``Stream.from_stream_arn``), which synthesis cannot read. @default none: required for an
        imported stream, refused otherwise (a stream of this app brings its own).
    :param existing_failure_queue: the on-failure destination. @default a new queue
        ``FailureQueue`` from ``failure_queue_props``.
    :param failure_queue_props: ``sqs.QueueProps`` of the new queue. @default SQS-managed
        encryption, TLS only, 14 days' retention. Refused with ``existing_failure_queue``.
    :param failure_queue_logical_id: pin the new queue's logical id. @default derived from the
        construct path. Refused with ``existing_failure_queue``.
    :param subscriber: the subscriber the function's records are scoped by, passed as
        ``RETRYSAFE_SUBSCRIBER``. @default the function's subscriber when another source already gave
        it one, else this construct's path below its stack (pin it before moving or renaming the
        construct: its new event source mapping reads the stream again from ``starting_position``).
        A ``subscriber=`` in the handler's decorator wins. Two consumers with one subscriber on one
        table are refused.
    :param starting_position: where a new mapping starts reading. @default ``TRIM_HORIZON`` (no
        record of the retention is skipped).
    :param batch_size: records per batch. @default 100.
    :param max_batching_window: how long to gather a batch. @default none.
    :param retry_attempts: retries of a failing batch (after bisecting), 0..10000. @default 10.
    :param max_record_age: older records are not retried. @default none: until the retention ends.
    :param ordered: records of one shard run in order. @default True.
    :param parallelization_factor: batches per shard at once, 1..10; more than 1 keeps only the
        order per partition key, so it needs ``ordered=False``. @default 1.
    :param filters: event filtering patterns (``lambda_.FilterCriteria.filter(...)``). @default none.
    :param alarms: ``True``, ``False`` or :class:`AlarmOptions`. @default True: ``IteratorAgeAlarm``
        (the function more than ``iterator_age_threshold`` behind the stream for 15 minutes) and
        ``FailureQueueAlarm`` (on-failure queue depth >= 1) and ``DestinationDeliveryFailuresAlarm`` (the
        function's ``DestinationDeliveryFailures`` >= 1: Lambda could not put a failed batch's metadata in the
        on-failure queue, so nothing says which records to replay).
    :param iterator_age_threshold: the ``IteratorAgeAlarm``'s threshold. @default 5 minutes.

    Attributes: ``stream`` (None for a DynamoDB table), ``table`` (None for Kinesis),
    ``stream_arn``, ``failure_queue``, ``event_source``, ``retention_seconds``, ``subscriber``, ``alarms``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, function: IdempotentFunction,
                 existing_stream: kinesis.IStream | None = None, stream_props: kinesis.StreamProps | None = None,
                 existing_table: dynamodb.ITable | None = None, retention_period: Duration | None = None,
                 existing_failure_queue: sqs.IQueue | None = None, failure_queue_props: sqs.QueueProps | None = None,
                 starting_position: lambda_.StartingPosition = lambda_.StartingPosition.TRIM_HORIZON,
                 batch_size: int = 100, max_batching_window: Duration | None = None, retry_attempts: int = 10,
                 max_record_age: Duration | None = None, ordered: bool = True, parallelization_factor: int = 1,
                 filters: Sequence[Mapping[str, Any]] | None = None, alarms: bool | AlarmOptions = True,
                 iterator_age_threshold: Duration = _ITERATOR_AGE_THRESHOLD, stream_logical_id: str | None = None,
                 failure_queue_logical_id: str | None = None, subscriber: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self._function = function
        refuse_ignored(self, "existing_table", existing_table,
                       {"existing_stream": existing_stream, "stream_props": stream_props,
                        "stream_logical_id": stream_logical_id, "retention_period": retention_period},
                       "consume that table's DynamoDB stream alone (they are for a Kinesis stream)",
                       otherwise="to consume a Kinesis stream with them")
        refuse_ignored(self, "existing_stream", existing_stream,
                       {"stream_props": stream_props, "stream_logical_id": stream_logical_id},
                       "set them on that stream")
        refuse_ignored(self, "existing_failure_queue", existing_failure_queue,
                       {"failure_queue_props": failure_queue_props,
                        "failure_queue_logical_id": failure_queue_logical_id}, "set them on that queue")
        if not 0 <= retry_attempts <= _MAX_RETRY_ATTEMPTS:
            raise ValueError(f"{self.node.path}: retry_attempts must be 0..{_MAX_RETRY_ATTEMPTS} (bounded: a poison "
                             f"record must not hold its shard until the retention ends), got {retry_attempts}.")
        if not 1 <= parallelization_factor <= _MAX_PARALLELIZATION:
            raise ValueError(f"{self.node.path}: parallelization_factor must be 1..{_MAX_PARALLELIZATION}, got "
                             f"{parallelization_factor}.")
        if ordered and parallelization_factor > 1:
            raise ValueError(f"{self.node.path}: parallelization_factor={parallelization_factor} runs several batches "
                             "of one shard at once, so its records no longer run in order (only those with the same "
                             "partition key do). Pass ordered=False to accept that, or leave parallelization_factor "
                             "at 1.")
        self.stream: kinesis.IStream | None = None
        self.table: dynamodb.ITable | None = existing_table
        if existing_table is not None:
            check_same_region(self, existing_table, "the table whose stream is consumed",
                              why="Lambda maps a stream only to a function of its region, so the deployment would "
                                  "fail.")
            self.stream_arn = self._table_stream(existing_table)
            add_stream_reader(existing_table, self)
            retention = _DYNAMODB_STREAM_RETENTION
        else:
            self.stream, retention = self._kinesis(existing_stream, stream_props, stream_logical_id, retention_period)
            self.stream_arn = self.stream.stream_arn
        self.retention_seconds = int(retention.to_seconds())
        kind = "the DynamoDB stream's" if existing_table is not None else "the Kinesis stream's"
        add_redelivery(self, function, self.retention_seconds, f"{kind} retention ({self.retention_seconds}s)",
                       "shorten the stream's retention_period" if existing_table is None else
                       "shorten the other parts of the horizon (DynamoDB Streams keeps records 24 hours)")
        self.failure_queue, _ = dead_letter_queue(
            self, "FailureQueue", existing_failure_queue, failure_queue_props, failure_queue_logical_id,
            "the on-failure destination: metadata of batches that failed every attempt")
        self._grant_read(function.role)
        self.subscriber = function.bind_subscriber(self, subscriber)
        self.event_source = lambda_.EventSourceMapping(
            self, "Mapping", target=function.invoke_target, event_source_arn=self.stream_arn,
            starting_position=starting_position, batch_size=batch_size, max_batching_window=max_batching_window,
            bisect_batch_on_error=True, retry_attempts=retry_attempts, max_record_age=max_record_age,
            report_batch_item_failures=True, parallelization_factor=parallelization_factor,
            on_failure=sources.SqsDlq(self.failure_queue), filters=list(filters) if filters else None)
        self.alarms = self._alarms(AlarmOptions.of(alarms), iterator_age_threshold)

    def _kinesis(self, existing: kinesis.IStream | None, props: kinesis.StreamProps | None,
                 logical_id: str | None, retention_period: Duration | None) -> tuple[kinesis.IStream, Duration]:
        if existing is None:
            if retention_period is not None:
                raise ValueError(f"{self.node.path}: retention_period describes an imported stream; for a new one "
                                 "pass stream_props=kinesis.StreamProps(retention_period=...).")
            settings: dict[str, Any] = {"encryption": kinesis.StreamEncryption.MANAGED,
                                        "stream_mode": kinesis.StreamMode.ON_DEMAND, **struct_values(props)}
            stream = kinesis.Stream(self, "Stream", **settings)
            pin_logical_id(stream, logical_id)
            return stream, settings.get("retention_period") or _KINESIS_DEFAULT_RETENTION
        cfn = existing.node.default_child
        if isinstance(cfn, kinesis.CfnStream):
            if retention_period is not None:
                raise ValueError(f"{self.node.path}: existing_stream={existing.node.path} brings its own retention, "
                                 "so retention_period would not apply; omit it.")
            hours = Stack.of(self).resolve(cfn.retention_period_hours)
            return existing, Duration.hours(int(hours)) if hours is not None else _KINESIS_DEFAULT_RETENTION
        if retention_period is None:
            raise ValueError(f"{self.node.path}: the imported stream {existing.node.path} cannot be inspected at "
                             "synth time, so pass its deployed retention: retention_period=Duration.hours(...) "
                             "(24 hours unless it was raised; up to 365 days). It sizes the retry horizon.")
        if int(retention_period.to_seconds()) > int(_KINESIS_MAX_RETENTION.to_seconds()):
            raise ValueError(f"{self.node.path}: retention_period is at most 365 days (Kinesis), got "
                             f"{int(retention_period.to_seconds())}s.")
        return existing, retention_period

    def _table_stream(self, table: dynamodb.ITable) -> str:
        cfn = table.node.default_child
        arn = table.table_stream_arn
        if arn is None and isinstance(cfn, dynamodb.CfnTable) and cfn.stream_specification is not None:
            arn = cfn.attr_stream_arn  # a stream switched on through the L1 (IdempotencyTable's): the L2 never knew
        if arn is None or (isinstance(cfn, dynamodb.CfnTable) and cfn.stream_specification is None):
            raise ValueError(f"{self.node.path}: the table {table.node.path} has no stream. Create it with "
                             "stream=StreamViewType.NEW_AND_OLD_IMAGES (or NEW_IMAGE), or import it with "
                             "Table.from_table_attributes(..., table_stream_arn=...).")
        return arn

    def _grant_read(self, role: iam.IRole) -> None:
        """Read the stream, on its ARN only (CDK's DynamoDB event source grants ``ListStreams`` on ``*``)."""
        if self.stream is not None:
            self.stream.grant_read(role)
            return
        assert self.table is not None
        iam.Grant.add_to_principal(grantee=role, actions=list(STREAM_ACTIONS), resource_arns=[self.stream_arn])
        if self.table.encryption_key is not None:
            grant_key(role, self.table.encryption_key, KEY_READ_ACTIONS)

    def grant_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` put records on the Kinesis stream (a DynamoDB table's stream is written by its table)."""
        if self.stream is None:
            raise ValueError(f"{self.node.path}: a DynamoDB stream is written through its table: grant "
                             "table.grant_write_data(...) instead.")
        return self.stream.grant_write(grantee)

    def metric_iterator_age(self, **options: Any) -> cloudwatch.Metric:
        """How far the function lags behind the stream (``IteratorAge``, maximum, milliseconds)."""
        return self._function.function.metric("IteratorAge", **{"statistic": "Maximum", **options})

    def metric_failure_queue_depth(self, **options: Any) -> cloudwatch.Metric:
        """Failed batches waiting in the on-failure queue (maximum per 5 minutes)."""
        return metric_depth(self.failure_queue, **options)

    def _alarms(self, options: AlarmOptions, threshold: Duration) -> list[cloudwatch.Alarm]:
        made = []
        if options.wants("IteratorAgeAlarm"):
            made.append(add_alarm(self, "IteratorAgeAlarm", self.metric_iterator_age(),
                                  threshold=int(threshold.to_milliseconds()), evaluation_periods=3, options=options,
                                  description=f"{self.node.path}: the consumer is more than "
                                  f"{int(threshold.to_seconds())}s behind the stream"))
        failed = depth_alarm(self, "FailureQueueAlarm", self.failure_queue, options,
                             "batches that failed every attempt (replay them from the stream before it expires)")
        lost = delivery_failures_alarm(self, self._function, options, "failed batches lost, Lambda could not put "
                                       "their metadata in the on-failure queue")
        return made + [alarm for alarm in (failed, lost) if alarm is not None]

    def metric_destination_delivery_failures(self, **options: Any) -> cloudwatch.Metric:
        """The function's ``DestinationDeliveryFailures``: failed batches Lambda could not put in the on-failure queue."""
        return metric_destination_delivery_failures(self._function, **options)
