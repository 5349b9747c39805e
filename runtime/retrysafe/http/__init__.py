"""The HTTP contract: the ``@idempotent_http`` decorator and the Powertools event-handler middleware."""

from ._core import HttpIdempotency, StoredResponse
from ._decorator import idempotent_http

__all__ = ["HttpIdempotency", "StoredResponse", "idempotent_http"]
