"""``IdempotentQueueConsumer``: an SQS queue + DLQ feeding an idempotent function."""

from __future__ import annotations

import math

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs

from constructs import Construct

from .function import IdempotentFunction
from .horizon import queue_redelivery

MIN_RECEIVES = 5
VISIBILITY_FACTOR = 6
SQS_DEFAULT_RETENTION = Duration.days(4)
SQS_DEFAULT_VISIBILITY = Duration.seconds(30)
DLQ_RETENTION = Duration.days(14)
#: The consumer's claim lease in claim-first mode (read by ``retrysafe.sqs``).
VISIBILITY_ENV = "RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS"


class IdempotentQueueConsumer(Construct):
    """A queue (and DLQ) consumed by an :class:`IdempotentFunction` with partial batch failures.

    Props:

    - ``function`` (required): the consumer; its handler uses ``retrysafe.sqs.idempotent_sqs``.
    - ``queue``: an existing ``sqs.Queue`` (it must have a DLQ); default: a new queue + DLQ.
    - ``retention_period``: default 4 days. ``dlq_retention_period``: default 14 days.
    - ``visibility_timeout``: default 6x the function timeout (less is refused).
    - ``max_receive_count``: default 5 (less is refused).
    - ``allow_redrive``: default True; False denies DLQ redrive (its retention then leaves the horizon).
    - ``batch_size``: default 10. ``max_batching_window``: default none.
    - ``max_concurrency``: default 5 (2..1000). ``fifo``: default False.
    - ``alarms``: default True (DLQ depth >= 1).

    The queue's redelivery window is added to the table's :class:`RetryHorizon`.
    Attributes: ``queue``, ``dead_letter_queue``, ``max_receive_count``, ``visibility_seconds``,
    ``redelivery_seconds``,
    ``event_source``, ``dlq_alarm``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, function: IdempotentFunction,
                 queue: sqs.Queue | None = None, retention_period: Duration = SQS_DEFAULT_RETENTION,
                 dlq_retention_period: Duration = DLQ_RETENTION, visibility_timeout: Duration | None = None,
                 max_receive_count: int = MIN_RECEIVES, allow_redrive: bool = True, batch_size: int = 10,
                 max_batching_window: Duration | None = None, max_concurrency: int = 5, fifo: bool = False,
                 alarms: bool = True) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue: sqs.IQueue
        if not 2 <= max_concurrency <= 1000:
            raise ValueError(f"{self.node.path}: max_concurrency must be 2..1000 (SQS event source limit), "
                             f"got {max_concurrency}.")
        minimum_visibility = VISIBILITY_FACTOR * int(function.timeout.to_seconds())
        if queue is None:
            visibility = visibility_timeout or Duration.seconds(minimum_visibility)
            self._check(max_receive_count, int(visibility.to_seconds()), minimum_visibility)
            self.dead_letter_queue = sqs.Queue(
                self, "DeadLetterQueue", retention_period=dlq_retention_period, fifo=fifo or None,
                encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                redrive_allow_policy=None if allow_redrive else sqs.RedriveAllowPolicy(
                    redrive_permission=sqs.RedrivePermission.DENY_ALL),
            )
            self.queue = sqs.Queue(
                self, "Queue", retention_period=retention_period, visibility_timeout=visibility, fifo=fifo or None,
                content_based_deduplication=False if fifo else None,
                encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
                dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue,
                                                      max_receive_count=max_receive_count),
            )
            self.max_receive_count = max_receive_count
            self.visibility_seconds = int(visibility.to_seconds())
            self.redelivery_seconds = queue_redelivery(retention_period, visibility, max_receive_count,
                                                       dlq_retention_period if allow_redrive else None)
        else:
            self.queue = queue
            self.redelivery_seconds = self._existing(queue, minimum_visibility)
        function.table.add_queue_redelivery(self.node.path, self.redelivery_seconds)
        function.add_environment(VISIBILITY_ENV, str(self.visibility_seconds))
        self.event_source = sources.SqsEventSource(
            self.queue, batch_size=batch_size, max_batching_window=max_batching_window,
            report_batch_item_failures=True, max_concurrency=max_concurrency)
        function.function.add_event_source(self.event_source)
        self.dlq_alarm = self.add_dlq_alarm() if alarms else None

    def _check(self, receives: int, visibility: int, minimum_visibility: int) -> None:
        if receives < MIN_RECEIVES:
            raise ValueError(f"{self.node.path}: max_receive_count must be at least {MIN_RECEIVES} so a throttled or "
                             f"briefly failing consumer does not dead-letter good messages; got {receives}.")
        if visibility < minimum_visibility:
            raise ValueError(f"{self.node.path}: visibility_timeout ({visibility}s) must be at least "
                             f"{VISIBILITY_FACTOR}x the function timeout ({minimum_visibility}s), or messages are "
                             "redelivered while still being processed. Raise visibility_timeout or lower the "
                             "function's timeout.")

    def _existing(self, queue: sqs.Queue, minimum_visibility: int) -> int:
        """Validate an existing queue and compute its redelivery window from its own settings."""
        dlq = queue.dead_letter_queue
        if dlq is None:
            raise ValueError(f"{self.node.path}: the existing queue {queue.node.path} has no dead-letter queue. "
                             "Create it with dead_letter_queue=DeadLetterQueue(queue=..., max_receive_count=5) "
                             "or let the consumer create both (omit queue=).")
        cfn: sqs.CfnQueue = queue.node.default_child  # type: ignore[assignment]
        dlq_cfn = dlq.queue.node.default_child
        visibility = _seconds(cfn.visibility_timeout, SQS_DEFAULT_VISIBILITY)
        receives = int(dlq.max_receive_count)
        self._check(receives, visibility, minimum_visibility)
        self.dead_letter_queue = dlq.queue
        self.visibility_seconds = visibility
        self.max_receive_count = receives
        dlq_retention = _seconds(getattr(dlq_cfn, "message_retention_period", None), SQS_DEFAULT_RETENTION)
        return queue_redelivery(Duration.seconds(_seconds(cfn.message_retention_period, SQS_DEFAULT_RETENTION)),
                                Duration.seconds(visibility), receives, Duration.seconds(dlq_retention))

    def grant_send(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` send messages to the queue."""
        return self.queue.grant_send_messages(grantee)

    def metric_dlq_depth(self) -> cloudwatch.Metric:
        """Messages waiting in the DLQ (maximum per 5 minutes)."""
        return self.dead_letter_queue.metric_approximate_number_of_messages_visible(statistic="Maximum")

    def metric_oldest_message_age(self) -> cloudwatch.Metric:
        """Age of the oldest message in the source queue (maximum per 5 minutes)."""
        return self.queue.metric_approximate_age_of_oldest_message(statistic="Maximum")

    def add_dlq_alarm(self) -> cloudwatch.Alarm:
        """Alarm when any message is dead-lettered."""
        return self.metric_dlq_depth().create_alarm(
            self, "DlqDepthAlarm", threshold=1, evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"{self.node.path}: messages in the dead-letter queue")


def _seconds(value: object, default: Duration) -> int:
    """A CloudFormation seconds property (number or numeric string) or the SQS default."""
    if value is None:
        return int(default.to_seconds())
    return math.ceil(float(str(value)))
