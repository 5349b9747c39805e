"""The HTTP contract for API Gateway (REST v1, HTTP API v2): the ``@idempotent_http`` decorator.

:func:`idempotent_http` wraps a plain Lambda handler; the Powertools event-handler
middleware is :class:`retrysafe.IdempotencyMiddleware` (``from retrysafe import
IdempotencyMiddleware, TRANSACTION_KEY``: it imports Powertools' event handler, so this
package does not load it). Both reduce a handler's answer to a :class:`StoredResponse` and
let :class:`HttpIdempotency` decide: run, replay, or refuse with ``application/problem+json``.
The tenant of a request (``tenant=``, a :data:`retrysafe.Tenant` of the :class:`HttpRequest`) comes
from a callable: :func:`authorizer_tenant`, :func:`iam_caller`, :func:`header_tenant`, or
:func:`default_tenant` (the default).
"""

from ._core import HttpIdempotency, StoredResponse
from ._decorator import HttpLambdaHandler, idempotent_http
from ._request import HttpRequest
from ._tenant import authorizer_tenant, default_tenant, header_tenant, iam_caller

__all__ = ["HttpIdempotency", "HttpLambdaHandler", "HttpRequest", "StoredResponse",
           "authorizer_tenant", "default_tenant", "header_tenant", "iam_caller", "idempotent_http"]
