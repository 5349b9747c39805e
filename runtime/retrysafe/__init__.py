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
    "DynamoStore": "retrysafe.store",
    "Engine": "retrysafe.engine",
    "HomeRegions": "retrysafe._regions",
    "IdempotencyMiddleware": "retrysafe.http.middleware",
    "Message": "retrysafe.sqs",
    "Mode": "retrysafe.config",
    "RecordCache": "retrysafe.cache",
    "RetrysafeError": "retrysafe.errors",
    "TRANSACTION_KEY": "retrysafe.http.middleware",
    "Transaction": "retrysafe.transaction",
    "idempotent_http": "retrysafe.http.decorator",
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
    from ._regions import HomeRegions
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
    from .transaction import Transaction

__all__ = [
    "TRANSACTION_KEY",
    "BusinessConditionFailedError",
    "DynamoStore",
    "Engine",
    "HomeRegions",
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
