"""``tenant=``: which authenticated caller a record belongs to, one type on every adapter that has one.

:data:`Tenant` is what ``tenant=`` takes on :func:`~retrysafe.http.idempotent_http`,
:class:`~retrysafe.IdempotencyMiddleware`, :func:`~retrysafe.idempotent_task` and
:class:`~retrysafe.webhook.WebhookReceiver`, parameterized by what the adapter reads the caller from
(the :class:`~retrysafe.http.HttpRequest`, the :class:`~retrysafe.stepfunctions.TaskRequest`):

- ``None``: no caller tells the records apart, one tenant for all (a public endpoint; a webhook
  receiver's one sender, the provider);
- a string: a fixed tenant name;
- a callable of the request: the tenant it finds there. When it finds none (``None`` or ``""``) the
  request is refused as the adapter documents: ``401`` problem+json over HTTP and for a webhook
  (:class:`~retrysafe.errors.TenantRequiredError`), :class:`~retrysafe.errors.TaskPayloadError` for
  a task.

The defaults are callables: the authorizer's tenant over HTTP
(:func:`~retrysafe.http.default_tenant`), the state machine for a task
(:func:`~retrysafe.stepfunctions.state_machine_tenant`). Never a field the client chooses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

from .errors import ConfigurationError

RequestT = TypeVar("RequestT")

#: What ``tenant=`` takes: ``None`` (one tenant for all), a fixed name, or a callable finding the
#: authenticated caller in the adapter's request (its ``None``: the request is refused).
Tenant: TypeAlias = str | Callable[[RequestT], str | None] | None

#: The scope's tenant under ``tenant=None``: every caller shares it.
NO_TENANT = "-"


def checked_tenant(tenant: Tenant[RequestT]) -> Tenant[RequestT]:
    """``tenant`` when it is one of :data:`Tenant`'s forms; else :class:`ConfigurationError` (at cold start)."""
    if isinstance(tenant, str):
        if not tenant.strip() or tenant != tenant.strip():
            raise ConfigurationError("tenant= must be a non-empty name without leading or trailing spaces; pass "
                                     "tenant=None for one tenant for all callers")
        return tenant
    if tenant is not None and not callable(tenant):
        raise ConfigurationError(f"tenant= takes a name, a callable of the request or None, not a "
                                 f"{type(tenant).__name__}")
    return tenant


def tenant_of(tenant: Tenant[RequestT], request: RequestT, *, unnamed: str = NO_TENANT) -> str | None:
    """The tenant of ``request``: ``unnamed`` under ``tenant=None``, the fixed name, or the callable's finding.

    ``None`` when the callable found no caller: the adapter refuses the request its own way.
    """
    if tenant is None:
        return unnamed
    if isinstance(tenant, str):
        return tenant
    found: Any = tenant(request)
    if found is None or found == "":
        return None
    if not isinstance(found, str):  # a callable returning a claim's number, say: a bug in the deployment
        raise ConfigurationError(f"the tenant= callable returned a {type(found).__name__}, not a str")
    return found
