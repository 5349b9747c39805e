"""API Gateway authorizers from the template, run as API Gateway runs them.

- Lambda authorizers (REST ``TOKEN``/``REQUEST``, HTTP API ``REQUEST`` with payload 1.0 or 2.0,
  simple or IAM-policy responses): the authorizer function from the template is invoked with the
  event API Gateway sends; a missing identity source answers 401 without invoking it; its
  result is cached per identity-source values for ``AuthorizerResultTtlInSeconds`` (policies are
  evaluated against each request's method ARN, cached or not); its ``context`` becomes
  ``requestContext.authorizer`` (REST: values as strings, beside ``principalId``) or
  ``requestContext.authorizer.lambda`` (HTTP API).
- JWT (HTTP API) and Cognito user pool (REST) authorizers: tokens signed with the local key
  (:mod:`.tokens`), checked for issuer, audience, expiry and the route's scopes.
- ``AWS_IAM``: a SigV4 signature with the local secret (:mod:`.tokens`); the key id is the caller.

Denials answer as API Gateway does: 401 ``Unauthorized``, 403 (explicit deny / not authorized /
``Forbidden``), 500 when the authorizer fails, answers malformed output, or its function's
``AWS::Lambda::Permission`` does not let API Gateway invoke it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .assembly import ACCOUNT, REGION
from .iam import Policies, UnsupportedPolicy, evaluate
from .ledger import Ledger
from .provision import Provisioned
from .routes import function_of
from .tokens import InvalidToken, scopes_of, sigv4_caller, verify

Answer = tuple[int, dict[str, str], bytes]


@dataclass(frozen=True)
class Authorizer:
    """One ``AWS::ApiGateway::Authorizer`` or ``AWS::ApiGatewayV2::Authorizer``."""

    logical_id: str
    version: int
    kind: str
    function: str | None = None
    identity: tuple[str, ...] = ()
    ttl: int = 0
    validation: str | None = None
    payload: str = "1.0"
    simple: bool = False
    issuer: str | None = None
    audience: tuple[str, ...] = ()


@dataclass
class Request:
    """What an authorizer sees of one request: its route, the proxy event (no authorizer yet), raw parts."""

    version: int
    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    event: dict[str, Any]
    method_arn: str
    scopes: tuple[str, ...] = ()
    query: dict[str, list[str]] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        """A header, case-insensitively."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Granted:
    """The request may pass: what goes into ``requestContext.authorizer`` (and REST ``identity``)."""

    authorizer: dict[str, Any] | None
    identity: dict[str, Any] = field(default_factory=dict)


def authorizers(done: Provisioned) -> dict[str, Authorizer]:
    """Every authorizer of the stack, by logical id."""
    found = {}
    for resource in done.stack.of_type("AWS::ApiGateway::Authorizer"):
        props = done.intrinsics.resolve(resource.properties)
        identity = tuple(s.strip() for s in str(props.get("IdentitySource") or "").split(",") if s.strip())
        found[resource.logical_id] = Authorizer(
            resource.logical_id, 1, str(props["Type"]), function_of(done, resource.properties.get("AuthorizerUri")),
            identity, int(props.get("AuthorizerResultTtlInSeconds", 300)), props.get("IdentityValidationExpression"))
    for resource in done.stack.of_type("AWS::ApiGatewayV2::Authorizer"):
        props = done.intrinsics.resolve(resource.properties)
        jwt = props.get("JwtConfiguration") or {}
        found[resource.logical_id] = Authorizer(
            resource.logical_id, 2, str(props["AuthorizerType"]),
            function_of(done, resource.properties.get("AuthorizerUri")), tuple(props.get("IdentitySource") or ()),
            int(props.get("AuthorizerResultTtlInSeconds", 0)), None,
            str(props.get("AuthorizerPayloadFormatVersion", "2.0")), bool(props.get("EnableSimpleResponses")),
            jwt.get("Issuer"), tuple(jwt.get("Audience") or ()))
    return found


def identity_values(sources: tuple[str, ...], request: Request) -> list[str] | None:
    """The values of the identity sources (``None`` when one is missing or empty)."""
    values = []
    for source in sources:
        name = source.removeprefix("$").removeprefix("method.").removeprefix("request.")
        kind, _, key = name.partition(".")
        if kind == "header":
            value = request.header(key)
        elif kind == "querystring":
            found = request.query.get(key)
            value = found[-1] if found else None
        elif kind == "context":
            value = {"requestId": "sandbox", "httpMethod": request.method}.get(key)
        else:  # stageVariables: the sandbox's stages have none
            value = None
        if not value:
            return None
        values.append(value)
    return values


def _json(status: int, payload: Any, extra: dict[str, str] | None = None) -> Answer:
    return status, {"Content-Type": "application/json", **(extra or {})}, json.dumps(payload).encode()


UNAUTHORIZED = _json(401, {"message": "Unauthorized"})
FORBIDDEN_V2 = _json(403, {"message": "Forbidden"})
FAILED_V1 = _json(500, {"message": None}, {"x-amzn-ErrorType": "AuthorizerConfigurationException"})
FAILED_V2 = _json(500, {"message": "Internal Server Error"})


def _stringified(context: Any) -> dict[str, str] | None:
    """A REST authorizer context as API Gateway passes it on: string values; ``None`` if malformed."""
    if context is None:
        return {}
    if not isinstance(context, dict) or any(isinstance(v, dict | list) for v in context.values()):
        return None
    return {str(k): ("true" if v is True else "false" if v is False else "" if v is None else str(v))
            for k, v in context.items()}


class Gate:
    """Authorizes requests of one API (thread-safe; owns the authorizers' result cache)."""

    def __init__(self, found: Mapping[str, Authorizer], invoke: Callable[[str, Any], Any], ledger: Ledger,
                 clock: Callable[[], float] = time.monotonic,
                 may_invoke: Callable[[str, str], bool] | None = None) -> None:
        self.authorizers, self.invoke, self.ledger, self.clock = found, invoke, ledger, clock
        self.may_invoke = may_invoke
        self._cache: dict[tuple[str, tuple[str, ...]], tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def iam(self, request: Request) -> Granted | Answer:
        """``AWS_IAM``: the SigV4 caller, or 403 as API Gateway answers unsigned or badly signed requests."""
        if request.header("Authorization") is None:
            return _json(403, {"message": "Missing Authentication Token"})
        caller = sigv4_caller(request.method, request.url, request.headers, request.body)
        self.ledger.add("authorizers", f"AWS_IAM {'allowed' if caller else 'denied'}")
        if caller is None:
            return _json(403, {"message": "The request signature we calculated does not match the signature "
                                          "you provided."})
        arn = f"arn:aws:iam::{ACCOUNT}:user/{caller}"
        if request.version == 1:
            return Granted(None, {"accessKey": caller, "caller": caller, "user": caller, "userArn": arn,
                                  "accountId": ACCOUNT})
        return Granted({"iam": {"accessKey": caller, "accountId": ACCOUNT, "callerId": caller, "userArn": arn,
                                "userId": caller, "principalOrgId": None, "cognitoIdentity": None}})

    def authorize(self, authorizer_id: str, request: Request) -> Granted | Answer:
        """Run the route's authorizer on ``request``."""
        spec = self.authorizers[authorizer_id]
        if spec.kind in ("JWT", "COGNITO_USER_POOLS"):
            return self._jwt(spec, request)
        sources = spec.identity or (("method.request.header.Authorization",) if spec.kind == "TOKEN" else ())
        values = identity_values(sources, request)
        if values is None or (spec.validation and not re.fullmatch(spec.validation, values[0])):
            self.ledger.add("authorizers", f"{spec.logical_id}: 401 (no identity)")
            return UNAUTHORIZED
        key = (spec.logical_id, tuple(values))
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and cached[0] > self.clock():
            self.ledger.add("authorizers", f"{spec.logical_id}: cached")
            output = cached[1]
        else:
            source = f"{request.method_arn.split('/', 1)[0]}/authorizers/{spec.logical_id}"
            if self.may_invoke is not None and not self.may_invoke(str(spec.function), source):
                return FAILED_V1 if spec.version == 1 else FAILED_V2
            invocation = self.invoke(str(spec.function), self._event(spec, request, values))
            self.ledger.add("authorizers", f"{spec.logical_id}: invoked")
            if invocation.error is not None:
                unauthorized = invocation.error.get("errorMessage") == "Unauthorized"
                return UNAUTHORIZED if unauthorized else FAILED_V1 if spec.version == 1 else FAILED_V2
            output = invocation.result
            if spec.ttl > 0 and sources:
                with self._lock:
                    self._cache[key] = (self.clock() + spec.ttl, output)
        return self._decide(spec, request, output)

    @staticmethod
    def _event(spec: Authorizer, request: Request, values: list[str]) -> dict[str, Any]:
        if spec.kind == "TOKEN":
            return {"type": "TOKEN", "authorizationToken": values[0], "methodArn": request.method_arn}
        if spec.version == 2 and spec.payload == "2.0":
            return {**request.event, "type": "REQUEST", "routeArn": request.method_arn, "identitySource": values}
        return {**request.event, "type": "REQUEST", "methodArn": request.method_arn}

    def _decide(self, spec: Authorizer, request: Request, output: Any) -> Granted | Answer:
        failed = FAILED_V1 if spec.version == 1 else FAILED_V2
        if not isinstance(output, dict):
            return failed
        if spec.version == 2 and spec.simple:
            if not isinstance(output.get("isAuthorized"), bool):
                return failed
            if not output["isAuthorized"]:
                self.ledger.add("authorizers", f"{spec.logical_id}: 403")
                return FORBIDDEN_V2
            return Granted({"lambda": output.get("context") or {}})
        document = output.get("policyDocument")
        if "principalId" not in output or not isinstance(document, dict):
            return failed
        try:
            decision = evaluate(Policies([document]), "execute-api:Invoke", request.method_arn)
        except UnsupportedPolicy:
            return failed
        if not decision.allowed:
            self.ledger.add("authorizers", f"{spec.logical_id}: 403")
            if spec.version == 2:
                return FORBIDDEN_V2
            detail = " with an explicit deny" if decision.explicit_deny else ""
            return _json(403, {"Message": f"User is not authorized to access this resource{detail}"})
        if spec.version == 2:
            return Granted({"lambda": output.get("context") or {}})
        context = _stringified(output.get("context"))
        if context is None:
            return failed
        return Granted({**context, "principalId": str(output["principalId"]), "integrationLatency": 0})

    def _jwt(self, spec: Authorizer, request: Request) -> Granted | Answer:
        source = spec.identity[0] if spec.identity else "$request.header.Authorization"
        values = identity_values((source,), request)
        try:
            if values is None:
                raise InvalidToken("no token")
            claims = verify(values[0], spec.issuer if spec.kind == "JWT" else None, spec.audience)
        except InvalidToken:
            self.ledger.add("authorizers", f"{spec.logical_id}: 401")
            return UNAUTHORIZED if spec.version == 1 else _json(401, {"message": "Unauthorized"},
                                                                {"www-authenticate": 'Bearer error="invalid_token"'})
        scopes = scopes_of(claims)
        if request.scopes and not set(request.scopes) & set(scopes):
            self.ledger.add("authorizers", f"{spec.logical_id}: 403")
            return FORBIDDEN_V2 if spec.version == 2 else _json(403, {"message": "Unauthorized"})
        self.ledger.add("authorizers", f"{spec.logical_id}: allowed")
        strings = {k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, dict) else
                   "[" + " ".join(map(str, v)) + "]" if isinstance(v, list) else str(v) for k, v in claims.items()}
        if spec.version == 1:
            return Granted({"claims": strings})
        return Granted({"jwt": {"claims": strings, "scopes": scopes or None}})


def method_arn(api: str, stage: str, method: str, path: str) -> str:
    """The ARN API Gateway authorizes: ``arn:aws:execute-api:region:account:api/stage/METHOD/path``."""
    return f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api}/{stage}/{method}/{path.lstrip('/')}"
