"""retrysafe: idempotency for AWS Lambda on DynamoDB.

The names a handler's code writes, loaded on first use so that importing a
decorated handler stays cheap:

- the adapters: :func:`idempotent_http` (API Gateway REST v1 and HTTP API v2),
  :class:`IdempotencyMiddleware` and :data:`TRANSACTION_KEY` (Powertools event
  handler), :func:`idempotent_sqs` and its :class:`Message` (SQS consumers),
  :func:`idempotent_task` (Lambda tasks of Step Functions);
- the handler's transaction: :class:`Transaction` (writes, ``append_event``,
  ``step``, ``derive_key``), the order-aware writes :func:`put_if_newer`,
  :func:`update_if_newer`, and :class:`Scope` (keys derived outside a handler);
- configuration: :class:`Mode`, :class:`DynamoStore`, :class:`Engine`,
  :class:`RecordCache` (``engine=Engine(store, cache=RecordCache(1024))``) and
  :func:`register_snapstart` (a store built by hand under Lambda SnapStart);
- errors a handler catches: :class:`RetrysafeError` (the base of every error,
  all in :mod:`retrysafe.errors`) and :class:`BusinessConditionFailedError`.

The other public modules: :mod:`retrysafe.errors`, :mod:`retrysafe.names` (every
wire name: environment variables, headers, attributes), :mod:`retrysafe.metrics`,
:mod:`retrysafe.http`, :mod:`retrysafe.sqs`, :mod:`retrysafe.stepfunctions`,
:mod:`retrysafe.webhook`, :mod:`retrysafe.outbox` (with the deployed handlers
:mod:`retrysafe.outbox.publisher`, :mod:`retrysafe.outbox.sweeper`,
:mod:`retrysafe.outbox.pipe` and the command :mod:`retrysafe.outbox.parked`) and
:mod:`retrysafe.testing`. Modules whose name starts with ``_`` are the
implementation: not API, renamed or removed without notice.
"""

from __future__ import annotations

import importlib
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
    "Scope": "retrysafe._keys",
    "TRANSACTION_KEY": "retrysafe.http._middleware",
    "Transaction": "retrysafe._transaction",
    "idempotent_http": "retrysafe.http._decorator",
    "idempotent_sqs": "retrysafe.sqs",
    "idempotent_task": "retrysafe.stepfunctions",
    "put_if_newer": "retrysafe._ordering",
    "register_snapstart": "retrysafe._snapstart",
    "update_if_newer": "retrysafe._ordering",
}

if TYPE_CHECKING:
    from ._cache import RecordCache
    from ._config import Mode
    from ._engine import Engine
    from ._keys import Scope
    from ._ordering import put_if_newer, update_if_newer
    from ._snapstart import register_snapstart
    from ._store import DynamoStore
    from ._transaction import Transaction
    from .errors import BusinessConditionFailedError, RetrysafeError
    from .http._decorator import idempotent_http
    from .http._middleware import TRANSACTION_KEY, IdempotencyMiddleware
    from .sqs import Message, idempotent_sqs
    from .stepfunctions import idempotent_task

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
    "Scope",
    "Transaction",
    "idempotent_http",
    "idempotent_sqs",
    "idempotent_task",
    "put_if_newer",
    "register_snapstart",
    "update_if_newer",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'retrysafe' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
