"""Local credentials for the emulated JWT, Cognito and IAM authorizers.

JWT and Cognito user pool authorizers accept tokens signed with HS256 and the documented local
key :data:`LOCAL_JWT_KEY` (a deployed authorizer would fetch the issuer's JWKS instead);
:func:`mint` issues one for a tenant. IAM authorization (``AWS_IAM``) accepts requests signed
with SigV4 (service ``execute-api``) by any access key id and the local secret
:data:`LOCAL_SECRET_KEY`; the access key id is the caller, ``arn:aws:iam::<account>:user/<key id>``
(with curl: ``--aws-sigv4 aws:amz:eu-west-1:execute-api --user acme:sandbox``).
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from .assembly import REGION

LOCAL_JWT_KEY = "retrysafe-sandbox-local-jwt-signing-key"
LOCAL_SECRET_KEY = "sandbox"
_SIGV4 = re.compile(r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
                    r"/aws4_request, ?SignedHeaders=(?P<headers>[^,]+), ?Signature=(?P<signature>[0-9a-f]+)")


class InvalidToken(ValueError):
    """A token the emulated authorizer refuses (bad signature, issuer, audience, expiry, shape)."""


def mint(tenant: str, issuer: str = "https://sandbox.local", audience: Iterable[str] = ("sandbox",),
         scopes: Iterable[str] = (), lifetime: int = 3600) -> str:
    """A local JWT for ``tenant`` (``sub`` and ``tenant_id``), accepted by the emulated JWT authorizers."""
    from joserfc import jwt
    from joserfc.jwk import OctKey

    now = int(time.time())
    audiences = list(audience)
    claims: dict[str, Any] = {"sub": tenant, "tenant_id": tenant, "iss": issuer, "iat": now, "exp": now + lifetime,
                              "aud": audiences[0] if len(audiences) == 1 else audiences,
                              "client_id": audiences[0] if audiences else "sandbox"}
    if scopes:
        claims["scope"] = " ".join(scopes)
    return jwt.encode({"alg": "HS256", "typ": "JWT"}, claims, OctKey.import_key(LOCAL_JWT_KEY))


def verify(token: str, issuer: str | None = None, audience: Iterable[str] = ()) -> dict[str, Any]:
    """The claims of a valid local token; :class:`InvalidToken` otherwise.

    Checks the signature, ``exp`` and ``nbf``, the issuer when given, and that ``aud`` or
    ``client_id`` is one of ``audience`` when given (as API Gateway's JWT authorizer does).
    """
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import OctKey

    value = token.strip()
    value = value[7:].strip() if value[:7].lower() == "bearer " else value
    try:
        claims = dict(jwt.decode(value, OctKey.import_key(LOCAL_JWT_KEY), algorithms=["HS256"]).claims)
        jwt.JWTClaimsRegistry(leeway=0).validate(claims)
    except (JoseError, ValueError) as error:
        raise InvalidToken(str(error) or type(error).__name__) from error
    if issuer is not None and claims.get("iss") != issuer:
        raise InvalidToken(f"issuer {claims.get('iss')!r} is not {issuer!r}")
    wanted = set(audience)
    aud = claims.get("aud")
    found = {*(aud if isinstance(aud, list) else [aud]), claims.get("client_id")} - {None}
    if wanted and not wanted & found:
        raise InvalidToken(f"audience {sorted(map(str, found))} is not one of {sorted(wanted)}")
    return claims


def scopes_of(claims: Mapping[str, Any]) -> list[str]:
    """The scopes a token grants (``scope`` or ``scp``)."""
    raw = claims.get("scope", claims.get("scp", ""))
    return list(raw) if isinstance(raw, list) else str(raw).split()


def sigv4_caller(method: str, url: str, headers: Mapping[str, str], body: bytes) -> str | None:
    """The access key id of a request signed for ``execute-api`` with the local secret, else ``None``.

    The signature is recomputed with botocore over the headers the request says it signed.
    """
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lower = {k.lower(): v for k, v in headers.items()}
    found = _SIGV4.fullmatch(lower.get("authorization", "").strip())
    if found is None or found["service"] != "execute-api" or found["region"] != REGION:
        return None
    signed = found["headers"].split(";")
    if "x-amz-date" not in lower or any(name not in lower for name in signed):
        return None
    request = AWSRequest(method=method, url=url, data=body, headers={name: lower[name] for name in signed})
    credentials = Credentials(found["key"], LOCAL_SECRET_KEY, lower.get("x-amz-security-token"))
    signer = SigV4Auth(credentials, "execute-api", REGION)
    request.context["timestamp"] = lower["x-amz-date"]
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return found["key"] if hmac.compare_digest(expected, found["signature"]) else None
