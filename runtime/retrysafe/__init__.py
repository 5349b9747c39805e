"""retrysafe: idempotency for AWS Lambda on DynamoDB.

The names a handler's code writes, loaded on first use so that importing a
decorated handler stays cheap:

- the adapters: :func:`idempotent_http` (API Gateway REST v1 and HTTP API v2),
  :class:`IdempotencyMiddleware` and :data:`TRANSACTION_KEY` (Powertools event
  handler), :func:`idempotent_sqs` and its :class:`Message` (SQS consumers),
  :func:`idempotent_task` (Lambda tasks of Step Functions);
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
engine's parts from :mod:`retrysafe._engine`, test tools from :mod:`retrysafe.testing`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Where each exported name is defined (imported on first use).
_EXPORTS = {
    "BusinessConditionFailedError": "retrysafe.errors",
    "DynamoStore": "retrysafe._store",
    "Engine": "retrysafe._engine",
    "IdempotencyMiddleware": "retrysafe.http._middleware",
    "Message": "retrysafe.sqs",
    "Mode": "retrysafe._config",
    "RecordCache": "retrysafe._cache",
    "RetrysafeError": "retrysafe.errors",
    "TRANSACTION_KEY": "retrysafe.http._middleware",
    "Transaction": "retrysafe._transaction",
    "idempotent_http": "retrysafe.http._decorator",
    "idempotent_sqs": "retrysafe.sqs",
    "idempotent_task": "retrysafe.stepfunctions",
    "put_if_newer": "retrysafe._ordering",
    "update_if_newer": "retrysafe._ordering",
}

#: Names this package exported until 0.1.0, still importable from here with a DeprecationWarning.
_MOVED = {
    "Completion": "retrysafe._engine",
    "HttpIdempotency": "retrysafe.http._core",
    "Intent": "retrysafe._engine",
    "OutboxMessage": "retrysafe.outbox",
    "Outcome": "retrysafe._engine",
    "Publisher": "retrysafe.outbox.publisher",
    "Retention": "retrysafe._config",
    "Scope": "retrysafe._keys",
    "TaskIdempotency": "retrysafe.stepfunctions",
    "TaskInProgress": "retrysafe.errors",
    "TaskKeyMismatch": "retrysafe.errors",
    "TaskPayloadError": "retrysafe.errors",
    "WebhookReceiver": "retrysafe.webhook",
}

if TYPE_CHECKING:
    from ._cache import RecordCache
    from ._config import Mode
    from ._engine import Engine
    from .errors import BusinessConditionFailedError, RetrysafeError
    from .http._decorator import idempotent_http
    from .http._middleware import TRANSACTION_KEY, IdempotencyMiddleware
    from ._ordering import put_if_newer, update_if_newer
    from .sqs import Message, idempotent_sqs
    from .stepfunctions import idempotent_task
    from ._store import DynamoStore
    from ._transaction import Transaction

__all__ = [
    "TRANSACTION_KEY",
    "BusinessConditionFailedError",
    "DynamoStore",
    "Engine",
    "IdempotencyMiddleware",
    "Message",
    "Mode",
    "RecordCache",
    "RetrysafeError",
    "Transaction",
    "idempotent_http",
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
