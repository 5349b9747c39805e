"""retrysafe_cdk: AWS CDK v2 constructs that deploy retrysafe.

- :class:`IdempotencyTable` -- records, outbox events, TTL on ``exp``, the ``outbox-unpublished`` GSI
- :class:`RetryHorizon` -- how long records must live, in named parts
- :class:`IdempotentFunction` -- Lambda + runtime layer + least-privilege grants
- :class:`IdempotentRestApi`, :class:`IdempotentHttpApi` -- API Gateway in front of idempotent functions
- :class:`IdempotentQueueConsumer` -- SQS + DLQ + partial batch failures
- :class:`Outbox`, :class:`OutboxPipe` -- stream -> EventBridge / SNS / SQS (Lambda publisher or Pipes)
- :class:`WebhookReceiver` -- signed webhooks: receipt through the outbox to a queue and a worker
- :class:`Dashboard` -- one CloudWatch dashboard for a service built from these constructs
- :class:`AlarmOptions` -- alarm actions, and alarms turned off one by one
- :func:`idempotent_invoke`, :class:`Saga` -- Step Functions tasks with the right payload and retries,
  and sagas with compensations

Names are imported on first use, so that ``retrysafe_cdk.sandbox`` (which
only reads synthesized templates) never starts jsii.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AlarmOptions": "alarms", "Dashboard": "dashboard",
    "IdempotentHttpApi": "api", "IdempotentRestApi": "api",
    "IdempotentFunction": "function",
    "RetryHorizon": "horizon", "queue_redelivery": "horizon",
    "Outbox": "outbox", "OutboxPipe": "outbox",
    "IdempotentQueueConsumer": "queue",
    "IdempotencyTable": "table",
    "OutboxTarget": "targets",
    "WebhookReceiver": "webhook",
    "Compensation": "workflow", "Saga": "workflow", "SagaStep": "workflow", "idempotent_invoke": "workflow",
    "retry_policy": "workflow", "task_payload": "workflow",
}

if TYPE_CHECKING:
    from .alarms import AlarmOptions
    from .api import IdempotentHttpApi, IdempotentRestApi
    from .dashboard import Dashboard
    from .function import IdempotentFunction
    from .horizon import RetryHorizon, queue_redelivery
    from .outbox import Outbox, OutboxPipe
    from .queue import IdempotentQueueConsumer
    from .table import IdempotencyTable
    from .targets import OutboxTarget
    from .webhook import WebhookReceiver
    from .workflow import Compensation, Saga, SagaStep, idempotent_invoke, retry_policy, task_payload

__all__ = [
    "AlarmOptions", "Compensation", "Dashboard", "IdempotencyTable", "IdempotentFunction", "IdempotentHttpApi", "IdempotentQueueConsumer",
    "IdempotentRestApi", "Outbox", "OutboxPipe", "OutboxTarget", "RetryHorizon", "Saga", "SagaStep",
    "WebhookReceiver", "idempotent_invoke", "queue_redelivery", "retry_policy", "task_payload",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
