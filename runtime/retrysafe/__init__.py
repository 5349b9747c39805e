"""retrysafe: idempotency for AWS Lambda on DynamoDB.

The names a handler's code writes, loaded on first use so that importing a
decorated handler stays cheap:

- the adapters: :func:`idempotent` (a Lambda handler of any event: EventBridge, SNS, S3,
  direct Invoke...), :func:`idempotent_function` (a plain function called inside any
  handler; :func:`register_lambda_context` in a handler retrysafe does not decorate, so their
  claims last as long as the invocation) and :class:`ResultSerializer` (how their results are stored),
  :func:`idempotent_http` (API Gateway REST v1 and HTTP API v2),
  :class:`IdempotencyMiddleware` and :data:`TRANSACTION_KEY` (Powertools event
  handler), :func:`idempotent_sqs` and its :class:`Message` (SQS consumers),
  :func:`idempotent_task` (Lambda tasks of Step Functions), :func:`idempotent_kinesis` and
  :func:`idempotent_dynamodb_stream` with their :class:`KinesisMessage` and :class:`DynamoDBChange`
  (stream consumers);
- the handler's transaction: :class:`Transaction` (writes, ``append_event``,
  ``step``, ``derive_key``), the order-aware writes :func:`put_if_newer`,
  :func:`update_if_newer`, and :class:`Scope` (keys derived outside a handler);
- configuration: :class:`Mode`, :class:`DynamoStore`, :class:`Engine`,
  :class:`RecordCache` (``engine=Engine(store, cache=RecordCache(1024))``) and
  :func:`register_snapstart` (a store built by hand under Lambda SnapStart), :class:`HomeRegions`
  (a table with replicas: the region each tenant's records live in) and :class:`PowertoolsCutover`
  (the ``powertools_cutover=`` option: switching from Powertools idempotency), :class:`ReplayInfo`
  and :data:`ReplayHook` (the ``on_replay=`` option of every adapter: a hook on replayed answers),
  :data:`Tenant` (what ``tenant=`` takes on the adapters with an authenticated caller);
- errors a handler catches: :class:`RetrysafeError` (the base of every error,
  all in :mod:`retrysafe.errors`) and :class:`BusinessConditionFailedError`.

The other public modules: :mod:`retrysafe.errors`, :mod:`retrysafe.names` (every
wire name: environment variables, headers, attributes), :mod:`retrysafe.metrics`,
:mod:`retrysafe.http`, :mod:`retrysafe.sqs`, :mod:`retrysafe.streams`, :mod:`retrysafe.stepfunctions`,
:mod:`retrysafe.webhook`, :mod:`retrysafe.outbox` (with the deployed handlers
:mod:`retrysafe.outbox.publisher`, :mod:`retrysafe.outbox.sweeper`,
:mod:`retrysafe.outbox.pipe` and :mod:`retrysafe.outbox.parked`, behind ``retrysafe outbox parked``) and
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
    "DynamoDBChange": "retrysafe.streams",
    "DynamoStore": "retrysafe._store",
    "Engine": "retrysafe._engine",
    "HomeRegions": "retrysafe._regions",
    "IdempotencyMiddleware": "retrysafe.http._middleware",
    "KinesisMessage": "retrysafe.streams",
    "Message": "retrysafe.sqs",
    "Mode": "retrysafe._config",
    "PowertoolsCutover": "retrysafe._cutover",
    "RecordCache": "retrysafe._cache",
    "ReplayHook": "retrysafe._replay",
    "ReplayInfo": "retrysafe._replay",
    "ResultSerializer": "retrysafe._results",
    "RetrysafeError": "retrysafe.errors",
    "Scope": "retrysafe._keys",
    "TRANSACTION_KEY": "retrysafe.http._middleware",
    "Transaction": "retrysafe._transaction",
    "idempotent": "retrysafe._generic",
    "idempotent_dynamodb_stream": "retrysafe.streams",
    "idempotent_function": "retrysafe._generic",
    "idempotent_http": "retrysafe.http._decorator",
    "idempotent_kinesis": "retrysafe.streams",
    "idempotent_sqs": "retrysafe.sqs",
    "idempotent_task": "retrysafe.stepfunctions",
    "put_if_newer": "retrysafe._ordering",
    "Tenant": "retrysafe._tenant",
    "register_lambda_context": "retrysafe._invocation",
    "register_snapstart": "retrysafe._snapstart",
    "update_if_newer": "retrysafe._ordering",
}

if TYPE_CHECKING:
    from ._cache import RecordCache
    from ._config import Mode
    from ._cutover import PowertoolsCutover
    from ._engine import Engine
    from ._generic import idempotent, idempotent_function
    from ._invocation import register_lambda_context
    from ._keys import Scope
    from ._ordering import put_if_newer, update_if_newer
    from ._regions import HomeRegions
    from ._replay import ReplayHook, ReplayInfo
    from ._results import ResultSerializer
    from ._snapstart import register_snapstart
    from ._store import DynamoStore
    from ._tenant import Tenant
    from ._transaction import Transaction
    from .errors import BusinessConditionFailedError, RetrysafeError
    from .http._decorator import idempotent_http
    from .http._middleware import TRANSACTION_KEY, IdempotencyMiddleware
    from .sqs import Message, idempotent_sqs
    from .stepfunctions import idempotent_task
    from .streams import DynamoDBChange, KinesisMessage, idempotent_dynamodb_stream, idempotent_kinesis

__all__ = [
    "TRANSACTION_KEY",
    "BusinessConditionFailedError",
    "DynamoDBChange",
    "DynamoStore",
    "Engine",
    "HomeRegions",
    "IdempotencyMiddleware",
    "KinesisMessage",
    "Message",
    "Mode",
    "PowertoolsCutover",
    "RecordCache",
    "ReplayHook",
    "ReplayInfo",
    "ResultSerializer",
    "RetrysafeError",
    "Scope",
    "Tenant",
    "Transaction",
    "idempotent",
    "idempotent_dynamodb_stream",
    "idempotent_function",
    "idempotent_http",
    "idempotent_kinesis",
    "idempotent_sqs",
    "idempotent_task",
    "put_if_newer",
    "register_lambda_context",
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
