"""API Gateway event and Lambda context builders for tests."""

from __future__ import annotations

import json
import time
from typing import Any


class LambdaContext:
    """The parts of the Lambda context the runtime uses, with a real remaining-time clock."""

    def __init__(self, timeout_seconds: float = 10.0, request_id: str = "req-1") -> None:
        self._deadline = time.monotonic() + timeout_seconds
        self.aws_request_id = request_id
        self.function_name = "test-fn"
        self.memory_limit_in_mb = 256
        self.invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:test-fn"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds until the simulated timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def rest_event(body: Any = None, *, key: str | None = "key-1", tenant: str | None = "tenant-a",
               method: str = "POST", resource: str = "/orders", path: str | None = None,
               query: dict[str, str] | None = None, headers: dict[str, str] | None = None,
               raw_body: str | None = None, base64: bool = False) -> dict[str, Any]:
    """A REST API (v1) proxy event with a Cognito-style authorizer."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        all_headers["Idempotency-Key"] = key
    return {
        "resource": resource,
        "path": path or resource,
        "httpMethod": method,
        "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": None,
        "requestContext": {
            "resourcePath": resource, "httpMethod": method, "stage": "prod", "requestId": "r-1",
            "authorizer": {"claims": {"sub": tenant}} if tenant else None,
            "identity": {"sourceIp": "127.0.0.1", "userArn": None},
        },
        "body": raw_body if raw_body is not None else (None if body is None else json.dumps(body)),
        "isBase64Encoded": base64,
    }


def http_event(body: Any = None, *, key: str | None = "key-1", tenant: str | None = "tenant-a",
               method: str = "POST", route: str = "/orders", raw_body: str | None = None,
               headers: dict[str, str] | None = None, query: dict[str, str] | None = None,
               base64: bool = False) -> dict[str, Any]:
    """An HTTP API (v2) event with a JWT authorizer."""
    all_headers = {"content-type": "application/json", **{k.lower(): v for k, v in (headers or {}).items()}}
    if key is not None:
        all_headers["idempotency-key"] = key
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": f"{method} {route}",
        "rawPath": route,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": all_headers,
        "requestContext": {
            "http": {"method": method, "path": route, "sourceIp": "127.0.0.1"},
            "routeKey": f"{method} {route}", "stage": "$default", "requestId": "r-2",
        },
        "body": raw_body if raw_body is not None else (None if body is None else json.dumps(body)),
        "isBase64Encoded": base64,
    }
    if query:
        event["queryStringParameters"] = query
    if tenant:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": tenant}, "scopes": []}}
    return event
