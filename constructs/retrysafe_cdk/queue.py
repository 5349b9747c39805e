"""``IdempotentQueueConsumer``: an SQS queue + DLQ feeding an idempotent function."""

from __future__ import annotations

import math
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from retrysafe import names

from constructs import Construct

from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction
from .horizon import queue_redelivery

MIN_RECEIVES = 5
VISIBILITY_FACTOR = 6
SQS_DEFAULT_RETENTION = Duration.days(4)
SQS_DEFAULT_VISIBILITY = Duration.seconds(30)
SQS_MAX_RETENTION = Duration.days(14)
DLQ_RETENTION = Duration.days(14)
#: The consumer's claim lease in claim-first mode (read by ``retrysafe.sqs``).
VISIBILITY_ENV = names.VISIBILITY_TIMEOUT_ENV


class IdempotentQueueConsumer(Construct):
    """A queue (and DLQ) consumed by an :class:`IdempotentFunction` with partial batch failures.

    Props:

    - ``function`` (required): the consumer; its handler uses ``retrysafe.sqs.idempotent_sqs``.
    - ``queue``: default a new queue + DLQ, with the props below. Or an existing queue:

      - an ``sqs.Queue`` of this app brings its own settings: it must have a dead-letter queue
        with ``max_receive_count`` >= 5 and a visibility timeout >= 6x the function timeout
        (SQS's default of 30 s is refused for functions with timeouts over 5 s). The queue
        props below are then refused (set them on the queue itself).
      - an imported queue (``Queue.from_queue_arn``) cannot be inspected: pass its deployed
        ``visibility_timeout``, ``max_receive_count`` and ``dead_letter_queue``;
        ``retention_period`` and ``dlq_retention_period`` default to 14 days, SQS's maximum,
        so the retry horizon is never too short.

    - ``dead_letter_queue``: the DLQ of an imported queue, or an existing DLQ for a new queue.
    - ``retention_period``: default 4 days. ``dlq_retention_period``: default 14 days.
    - ``visibility_timeout``: default 6x the function timeout (less is refused).
    - ``max_receive_count``: default 5 (less is refused).
    - ``allow_redrive``: default True; False denies DLQ redrive (its retention then leaves the horizon).
    - ``batch_size``: default 10. ``max_batching_window``: default none.
    - ``max_concurrency``: default 5 (2..1000). ``fifo``: default False.
    - ``alarms``: default True (DLQ depth >= 1, id ``DlqDepthAlarm``); False, or :class:`AlarmOptions`.

    The queue's redelivery window is added to the table's :class:`RetryHorizon`, and its
    visibility timeout reaches the function as ``RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS``.
    Attributes: ``queue``, ``dead_letter_queue``, ``max_receive_count``, ``visibility_seconds``,
    ``redelivery_seconds``, ``event_source``, ``dlq_alarm``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, function: IdempotentFunction,
                 queue: sqs.IQueue | None = None, dead_letter_queue: sqs.IQueue | None = None,
                 retention_period: Duration | None = None, dlq_retention_period: Duration | None = None,
                 visibility_timeout: Duration | None = None, max_receive_count: int | None = None,
                 allow_redrive: bool = True, batch_size: int = 10, max_batching_window: Duration | None = None,
                 max_concurrency: int = 5, fifo: bool = False, alarms: bool | AlarmOptions = True) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue: sqs.IQueue
        self.queue: sqs.IQueue
        if not 2 <= max_concurrency <= 1000:
            raise ValueError(f"{self.node.path}: max_concurrency must be 2..1000 (SQS event source limit), "
                             f"got {max_concurrency}.")
        self._minimum_visibility = VISIBILITY_FACTOR * int(function.timeout.to_seconds())
        self._function = function
        if queue is None:
            self._create(dead_letter_queue, retention_period or SQS_DEFAULT_RETENTION,
                         dlq_retention_period or DLQ_RETENTION, visibility_timeout,
                         MIN_RECEIVES if max_receive_count is None else max_receive_count, allow_redrive, fifo)
        elif isinstance(queue, sqs.Queue):
            given = {"dead_letter_queue": dead_letter_queue, "retention_period": retention_period,
                     "dlq_retention_period": dlq_retention_period, "visibility_timeout": visibility_timeout,
                     "max_receive_count": max_receive_count, "allow_redrive": None if allow_redrive else False,
                     "fifo": fifo or None}
            ignored = [name for name, value in given.items() if value is not None]
            if ignored:
                raise ValueError(
                    f"{self.node.path}: queue={queue.node.path} brings its own settings, so "
                    f"{', '.join(ignored)} would not apply. Set them on that queue (sqs.Queue(..., "
                    "visibility_timeout=..., retention_period=..., dead_letter_queue=DeadLetterQueue(queue=..., "
                    "max_receive_count=...))) and omit them here, or omit queue= to let the consumer create both.")
            self._owned(queue)
        else:
            self._imported(queue, dead_letter_queue, retention_period, dlq_retention_period, visibility_timeout,
                           max_receive_count, allow_redrive)
        function.table.add_queue_redelivery(self.node.path, self.redelivery_seconds)
        function.add_environment(VISIBILITY_ENV, str(self.visibility_seconds))
        self.event_source = sources.SqsEventSource(
            self.queue, batch_size=batch_size, max_batching_window=max_batching_window,
            report_batch_item_failures=True, max_concurrency=max_concurrency)
        function.invoke_target.add_event_source(self.event_source)
        options = AlarmOptions.of(alarms)
        self.dlq_alarm = self.add_dlq_alarm(options) if options.wants("DlqDepthAlarm") else None

    def _create(self, dead_letter_queue: sqs.IQueue | None, retention: Duration, dlq_retention: Duration,
                visibility_timeout: Duration | None, receives: int, allow_redrive: bool, fifo: bool) -> None:
        visibility = visibility_timeout or Duration.seconds(self._minimum_visibility)
        self._check(receives, int(visibility.to_seconds()),
                    "pass max_receive_count=5 or more (or omit it)",
                    f"pass visibility_timeout=Duration.seconds({self._minimum_visibility}) or more (or omit it: "
                    "the default is 6x the function timeout), or lower the function's timeout")
        self.dead_letter_queue = dead_letter_queue or sqs.Queue(
            self, "DeadLetterQueue", retention_period=dlq_retention, fifo=fifo or None,
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            redrive_allow_policy=None if allow_redrive else sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.DENY_ALL),
        )
        if dead_letter_queue is not None:
            dlq_retention = Duration.seconds(self._dlq_retention(dead_letter_queue, None))
        self.queue = sqs.Queue(
            self, "Queue", retention_period=retention, visibility_timeout=visibility, fifo=fifo or None,
            content_based_deduplication=False if fifo else None,
            encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=receives),
        )
        self.max_receive_count = receives
        self.visibility_seconds = int(visibility.to_seconds())
        self.redelivery_seconds = queue_redelivery(retention, visibility, receives,
                                                   dlq_retention if allow_redrive else None)

    def _owned(self, queue: sqs.Queue) -> None:
        """Validate a queue of this app and compute its redelivery window from its own settings."""
        dlq = queue.dead_letter_queue
        if dlq is None:
            raise ValueError(f"{self.node.path}: the existing queue {queue.node.path} has no dead-letter queue. "
                             "Create it with dead_letter_queue=DeadLetterQueue(queue=..., max_receive_count=5) "
                             "or let the consumer create both (omit queue=).")
        cfn: sqs.CfnQueue = queue.node.default_child  # type: ignore[assignment]
        visibility = _seconds(cfn.visibility_timeout, SQS_DEFAULT_VISIBILITY)
        receives = int(dlq.max_receive_count)
        unset = " (SQS's default: the queue sets none)" if cfn.visibility_timeout is None else ""
        self._check(receives, visibility,
                    f"create {queue.node.path}'s DeadLetterQueue with max_receive_count=5 or more",
                    f"create {queue.node.path} with visibility_timeout=Duration.seconds({self._minimum_visibility}) "
                    f"or more (it has {visibility}s{unset}), or lower the function's timeout")
        self.queue = queue
        self.dead_letter_queue = dlq.queue
        self.visibility_seconds = visibility
        self.max_receive_count = receives
        self.redelivery_seconds = queue_redelivery(
            Duration.seconds(_seconds(cfn.message_retention_period, SQS_DEFAULT_RETENTION)),
            Duration.seconds(visibility), receives, Duration.seconds(self._dlq_retention(dlq.queue, None)))

    def _imported(self, queue: sqs.IQueue, dead_letter_queue: sqs.IQueue | None, retention: Duration | None,
                  dlq_retention: Duration | None, visibility_timeout: Duration | None, receives: int | None,
                  allow_redrive: bool) -> None:
        """An imported queue: its settings cannot be read, so the ones that matter are required props."""
        missing = [name for name, value in (("visibility_timeout", visibility_timeout),
                                            ("max_receive_count", receives),
                                            ("dead_letter_queue", dead_letter_queue)) if value is None]
        if missing:
            raise ValueError(
                f"{self.node.path}: the imported queue {queue.node.path} cannot be inspected at synth time, so "
                f"pass its deployed settings: {', '.join(missing)} (visibility_timeout=Duration.seconds(...), "
                "max_receive_count=<its redrive policy's maxReceiveCount>, dead_letter_queue=Queue.from_queue_arn("
                "...)). They size the claim lease and the retry horizon; retention_period and dlq_retention_period "
                "default to 14 days (SQS's maximum).")
        assert visibility_timeout is not None and receives is not None and dead_letter_queue is not None
        visibility = int(visibility_timeout.to_seconds())
        self._check(receives, visibility,
                    f"raise the redrive policy's maxReceiveCount of {queue.node.path} to 5 or more",
                    f"raise the visibility timeout of {queue.node.path} to {self._minimum_visibility}s or more "
                    "(and pass it here), or lower the function's timeout")
        self.queue = queue
        self.dead_letter_queue = dead_letter_queue
        self.visibility_seconds = visibility
        self.max_receive_count = receives
        self.redelivery_seconds = queue_redelivery(
            retention or SQS_MAX_RETENTION, visibility_timeout, receives,
            Duration.seconds(self._dlq_retention(dead_letter_queue, dlq_retention)) if allow_redrive else None)

    @staticmethod
    def _dlq_retention(dlq: sqs.IQueue, given: Duration | None) -> int:
        """A DLQ's retention: given, its own setting, SQS's default when it sets none, or the maximum if unknown."""
        if given is not None:
            return int(given.to_seconds())
        cfn = dlq.node.default_child
        if isinstance(cfn, sqs.CfnQueue):
            return _seconds(cfn.message_retention_period, SQS_DEFAULT_RETENTION)
        return int(SQS_MAX_RETENTION.to_seconds())

    def _check(self, receives: int, visibility: int, receives_fix: str, visibility_fix: str) -> None:
        if receives < MIN_RECEIVES:
            raise ValueError(f"{self.node.path}: max_receive_count must be at least {MIN_RECEIVES} so a throttled or "
                             f"briefly failing consumer does not dead-letter good messages; got {receives}. Fix: "
                             f"{receives_fix}.")
        if visibility < self._minimum_visibility:
            raise ValueError(f"{self.node.path}: visibility_timeout ({visibility}s) must be at least "
                             f"{VISIBILITY_FACTOR}x the function timeout ({self._minimum_visibility}s = "
                             f"{VISIBILITY_FACTOR} x {int(self._function.timeout.to_seconds())}s of "
                             f"{self._function.node.path}), or messages are redelivered while still being "
                             f"processed. Fix: {visibility_fix}.")

    def grant_send(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` send messages to the queue."""
        return self.queue.grant_send_messages(grantee)

    def metric_dlq_depth(self, **options: Any) -> cloudwatch.Metric:
        """Messages waiting in the DLQ (maximum per 5 minutes; ``options``: ``MetricOptions`` fields)."""
        return self.dead_letter_queue.metric_approximate_number_of_messages_visible(
            **{"statistic": "Maximum", **options})

    def metric_oldest_message_age(self, **options: Any) -> cloudwatch.Metric:
        """Age of the oldest message in the source queue (maximum per 5 minutes)."""
        return self.queue.metric_approximate_age_of_oldest_message(**{"statistic": "Maximum", **options})

    def add_dlq_alarm(self, options: AlarmOptions | None = None) -> cloudwatch.Alarm:
        """Alarm when any message is dead-lettered."""
        return add_alarm(self, "DlqDepthAlarm", self.metric_dlq_depth(), threshold=1,
                         description=f"{self.node.path}: messages in the dead-letter queue",
                         options=options or AlarmOptions())


def _seconds(value: object, default: Duration) -> int:
    """A CloudFormation seconds property (number or numeric string) or the SQS default."""
    if value is None:
        return int(default.to_seconds())
    return math.ceil(float(str(value)))
