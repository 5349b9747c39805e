"""The business retry horizon: how long an idempotency record must outlive its first request.

A record that expires while a retry can still arrive turns that retry into a second
effect. The horizon is the sum of named parts, because the paths chain (a client
retry enqueues a message that is redriven from the DLQ and replayed by an operator):

``client_retries``   clients and SDKs retrying the same request
``queue_redelivery`` computed from the queues, event rules, streams and topic subscriptions the constructs
                   wire (see :func:`queue_redelivery`, :func:`async_redelivery`; a stream's part is its retention)
``webhook_replay``   providers redelivering webhooks (GitHub and Stripe: up to 3 days)
``operator_replay``  a human re-running a failed batch or event
``settlement``       reconciliation with a downstream (payments settle in days)

It is never sized to a transport's dedup window (SQS FIFO: 5 minutes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from aws_cdk import Duration
from retrysafe import names

DAY = 86_400
#: Lambda keeps an asynchronous invocation (EventBridge, SNS) queued at most 6 hours, retrying it meanwhile.
LAMBDA_ASYNC_MAX_EVENT_AGE = Duration.hours(6)
#: SNS's fixed delivery policy for Lambda endpoints, at its longest: 3 immediate retries, 2 one second apart,
#: 10 with backoff of at most 20 s, then 100,000 twenty seconds apart (100,015 attempts, "over 23 days").
SNS_LAMBDA_DELIVERY_SECONDS = 3 * 0 + 2 * 1 + 10 * 20 + 100_000 * 20


def queue_redelivery(retention: Duration, visibility_timeout: Duration, max_receive_count: int,
                     dlq_retention: Duration | None = None) -> int:
    """Seconds a message can keep coming back through one queue.

    The source queue's retention, plus the DLQ's retention when messages can be
    redriven from it (``dlq_retention``), plus one visibility timeout per receive.
    """
    seconds = int(retention.to_seconds()) + int(visibility_timeout.to_seconds()) * max_receive_count
    if dlq_retention is not None:
        seconds += int(dlq_retention.to_seconds())
    return seconds


def async_redelivery(delivery: Duration, async_max_event_age: Duration, dlq_retention: Duration) -> int:
    """Seconds an event delivered to a function asynchronously (EventBridge, SNS) can keep coming back.

    The service's own delivery retries (``delivery``: an EventBridge target's maximum event age,
    SNS's delivery policy), then Lambda's asynchronous queue (``async_max_event_age``), then an
    operator redriving the dead-letter queue (``dlq_retention``).
    """
    return int(delivery.to_seconds()) + int(async_max_event_age.to_seconds()) + int(dlq_retention.to_seconds())


@dataclass(frozen=True)
class RetryHorizon:
    """How long retries of one business intent can arrive, in named parts (seconds).

    Defaults add up to 7 days before any queue is wired: client retries 1 day,
    webhook replay 3 days, operator replay 2 days, settlement 1 day.
    ``queues`` holds the redelivery window of each queue a construct wired
    (keyed by construct path); the largest one is the queue part.
    """

    client_retries: int = DAY
    webhook_replay: int = 3 * DAY
    operator_replay: int = 2 * DAY
    settlement: int = DAY
    queues: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, *, client_retries: Duration | None = None, webhook_replay: Duration | None = None,
           operator_replay: Duration | None = None, settlement: Duration | None = None) -> RetryHorizon:
        """Build a horizon from durations; omitted parts keep their defaults."""
        default = cls()

        def seconds(value: Duration | None, fallback: int) -> int:
            return fallback if value is None else int(value.to_seconds())

        return cls(client_retries=seconds(client_retries, default.client_retries),
                   webhook_replay=seconds(webhook_replay, default.webhook_replay),
                   operator_replay=seconds(operator_replay, default.operator_replay),
                   settlement=seconds(settlement, default.settlement))

    @property
    def queue_redelivery(self) -> int:
        """The longest redelivery window of the wired queues (0 when none)."""
        return max(self.queues.values(), default=0)

    def parts(self) -> dict[str, int]:
        """The named parts, in seconds."""
        return {"client_retries": self.client_retries, "queue_redelivery": self.queue_redelivery,
                "webhook_replay": self.webhook_replay, "operator_replay": self.operator_replay,
                "settlement": self.settlement}

    @property
    def total_seconds(self) -> int:
        """The horizon: the sum of the parts (at least 24 hours)."""
        return max(sum(self.parts().values()), names.MIN_HORIZON_SECONDS)

    def with_queue(self, name: str, seconds: int) -> RetryHorizon:
        """This horizon with one more wired queue."""
        return replace(self, queues={**self.queues, name: seconds})

    def describe(self) -> str:
        """``client_retries=86400s + queue_redelivery=...`` for error messages."""
        return " + ".join(f"{name}={value}s" for name, value in self.parts().items())
