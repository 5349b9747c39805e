"""retrysafe_cdk: AWS CDK v2 constructs that deploy retrysafe.

- :class:`IdempotencyTable` -- records, outbox events, TTL on ``exp``, the ``outbox-unpublished`` GSI
- :class:`RetryHorizon` -- how long records must live, in named parts
- :class:`IdempotentFunction` -- Lambda + runtime layer + least-privilege grants
- :class:`IdempotentRestApi`, :class:`IdempotentHttpApi` -- API Gateway in front of idempotent functions
- :class:`IdempotentQueueConsumer` -- SQS + DLQ + partial batch failures
- :class:`Outbox`, :class:`OutboxPipe` -- stream -> EventBridge / SNS / SQS (Lambda publisher or Pipes)
- :class:`WebhookReceiver` -- signed webhooks: receipt through the outbox to a queue and a worker
"""

from .api import IdempotentHttpApi, IdempotentRestApi
from .function import IdempotentFunction
from .horizon import RetryHorizon, queue_redelivery
from .outbox import Outbox, OutboxPipe
from .queue import IdempotentQueueConsumer
from .table import IdempotencyTable
from .targets import OutboxTarget
from .webhook import WebhookReceiver

__all__ = [
    "IdempotencyTable", "IdempotentFunction", "IdempotentHttpApi", "IdempotentQueueConsumer", "IdempotentRestApi",
    "Outbox", "OutboxPipe", "OutboxTarget", "RetryHorizon", "WebhookReceiver", "queue_redelivery",
]
