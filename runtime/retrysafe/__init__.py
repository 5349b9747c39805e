"""retrysafe: idempotency for AWS Lambda on DynamoDB.

Names are loaded on first use so that importing a decorated handler stays cheap.

- :func:`idempotent_http` -- API Gateway handlers (REST v1, HTTP API v2)
- :class:`IdempotencyMiddleware` -- Powertools event-handler resolvers
- :func:`idempotent_task` -- Lambda tasks invoked by Step Functions
- :class:`Transaction` -- the handler's writes and outbox events, committed with the record
- :class:`Engine`, :class:`DynamoStore`, :class:`Mode` -- the shared claim/commit engine
- :func:`idempotent_sqs` -- SQS consumers (the inbox); :class:`WebhookReceiver` -- webhook receipt
- :class:`Publisher` -- outbox publishing (``retrysafe.outbox_publisher.handler``, ``retrysafe.outbox_sweeper.handler``)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "idempotent_http": "retrysafe.http.decorator",
    "HttpIdempotency": "retrysafe.http.core",
    "IdempotencyMiddleware": "retrysafe.http.middleware",
    "TRANSACTION_KEY": "retrysafe.http.middleware",
    "Transaction": "retrysafe.transaction",
    "Engine": "retrysafe.engine",
    "Intent": "retrysafe.engine",
    "Completion": "retrysafe.engine",
    "Outcome": "retrysafe.engine",
    "DynamoStore": "retrysafe.store",
    "RecordCache": "retrysafe.cache",
    "Mode": "retrysafe.config",
    "Retention": "retrysafe.config",
    "Scope": "retrysafe.keys",
    "idempotent_task": "retrysafe.stepfunctions",
    "TaskIdempotency": "retrysafe.stepfunctions",
    "TaskInProgress": "retrysafe.errors",
    "TaskKeyMismatch": "retrysafe.errors",
    "TaskPayloadError": "retrysafe.errors",
    "idempotent_sqs": "retrysafe.sqs",
    "Message": "retrysafe.sqs",
    "Publisher": "retrysafe.outbox_publisher",
    "OutboxMessage": "retrysafe.outbox_publisher",
    "WebhookReceiver": "retrysafe.webhook",
    "put_if_newer": "retrysafe.webhook",
    "update_if_newer": "retrysafe.webhook",
}

if TYPE_CHECKING:
    from .cache import RecordCache
    from .config import Mode, Retention
    from .engine import Completion, Engine, Intent, Outcome
    from .errors import TaskInProgress, TaskKeyMismatch, TaskPayloadError
    from .http.core import HttpIdempotency
    from .http.decorator import idempotent_http
    from .http.middleware import TRANSACTION_KEY, IdempotencyMiddleware
    from .keys import Scope
    from .outbox_publisher import OutboxMessage, Publisher
    from .sqs import Message, idempotent_sqs
    from .stepfunctions import TaskIdempotency, idempotent_task
    from .store import DynamoStore
    from .transaction import Transaction
    from .webhook import WebhookReceiver, put_if_newer, update_if_newer

__all__ = [
    "TRANSACTION_KEY",
    "Completion",
    "DynamoStore",
    "Engine",
    "HttpIdempotency",
    "IdempotencyMiddleware",
    "Intent",
    "Message",
    "Mode",
    "OutboxMessage",
    "Outcome",
    "Publisher",
    "RecordCache",
    "Retention",
    "Scope",
    "TaskIdempotency",
    "TaskInProgress",
    "TaskKeyMismatch",
    "TaskPayloadError",
    "Transaction",
    "WebhookReceiver",
    "idempotent_http",
    "idempotent_sqs",
    "idempotent_task",
    "put_if_newer",
    "update_if_newer",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retrysafe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
