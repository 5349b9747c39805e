"""The HTTP contract: the ``@idempotent_http`` decorator and the Powertools event-handler middleware."""

from .core import HttpIdempotency, StoredResponse
from .decorator import idempotent_http

__all__ = ["HttpIdempotency", "StoredResponse", "idempotent_http"]
