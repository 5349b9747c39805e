"""``IdempotentQueueConsumer``: an SQS queue + DLQ feeding an idempotent function."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

import jsii
from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs

from constructs import Construct, IValidation

from ._props import refuse_ignored, struct_values
from .alarms import AlarmOptions, add_alarm
from .function import IdempotentFunction
from .horizon import queue_redelivery

_MIN_RECEIVES = 5
_VISIBILITY_FACTOR = 6
SQS_DEFAULT_RETENTION = Duration.days(4)
_SQS_DEFAULT_VISIBILITY = Duration.seconds(30)
_SQS_MAX_RETENTION = Duration.days(14)
DLQ_RETENTION = Duration.days(14)
_CREATED_QUEUE_DEFAULTS = {"encryption": sqs.QueueEncryption.SQS_MANAGED, "enforce_ssl": True}


@dataclass(frozen=True)
class DeployedQueue:
    """The deployed settings of an imported queue (``Queue.from_queue_arn``), which synthesis cannot read.

    They size the claim lease and the retry horizon. ``retention_period`` and
    ``dlq_retention_period`` @default 14 days (SQS's maximum, so the horizon is never too short);
    ``allow_redrive`` @default True (False: the DLQ's retention leaves the horizon).
    """

    visibility_timeout: Duration
    max_receive_count: int
    dead_letter_queue: sqs.IQueue
    retention_period: Duration = _SQS_MAX_RETENTION
    dlq_retention_period: Duration = _SQS_MAX_RETENTION
    allow_redrive: bool = True


class QueueConsumerProps(TypedDict, total=False):
    """:class:`IdempotentQueueConsumer` props other than ``function``, for constructs that build one (typed:
    a misspelled key is a type error). Each one is documented, with its default, on the consumer."""

    existing_queue: sqs.IQueue
    existing_queue_settings: DeployedQueue
    queue_props: sqs.QueueProps
    existing_dead_letter_queue: sqs.IQueue
    dead_letter_queue_props: sqs.QueueProps
    max_receive_count: int
    queue_logical_id: str
    dead_letter_queue_logical_id: str
    subscriber: str
    batch_size: int
    max_batching_window: Duration
    max_concurrency: int
    alarms: bool | AlarmOptions


class IdempotentQueueConsumer(Construct):
    """A queue (and DLQ) consumed by an :class:`IdempotentFunction` with partial batch failures.

    :param function: the consumer (required); its handler uses ``retrysafe.sqs.idempotent_sqs``. One
        event source per function: a second consumer of the same function is refused (it would
        overwrite the claim lease).
    :param existing_queue: a queue to consume instead of creating one. An ``sqs.Queue`` of this app
        brings its own settings: it must have a dead-letter queue with ``max_receive_count`` >= 5 and a
        visibility timeout >= 6x the function timeout (SQS's default of 30 s is refused for functions
        with timeouts over 5 s). An imported queue (``Queue.from_queue_arn``) needs
        ``existing_queue_settings``. @default a new queue and DLQ.
    :param existing_queue_settings: an imported queue's deployed settings (:class:`DeployedQueue`).
        @default none (refused without an imported ``existing_queue``).
    :param queue_props: the created queue's ``sqs.QueueProps``. @default retention 4 days, visibility
        timeout 6x the function timeout (less is refused), SSE-SQS, TLS only, standard (``fifo=True``
        for FIFO). Its ``dead_letter_queue`` is refused: use the DLQ props below.
    :param existing_dead_letter_queue: the created queue's DLQ. @default a new one
        (``dead_letter_queue_props``); FIFO-ness must match the queue's.
    :param dead_letter_queue_props: the created DLQ's ``sqs.QueueProps``. @default retention 14 days,
        redrive allowed (``redrive_allow_policy=RedriveAllowPolicy(redrive_permission=DENY_ALL)`` takes
        its retention out of the horizon).
    :param max_receive_count: receives before a message is dead-lettered. @default 5 (less is refused).
    :param queue_logical_id: pin the created queue's logical id (moving or renaming this construct then
        keeps the queue). @default derived from the construct path.
    :param dead_letter_queue_logical_id: the same for the created DLQ. @default derived from the construct path.
    :param subscriber: the subscriber the consumer's records are scoped by, passed as
        ``RETRYSAFE_SUBSCRIBER``. @default this construct's path below its stack (``"InventoryQueue"``):
        pin it before moving or renaming the construct, or in-flight retries run again. A
        ``subscriber=`` in the handler's decorator wins. Two consumers of one table with the same
        subscriber are refused.
    :param batch_size: messages per invocation. @default 10.
    :param max_batching_window: how long to gather a batch. @default none.
    :param max_concurrency: concurrent invocations. @default 5 (2..1000).
    :param alarms: @default True (DLQ depth >= 1, id ``DlqDepthAlarm``); False, or :class:`AlarmOptions`.

    The queue's redelivery window is added to the table's :class:`RetryHorizon`, and its
    visibility timeout reaches the function as ``RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS``.
    Attributes: ``queue``, ``dead_letter_queue``, ``max_receive_count``, ``visibility_seconds``,
    ``redelivery_seconds``, ``subscriber``, ``event_source``, ``dlq_alarm``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, function: IdempotentFunction,
                 existing_queue: sqs.IQueue | None = None, existing_queue_settings: DeployedQueue | None = None,
                 queue_props: sqs.QueueProps | None = None, existing_dead_letter_queue: sqs.IQueue | None = None,
                 dead_letter_queue_props: sqs.QueueProps | None = None, max_receive_count: int | None = None,
                 queue_logical_id: str | None = None, dead_letter_queue_logical_id: str | None = None,
                 subscriber: str | None = None, batch_size: int = 10, max_batching_window: Duration | None = None,
                 max_concurrency: int = 5, alarms: bool | AlarmOptions = True) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter_queue: sqs.IQueue
        self.queue: sqs.IQueue
        if not 2 <= max_concurrency <= 1000:
            raise ValueError(f"{self.node.path}: max_concurrency must be 2..1000 (SQS event source limit), "
                             f"got {max_concurrency}.")
        self._minimum_visibility = _VISIBILITY_FACTOR * int(function.timeout.to_seconds())
        self._function = function
        created = {"queue_props": queue_props, "existing_dead_letter_queue": existing_dead_letter_queue,
                   "dead_letter_queue_props": dead_letter_queue_props, "max_receive_count": max_receive_count,
                   "queue_logical_id": queue_logical_id, "dead_letter_queue_logical_id": dead_letter_queue_logical_id}
        if existing_queue is None:
            if existing_queue_settings is not None:
                raise ValueError(f"{self.node.path}: existing_queue_settings describe an imported existing_queue; "
                                 "pass existing_queue=Queue.from_queue_arn(...) with them, or omit them.")
            self._create(queue_props, existing_dead_letter_queue, dead_letter_queue_props,
                         _MIN_RECEIVES if max_receive_count is None else max_receive_count,
                         queue_logical_id, dead_letter_queue_logical_id)
        elif isinstance(existing_queue, sqs.Queue):
            refuse_ignored(self, "existing_queue", existing_queue,
                           {**created, "existing_queue_settings": existing_queue_settings},
                           "set them on that queue (sqs.Queue(..., visibility_timeout=..., retention_period=..., "
                           "dead_letter_queue=DeadLetterQueue(queue=..., max_receive_count=...)))")
            self._owned(existing_queue)
        else:
            refuse_ignored(self, "existing_queue", existing_queue, created,
                           "describe the imported queue's deployed settings in existing_queue_settings="
                           "DeployedQueue(...)")
            self._imported(existing_queue, existing_queue_settings)
        self._check_fifo(self.queue, self.dead_letter_queue)
        function.table.add_queue_redelivery(self.node.path, self.redelivery_seconds)
        function.bind_lease(self, self.visibility_seconds)
        self.subscriber = function.bind_subscriber(self, subscriber)
        self.event_source = sources.SqsEventSource(
            self.queue, batch_size=batch_size, max_batching_window=max_batching_window,
            report_batch_item_failures=True, max_concurrency=max_concurrency)
        function.invoke_target.add_event_source(self.event_source)
        options = AlarmOptions.of(alarms)
        self.dlq_alarm = self.add_dlq_alarm(options) if options.wants("DlqDepthAlarm") else None
        self.node.add_validation(_TimeoutCheck(self, function))

    def _check_fifo(self, queue: sqs.IQueue, dlq: sqs.IQueue) -> None:
        """SQS refuses a FIFO queue with a standard DLQ (and the reverse) only at deploy time."""
        if queue.fifo != dlq.fifo:
            kind, other = ("a FIFO", "a standard") if queue.fifo else ("a standard", "a FIFO")
            raise ValueError(f"{self.node.path}: {queue.node.path} is {kind} queue and its dead-letter queue "
                             f"{dlq.node.path} is {other} queue; SQS requires both to be of the same type and "
                             "the deployment would fail. Fix: make the DLQ the same type (a FIFO DLQ's name "
                             "ends in .fifo), or omit it to let the consumer create a matching one.")

    def _create(self, queue_props: sqs.QueueProps | None, existing_dlq: sqs.IQueue | None,
                dlq_props: sqs.QueueProps | None, receives: int, queue_logical_id: str | None,
                dlq_logical_id: str | None) -> None:
        props = struct_values(queue_props)
        if props.get("dead_letter_queue") is not None:
            raise ValueError(f"{self.node.path}: queue_props cannot set dead_letter_queue; pass "
                             "existing_dead_letter_queue=... and max_receive_count=... instead (the consumer sizes "
                             "the lease and the retry horizon from them).")
        refuse_ignored(self, "existing_dead_letter_queue", existing_dlq, {"dead_letter_queue_props": dlq_props,
                                                                           "dead_letter_queue_logical_id": dlq_logical_id},
                       "set them on that queue")
        retention = props.get("retention_period") or SQS_DEFAULT_RETENTION
        visibility = props.get("visibility_timeout") or Duration.seconds(self._minimum_visibility)
        fifo = bool(props.get("fifo"))
        self._check(receives, int(visibility.to_seconds()),
                    "pass max_receive_count=5 or more (or omit it)",
                    f"pass queue_props=QueueProps(visibility_timeout=Duration.seconds({self._minimum_visibility})) or "
                    "more (or omit it: the default is 6x the function timeout), or lower the function's timeout")
        dlq_settings = {**_CREATED_QUEUE_DEFAULTS, "retention_period": DLQ_RETENTION, "fifo": fifo or None,
                        **struct_values(dlq_props)}
        policy = dlq_settings.get("redrive_allow_policy")
        allow_redrive = existing_dlq is not None or policy is None or \
            policy.redrive_permission != sqs.RedrivePermission.DENY_ALL
        if existing_dlq is not None:
            self.dead_letter_queue = existing_dlq
            dlq_retention = Duration.seconds(self._dlq_retention(existing_dlq, None))
        else:
            self.dead_letter_queue = _pinned(sqs.Queue(self, "DeadLetterQueue", **dlq_settings), dlq_logical_id)
            dlq_retention = dlq_settings["retention_period"]
        self.queue = _pinned(sqs.Queue(
            self, "Queue", **{**_CREATED_QUEUE_DEFAULTS, "content_based_deduplication": False if fifo else None,
                              **props, "retention_period": retention, "visibility_timeout": visibility,
                              "fifo": fifo or None,
                              "dead_letter_queue": sqs.DeadLetterQueue(queue=self.dead_letter_queue,
                                                                       max_receive_count=receives)}),
            queue_logical_id)
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
                             "or let the consumer create both (omit existing_queue=).")
        cfn: sqs.CfnQueue = queue.node.default_child  # type: ignore[assignment]
        visibility = _seconds(cfn.visibility_timeout, _SQS_DEFAULT_VISIBILITY)
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

    def _imported(self, queue: sqs.IQueue, settings: DeployedQueue | None) -> None:
        """An imported queue: its settings cannot be read, so the ones that matter are required."""
        if settings is None:
            raise ValueError(
                f"{self.node.path}: the imported queue {queue.node.path} cannot be inspected at synth time, so "
                "pass its deployed settings: existing_queue_settings=DeployedQueue(visibility_timeout=Duration."
                "seconds(...), max_receive_count=<its redrive policy's maxReceiveCount>, dead_letter_queue="
                "Queue.from_queue_arn(...)). They size the claim lease and the retry horizon; retention_period "
                "and dlq_retention_period default to 14 days (SQS's maximum).")
        visibility = int(settings.visibility_timeout.to_seconds())
        self._check(settings.max_receive_count, visibility,
                    f"raise the redrive policy's maxReceiveCount of {queue.node.path} to 5 or more",
                    f"raise the visibility timeout of {queue.node.path} to {self._minimum_visibility}s or more "
                    "(and pass it here), or lower the function's timeout")
        self.queue = queue
        self.dead_letter_queue = settings.dead_letter_queue
        self.visibility_seconds = visibility
        self.max_receive_count = settings.max_receive_count
        self.redelivery_seconds = queue_redelivery(
            settings.retention_period, settings.visibility_timeout, settings.max_receive_count,
            settings.dlq_retention_period if settings.allow_redrive else None)

    @staticmethod
    def _dlq_retention(dlq: sqs.IQueue, given: Duration | None) -> int:
        """A DLQ's retention: given, its own setting, SQS's default when it sets none, or the maximum if unknown."""
        if given is not None:
            return int(given.to_seconds())
        cfn = dlq.node.default_child
        if isinstance(cfn, sqs.CfnQueue):
            return _seconds(cfn.message_retention_period, SQS_DEFAULT_RETENTION)
        return int(_SQS_MAX_RETENTION.to_seconds())

    def _check(self, receives: int, visibility: int, receives_fix: str, visibility_fix: str) -> None:
        if receives < _MIN_RECEIVES:
            raise ValueError(f"{self.node.path}: max_receive_count must be at least {_MIN_RECEIVES} so a throttled or "
                             f"briefly failing consumer does not dead-letter good messages; got {receives}. Fix: "
                             f"{receives_fix}.")
        if visibility < self._minimum_visibility:
            raise ValueError(f"{self.node.path}: visibility_timeout ({visibility}s) must be at least "
                             f"{_VISIBILITY_FACTOR}x the function timeout ({self._minimum_visibility}s = "
                             f"{_VISIBILITY_FACTOR} x {int(self._function.timeout.to_seconds())}s of "
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


@jsii.implements(IValidation)
class _TimeoutCheck:
    """The visibility check again at synthesis, on the function's L1: a timeout raised there after the consumer
    was wired (``function.node.default_child.timeout = ...``) bypasses the L2's ``timeout``."""

    def __init__(self, consumer: IdempotentQueueConsumer, function: IdempotentFunction) -> None:
        self._consumer, self._function = consumer, function

    def validate(self) -> list[str]:
        consumer, function = self._consumer, self._function
        cfn = function.function.node.default_child
        if not isinstance(cfn, lambda_.CfnFunction):
            return []
        timeout = Stack.of(cfn).resolve(cfn.timeout)
        if not isinstance(timeout, (int, float)):
            return []  # unset (the L2 always sets it) or a token synthesis cannot read
        needed = _VISIBILITY_FACTOR * math.ceil(timeout)
        if consumer.visibility_seconds >= needed:
            return []
        return [(f"{consumer.node.path}: the function {function.node.path} now has a timeout of {math.ceil(timeout)}s "
                f"(set on its CfnFunction after this consumer was wired), and the queue's visibility timeout "
                f"({consumer.visibility_seconds}s) must be at least {_VISIBILITY_FACTOR}x it ({needed}s), or messages "
                "are redelivered while still being processed (and the claim lease, "
                "RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS, lapses before the function ends). Fix: set the timeout "
                "through function_props=lambda_.FunctionOptions(timeout=...) so the consumer sizes the queue from "
                f"it, or raise the queue's visibility timeout to {needed}s, or lower the timeout.")]


def _pinned(queue: sqs.Queue, logical_id: str | None) -> sqs.Queue:
    """``queue`` with its logical id pinned to ``logical_id`` (when given)."""
    if logical_id is not None:
        queue.node.default_child.override_logical_id(logical_id)  # type: ignore[union-attr]
    return queue


def _seconds(value: object, default: Duration) -> int:
    """A CloudFormation seconds property (number or numeric string) or the SQS default."""
    if value is None:
        return int(default.to_seconds())
    return math.ceil(float(str(value)))
