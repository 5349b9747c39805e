"""The API Gateway authorizer emulation: responses, caching by identity source and TTL, context shapes."""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe.testing import Clock
from retrysafe_sandbox.authorizers import Authorizer, Gate, Granted, Request, method_arn
from retrysafe_sandbox.functions import Invocation
from retrysafe_sandbox.ledger import Ledger
from retrysafe_sandbox.tokens import InvalidToken, mint, verify

ARN = method_arn("Api", "prod", "POST", "/orders/7/payments")


def _policy(effect: str, resource: str, context: Any = None) -> dict[str, Any]:
    return {"principalId": "user-1", "context": context,
            "policyDocument": {"Version": "2012-10-17", "Statement": [
                {"Effect": effect, "Action": "execute-api:Invoke", "Resource": resource}]}}


def _gate(spec: Authorizer, answer: Any, clock: Clock | None = None) -> tuple[Gate, list[Any]]:
    events: list[Any] = []

    def invoke(function: str, event: Any) -> Invocation:
        events.append(event)
        return answer if isinstance(answer, Invocation) else Invocation(result=answer)

    return Gate({spec.logical_id: spec}, invoke, Ledger(), clock or Clock(1000.0)), events


def _request(headers: dict[str, str], version: int = 1, arn: str = ARN) -> Request:
    return Request(version, "POST", "http://127.0.0.1/orders/7/payments", headers, b"{}", {"headers": headers}, arn)


TOKEN = Authorizer("Token", 1, "TOKEN", "AuthFn", ("method.request.header.Authorization",), ttl=300)


def test_token_authorizer_passes_its_context_as_strings_and_is_cached_per_token_for_its_ttl() -> None:
    clock = Clock(1000.0)
    gate, events = _gate(TOKEN, _policy("Allow", "arn:aws:execute-api:eu-west-1:123456789012:Api/prod/*",
                                        {"tenantId": "acme", "tier": 2, "admin": False}), clock)
    granted = gate.authorize("Token", _request({"Authorization": "t-1"}))
    assert isinstance(granted, Granted)
    assert granted.authorizer == {"tenantId": "acme", "tier": "2", "admin": "false", "principalId": "user-1",
                                  "integrationLatency": 0}
    assert events == [{"type": "TOKEN", "authorizationToken": "t-1", "methodArn": ARN}]
    clock.now += 299
    gate.authorize("Token", _request({"authorization": "t-1"}))  # header names are case-insensitive
    assert len(events) == 1
    gate.authorize("Token", _request({"Authorization": "t-2"}))  # another token: another invocation
    clock.now += 2
    gate.authorize("Token", _request({"Authorization": "t-1"}))  # expired: invoked again
    assert [e["authorizationToken"] for e in events] == ["t-1", "t-2", "t-1"]


def test_token_authorizer_denials_as_api_gateway_answers_them() -> None:
    assert _gate(TOKEN, {})[0].authorize("Token", _request({}))[0] == 401
    deny = _gate(TOKEN, _policy("Deny", "*"))[0].authorize("Token", _request({"Authorization": "t"}))
    assert deny[0] == 403 and b"explicit deny" in deny[2]
    elsewhere = _policy("Allow", "arn:aws:execute-api:eu-west-1:123456789012:Api/prod/GET/*")
    assert _gate(TOKEN, elsewhere)[0].authorize("Token", _request({"Authorization": "t"}))[0] == 403
    unauthorized = Invocation(error={"errorType": "Exception", "errorMessage": "Unauthorized"})
    assert _gate(TOKEN, unauthorized)[0].authorize("Token", _request({"Authorization": "t"}))[0] == 401
    crashed = Invocation(error={"errorType": "KeyError", "errorMessage": "x"})
    assert _gate(TOKEN, crashed)[0].authorize("Token", _request({"Authorization": "t"}))[0] == 500
    nested = _policy("Allow", "*", {"claims": {"a": 1}})  # objects are not allowed in a REST context
    assert _gate(TOKEN, nested)[0].authorize("Token", _request({"Authorization": "t"}))[0] == 500
    validated = Authorizer("Token", 1, "TOKEN", "AuthFn", ("method.request.header.Authorization",), 0,
                           validation=r"Bearer \w+")
    gate, events = _gate(validated, _policy("Allow", "*"))
    assert gate.authorize("Token", _request({"Authorization": "nope"}))[0] == 401 and events == []


def test_http_api_request_authorizer_payload_2_with_simple_responses() -> None:
    spec = Authorizer("Key", 2, "REQUEST", "KeyFn", ("$request.header.X-Key", "$request.querystring.site"),
                      ttl=0, payload="2.0", simple=True)
    gate, events = _gate(spec, {"isAuthorized": True, "context": {"tenant": {"id": "acme"}}})
    request = _request({"X-Key": "k"}, 2)
    assert gate.authorize("Key", request)[0] == 401  # a missing identity source: never invoked
    request.query = {"site": ["eu"]}
    granted = gate.authorize("Key", request)
    assert isinstance(granted, Granted) and granted.authorizer == {"lambda": {"tenant": {"id": "acme"}}}
    assert events[0]["identitySource"] == ["k", "eu"] and events[0]["routeArn"] == ARN
    gate.authorize("Key", request)
    assert len(events) == 2  # TTL 0: no cache
    refused = _gate(spec, {"isAuthorized": False})[0].authorize("Key", request)
    assert refused[0] == 403
    assert _gate(spec, {"isAuthorized": "yes"})[0].authorize("Key", request)[0] == 500


def test_jwt_authorizer_checks_signature_issuer_audience_expiry_and_scopes() -> None:
    spec = Authorizer("Jwt", 2, "JWT", identity=("$request.header.Authorization",), issuer="https://i",
                      audience=("app",))
    gate, _ = _gate(spec, None)
    scoped = _request({"Authorization": "Bearer " + mint("acme", "https://i", ["app"], ["orders/write"])}, 2)
    scoped.scopes = ("orders/write",)
    granted = gate.authorize("Jwt", scoped)
    assert isinstance(granted, Granted)
    assert granted.authorizer["jwt"]["claims"]["tenant_id"] == "acme"  # type: ignore[index]
    assert granted.authorizer["jwt"]["scopes"] == ["orders/write"]  # type: ignore[index]
    unscoped = _request({"Authorization": mint("acme", "https://i", ["app"])}, 2)
    unscoped.scopes = ("orders/write",)
    assert gate.authorize("Jwt", unscoped)[0] == 403
    for token in (mint("acme", "https://other", ["app"]), mint("acme", "https://i", ["x"]),
                  mint("acme", "https://i", ["app"], lifetime=-10), mint("acme", "https://i", ["app"])[:-3] + "abc"):
        assert gate.authorize("Jwt", _request({"Authorization": token}, 2))[0] == 401
    with pytest.raises(InvalidToken):
        verify("not a token")
