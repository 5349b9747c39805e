"""retrysafe_cdk: AWS CDK v2 constructs that deploy retrysafe.

- :class:`IdempotencyTable` -- records, outbox events, TTL on ``exp``, the ``outbox-unpublished`` GSI
- :class:`RetryHorizon` -- how long records must live, in named parts
- :class:`IdempotentFunction` -- Lambda + runtime layer + least-privilege grants
  (:class:`CutoverFromPowertools`: its ``powertools_cutover`` prop, switching from Powertools idempotency)
- :class:`IdempotentRestApi`, :class:`IdempotentHttpApi` -- API Gateway in front of idempotent functions
- :class:`IdempotentQueueConsumer` -- SQS + DLQ + partial batch failures (:class:`DeployedQueue`: an imported
  queue's deployed settings; :class:`QueueConsumerProps`: its props, typed, for constructs that build one)
- :class:`IdempotentEventRule` -- an EventBridge rule target with retries and a DLQ
- :class:`IdempotentStreamConsumer` -- Kinesis or DynamoDB Streams, shard order, partial batch failures
- :class:`IdempotentTopicSubscription` -- an SNS subscription with a DLQ
- :class:`Outbox`, :class:`OutboxPipe` -- stream -> EventBridge / SNS / SQS (Lambda publisher or Pipes)
- :class:`WebhookReceiver` -- signed webhooks: receipt through the outbox to a queue and a worker
- :class:`Dashboard` -- one CloudWatch dashboard for a service built from these constructs
- :class:`AlarmOptions` -- alarm actions, and alarms turned off one by one
- :func:`idempotent_invoke`, :class:`Saga` -- Step Functions tasks with the right payload and retries,
  and sagas with compensations
- :func:`python_function` -- a plain Python Lambda (e.g. an authorizer) with its own log group and a
  role that can only write to it, as the constructs build theirs
- :func:`acknowledge` -- acknowledge a cdk-nag finding on a construct, with its reason

The local sandbox that runs a synthesized app is a separate package, ``retrysafe_sandbox``
(``pip install 'retrysafe[sandbox]'``).
"""

from __future__ import annotations

from .alarms import AlarmOptions
from .api import IdempotentHttpApi, IdempotentRestApi
from .cutover import CutoverFromPowertools
from .dashboard import Dashboard
from .events import IdempotentEventRule
from .function import IdempotentFunction, python_function
from .horizon import RetryHorizon, queue_redelivery
from .nag import acknowledge
from .outbox import Outbox, OutboxPipe
from .queue import DeployedQueue, IdempotentQueueConsumer, QueueConsumerProps
from .sns import IdempotentTopicSubscription
from .streams import IdempotentStreamConsumer
from .table import IdempotencyTable
from .targets import OutboxTarget
from .webhook import WebhookReceiver
from .workflow import Compensation, Saga, SagaStep, idempotent_invoke, retry_policy, task_payload

__all__ = [
    "AlarmOptions", "Compensation", "CutoverFromPowertools", "Dashboard", "DeployedQueue", "IdempotencyTable", "IdempotentEventRule",
    "IdempotentFunction", "IdempotentHttpApi", "IdempotentQueueConsumer", "IdempotentRestApi",
    "IdempotentStreamConsumer", "IdempotentTopicSubscription", "Outbox", "OutboxPipe", "OutboxTarget",
    "QueueConsumerProps", "RetryHorizon", "Saga", "SagaStep", "WebhookReceiver", "acknowledge", "idempotent_invoke",
    "python_function", "queue_redelivery", "retry_policy", "task_payload",
]
