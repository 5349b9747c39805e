"""retrysafe: idempotency for AWS Lambda on DynamoDB.

The names a handler's code writes, loaded on first use so that importing a
decorated handler stays cheap:

- the adapters: :func:`idempotent` (a Lambda handler of any event: EventBridge, SNS, S3,
  direct Invoke...), :func:`idempotent_function` (a plain function called inside any
  handler) and :class:`ResultSerializer` (how their results are stored),
  :func:`idempotent_http` (API Gateway REST v1 and HTTP API v2),
  :class:`IdempotencyMiddleware` and :data:`TRANSACTION_KEY` (Powertools event
  handler), :func:`idempotent_sqs` and its :class:`Message` (SQS consumers),
  :func:`idempotent_task` (Lambda tasks of Step Functions), :func:`idempotent_kinesis` and
  :func:`idempotent_dynamodb_stream` with their :class:`KinesisMessage` and :class:`DynamoDBChange`
  (stream consumers);
- the handler's transaction: :class:`Transaction` (writes, ``append_event``,
  ``step``, ``derive_key``) and the order-aware writes :func:`put_if_newer`,
  :func:`update_if_newer`;
- configuration: :class:`Mode`, :class:`DynamoStore`, :class:`Engine` and
  :class:`RecordCache` (``engine=Engine(store, cache=RecordCache(1024))``);
- errors a handler catches: :class:`RetrysafeError` (the base of every error,
  all in :mod:`retrysafe.errors`) and :class:`BusinessConditionFailedError`.

Everything else is imported from its module: the webhook receiver and its
providers from :mod:`retrysafe.webhook`, the outbox publisher and sweeper from
:mod:`retrysafe.outbox.publisher` and :mod:`retrysafe.outbox.sweeper`, the
engine's parts from :mod:`retrysafe.engine`, test tools from :mod:`retrysafe.testing`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Where each exported name is defined (imported on first use).
_EXPORTS = {
    "BusinessConditionFailedError": "retrysafe.errors",
    "DynamoDBChange": "retrysafe.streams",
    "DynamoStore": "retrysafe.store",
    "Engine": "retrysafe.engine",
    "IdempotencyMiddleware": "retrysafe.http.middleware",
    "KinesisMessage": "retrysafe.streams",
    "Message": "retrysafe.sqs",
    "Mode": "retrysafe.config",
    "RecordCache": "retrysafe.cache",
    "ResultSerializer": "retrysafe._results",
    "RetrysafeError": "retrysafe.errors",
    "TRANSACTION_KEY": "retrysafe.http.middleware",
    "Transaction": "retrysafe.transaction",
    "idempotent": "retrysafe._generic",
    "idempotent_dynamodb_stream": "retrysafe.streams",
    "idempotent_function": "retrysafe._generic",
    "idempotent_http": "retrysafe.http.decorator",
    "idempotent_kinesis": "retrysafe.streams",
    "idempotent_sqs": "retrysafe.sqs",
    "idempotent_task": "retrysafe.stepfunctions",
    "put_if_newer": "retrysafe.ordering",
    "update_if_newer": "retrysafe.ordering",
}

#: Names this package exported until 0.1.0, still importable from here with a DeprecationWarning.
_MOVED = {
    "Completion": "retrysafe.engine",
    "HttpIdempotency": "retrysafe.http.core",
    "Intent": "retrysafe.engine",
    "OutboxMessage": "retrysafe.outbox",
    "Outcome": "retrysafe.engine",
    "Publisher": "retrysafe.outbox.publisher",
    "Retention": "retrysafe.config",
    "Scope": "retrysafe.keys",
    "TaskIdempotency": "retrysafe.stepfunctions",
    "TaskInProgress": "retrysafe.errors",
    "TaskKeyMismatch": "retrysafe.errors",
    "TaskPayloadError": "retrysafe.errors",
    "WebhookReceiver": "retrysafe.webhook",
}

if TYPE_CHECKING:
    from ._generic import idempotent, idempotent_function
    from ._results import ResultSerializer
    from .cache import RecordCache
    from .config import Mode
    from .engine import Engine
    from .errors import BusinessConditionFailedError, RetrysafeError
    from .http.decorator import idempotent_http
    from .http.middleware import TRANSACTION_KEY, IdempotencyMiddleware
    from .ordering import put_if_newer, update_if_newer
    from .sqs import Message, idempotent_sqs
    from .stepfunctions import idempotent_task
    from .store import DynamoStore
    from .streams import DynamoDBChange, KinesisMessage, idempotent_dynamodb_stream, idempotent_kinesis
    from .transaction import Transaction

__all__ = [
    "TRANSACTION_KEY",
    "BusinessConditionFailedError",
    "DynamoDBChange",
    "DynamoStore",
    "Engine",
    "IdempotencyMiddleware",
    "KinesisMessage",
    "Message",
    "Mode",
    "RecordCache",
    "ResultSerializer",
    "RetrysafeError",
    "Transaction",
    "idempotent",
    "idempotent_dynamodb_stream",
    "idempotent_function",
    "idempotent_http",
    "idempotent_kinesis",
    "idempotent_sqs",
    "idempotent_task",
    "put_if_newer",
    "update_if_newer",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    module = _MOVED.get(name)
    if module is not None:
        warnings.warn(f"retrysafe.{name} is no longer exported from retrysafe: import it from {module}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module 'retrysafe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
