"""retrysafe: idempotency for AWS Lambda on DynamoDB.

Names are loaded on first use so that importing a decorated handler stays cheap.

- :func:`idempotent_http` -- API Gateway handlers (REST v1, HTTP API v2)
- :class:`IdempotencyMiddleware` -- Powertools event-handler resolvers
- :class:`Transaction` -- the handler's writes and outbox events, committed with the record
- :class:`Engine`, :class:`DynamoStore`, :class:`Mode` -- the shared claim/commit engine
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
}

if TYPE_CHECKING:
    from .cache import RecordCache
    from .config import Mode, Retention
    from .engine import Completion, Engine, Intent, Outcome
    from .http.core import HttpIdempotency
    from .http.decorator import idempotent_http
    from .http.middleware import TRANSACTION_KEY, IdempotencyMiddleware
    from .keys import Scope
    from .store import DynamoStore
    from .transaction import Transaction

__all__ = [
    "TRANSACTION_KEY", "Completion", "DynamoStore", "Engine", "HttpIdempotency", "IdempotencyMiddleware", "Intent",
    "Mode", "Outcome", "RecordCache", "Retention", "Scope", "Transaction", "idempotent_http",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'retrysafe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
