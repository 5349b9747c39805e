"""Who the caller is: the tenant comes from the authenticated request, never from a client-chosen field.

The default extractor reads, in order: a Lambda authorizer's context
(``tenantId``/``tenant_id``/``tenant``), JWT or Cognito claims
(``custom:tenant_id``, ``tenant_id``, then ``sub``), a Lambda authorizer's
``principalId``, and the IAM caller (:func:`iam_caller`). Pass your own
callable to use something else, e.g. ``tenant=lambda request: ...``.

Per source:

- API Gateway (REST v1, HTTP API v2): the authorizer's context, as above;
- a Lambda function URL with ``AuthType AWS_IAM``: the signing IAM caller
  (``requestContext.authorizer.iam``, read by :func:`iam_caller`); with
  ``AuthType NONE`` the event names no caller;
- an Application Load Balancer: the event names no caller (it has no
  authorizer context). A listener rule that authenticates users passes their
  claims in ``x-amzn-oidc-data``, a JWT the load balancer signs; verify it
  before trusting it, in a callable of your own.

Where the event names no caller, the default answers 401: pass ``tenant=None``
for a public endpoint (every caller shares one scope per operation), a fixed name,
or your own callable (:data:`retrysafe.Tenant`, the one type of ``tenant=`` on every
adapter). ``tenant=None`` is never implied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._request import HttpRequest, is_mapping

CONTEXT_KEYS = ("tenantId", "tenant_id", "tenant")
CLAIM_KEYS = ("custom:tenant_id", "tenant_id", "sub")


def authorizer_tenant(claims: Sequence[str] = CLAIM_KEYS, context_keys: Sequence[str] = CONTEXT_KEYS) -> Callable[[HttpRequest], str | None]:
    """An extractor reading the given claim and authorizer-context names (first match wins)."""

    def extract(request: HttpRequest) -> str | None:
        rc = request.event.get("requestContext") or {}
        auth = rc.get("authorizer") or {}
        if not is_mapping(auth):
            return None
        # HTTP API v2 nests by authorizer kind; REST v1 puts the context at the top level.
        nested = auth.get("lambda")
        found = _first(nested if is_mapping(nested) else auth, context_keys)
        if found:
            return found
        jwt = auth.get("jwt")
        claim_map = jwt.get("claims") if is_mapping(jwt) else auth.get("claims")
        if is_mapping(claim_map):
            found = _first(claim_map, claims)
            if found:
                return found
        if auth.get("principalId"):
            return str(auth["principalId"])
        iam = auth.get("iam") if is_mapping(auth.get("iam")) else rc.get("identity")
        return iam_caller(iam) if is_mapping(iam) else None

    return extract


def iam_caller(identity: Mapping[str, Any]) -> str | None:
    """The tenant of an IAM-authorized caller: what tells two callers apart.

    ``identity`` is ``requestContext.identity`` (REST v1) or
    ``requestContext.authorizer.iam`` (HTTP API v2). Callers signing with
    Cognito identity pool credentials all share one assumed-role ARN, so their
    Cognito identity id comes first (``cognitoIdentityId``, v2
    ``cognitoIdentity.identityId``). Otherwise the full caller ARN
    (``userArn``: the IAM user, or the role and its session name), else the caller
    id qualified by its account. Never the account alone: that would merge
    every principal of the account into one tenant. ``None`` when nothing fits.
    """
    nested = identity.get("cognitoIdentity")
    cognito = _first(nested, ("identityId",)) if is_mapping(nested) else _first(identity, ("cognitoIdentityId",))
    if cognito:
        return cognito
    arn = _first(identity, ("userArn",))
    if arn:
        return arn
    caller = _first(identity, ("caller", "callerId"))
    account = _first(identity, ("accountId",))
    return f"{account}:{caller}" if caller and account else None


def _first(source: Mapping[str, Any], names: Sequence[str]) -> str | None:
    for name in names:
        value = source.get(name)
        if value not in (None, ""):
            return str(value)
    return None


#: The tenant rule of ``@idempotent_http`` unless ``tenant=`` says otherwise: the authorizer's tenant.
default_tenant: Callable[[HttpRequest], str | None] = authorizer_tenant()


def header_tenant(name: str) -> Callable[[HttpRequest], str | None]:
    """Read the tenant from a request header. Only safe when a gateway or authorizer sets that header."""
    return lambda request: request.header(name)
