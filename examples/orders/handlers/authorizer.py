"""Lambda TOKEN authorizer: the tenant comes from a signed bearer token, never from the request body.

Tokens look like ``Bearer <tenant>.<hex HMAC-SHA256(secret, tenant)>``; the secret
lives in Secrets Manager (``TOKEN_SECRET_ARN``) and is fetched on first use through
Powertools parameters (cached). The tenant is put in the authorizer context as
``tenantId``, where retrysafe reads it. Importing this module makes no AWS call.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from typing import Any


def _secret() -> bytes:
    from aws_lambda_powertools.utilities import parameters

    return str(parameters.get_secret(os.environ["TOKEN_SECRET_ARN"], max_age=300)).encode()


def tenant_from_token(token: str, secret: bytes) -> str | None:
    """The tenant of a valid token, else ``None`` (constant-time comparison)."""
    value = token.removeprefix("Bearer ").strip()
    tenant, _, signature = value.rpartition(".")
    if not tenant or not signature:
        return None
    expected = hmac.new(secret, tenant.encode(), hashlib.sha256).hexdigest()
    return tenant if hmac.compare_digest(expected, signature) else None


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Allow the API's methods for a valid token's tenant; deny everything else."""
    tenant = tenant_from_token(event.get("authorizationToken", ""), _secret())
    # arn:aws:execute-api:region:account:api-id/stage/METHOD/path -> the whole stage (results are cached).
    stage_arn = "/".join(event["methodArn"].split("/")[:2]) + "/*"
    return {"principalId": tenant or "anonymous",
            "policyDocument": {"Version": "2012-10-17", "Statement": [
                {"Action": "execute-api:Invoke", "Effect": "Allow" if tenant else "Deny", "Resource": stage_arn}]},
            "context": {"tenantId": tenant or ""}}
