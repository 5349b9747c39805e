"""The API over real HTTP on 127.0.0.1: requests become API Gateway proxy events.

A REST API route gets a v1 event, an HTTP API route a v2 event. Routes with an authorizer in
the template are authorized by it (:mod:`.authorizers`: the Lambda authorizer's context,
JWT/Cognito claims or the SigV4 caller go into ``requestContext``); a route whose authorizer
is not in the template gets the sandbox's configured local tenant instead. Required headers
are validated as the REST API's request validator does; a function error answers 502 as
API Gateway does.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .assembly import ACCOUNT
from .authorizers import Gate, Granted, Request, method_arn
from .functions import Invocation
from .ledger import Ledger
from .routes import Route

Invoke = Callable[[str, Any], Invocation]


def _body(raw: bytes) -> tuple[str | None, bool]:
    if not raw:
        return None, False
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode(), True


def rest_event(route: Route, method: str, url: str, headers: dict[str, str], raw: bytes, params: dict[str, str],
               source_ip: str) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event, before authorization (``requestContext.authorizer`` empty)."""
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    body, encoded = _body(raw)
    identity: dict[str, Any] = {"sourceIp": source_ip, "userAgent": headers.get("User-Agent")}
    return {"resource": route.path, "path": parts.path, "httpMethod": method, "headers": headers,
            "multiValueHeaders": {k: [v] for k, v in headers.items()},
            "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
            "multiValueQueryStringParameters": query or None, "pathParameters": params or None,
            "stageVariables": None, "body": body, "isBase64Encoded": encoded,
            "requestContext": {"resourcePath": route.path, "httpMethod": method, "path": parts.path,
                               "stage": route.stage, "requestId": str(uuid.uuid4()), "accountId": ACCOUNT,
                               "apiId": route.api, "protocol": "HTTP/1.1", "identity": identity,
                               "requestTimeEpoch": int(time.time() * 1000), "authorizer": None}}


def http_event(route: Route, method: str, url: str, headers: dict[str, str], raw: bytes, params: dict[str, str],
               source_ip: str) -> dict[str, Any]:
    """An API Gateway HTTP API (v2, payload format 2.0) event, before authorization."""
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    body, encoded = _body(raw)
    route_key = f"{route.method} {route.path}"
    return {"version": "2.0", "routeKey": route_key, "rawPath": parts.path, "rawQueryString": parts.query,
            "headers": {k.lower(): v for k, v in headers.items()},
            "queryStringParameters": {k: ",".join(v) for k, v in query.items()} or None,
            "pathParameters": params or None, "body": body, "isBase64Encoded": encoded,
            "requestContext": {"accountId": ACCOUNT, "apiId": route.api, "domainName": headers.get("Host", ""),
                               "http": {"method": method, "path": parts.path, "protocol": "HTTP/1.1",
                                        "sourceIp": source_ip, "userAgent": headers.get("User-Agent", "")},
                               "requestId": str(uuid.uuid4()), "routeKey": route_key, "stage": route.stage,
                               "timeEpoch": int(time.time() * 1000), "authorizer": None}}


def local_tenant(route: Route, tenant: str) -> Granted:
    """The authorization a route whose authorizer is not in the template gets: the configured tenant."""
    v1: dict[str, dict[str, Any]] = {
        "CUSTOM": {"principalId": tenant, "tenantId": tenant, "integrationLatency": 0},
        "COGNITO_USER_POOLS": {"claims": {"sub": tenant, "custom:tenant_id": tenant}}}
    v2: dict[str, dict[str, Any]] = {"JWT": {"jwt": {"claims": {"sub": tenant, "tenant_id": tenant}, "scopes": None}},
                                      "CUSTOM": {"lambda": {"tenantId": tenant}}}
    return Granted((v1 if route.version == 1 else v2).get(route.authorization))


def proxy_response(invocation: Invocation, version: int) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body from a Lambda proxy result (502 on a function error or a malformed result)."""
    result = invocation.result
    if invocation.error is not None or (version == 1 and not isinstance(result, dict)):
        return 502, {"Content-Type": "application/json"}, b'{"message": "Internal server error"}'
    if version == 2 and not (isinstance(result, dict) and "statusCode" in result):
        return 200, {"Content-Type": "application/json"}, json.dumps(result).encode()
    headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
    headers |= {k: ",".join(map(str, v)) for k, v in (result.get("multiValueHeaders") or {}).items()}
    body = result.get("body") or ""
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else str(body).encode()
    return int(result.get("statusCode", 200)), headers, raw


class ApiServer(ThreadingHTTPServer):
    """One API on ``127.0.0.1:port`` (never another interface)."""

    daemon_threads = True

    def __init__(self, routes: list[Route], invoke: Invoke, ledger: Ledger, tenant: str, port: int = 0,
                 bad_request: dict[str, Any] | None = None, gate: Gate | None = None,
                 may_invoke: Callable[[str, str], bool] | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.routes, self.invoke, self.ledger, self.tenant, self.bad_request = routes, invoke, ledger, tenant, bad_request
        self.gate = gate or Gate({}, invoke, ledger)
        self.may_invoke = may_invoke

    @property
    def url(self) -> str:
        """The API's base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> threading.Thread:
        """Serve on a daemon thread."""
        thread = threading.Thread(target=self.serve_forever, name=f"http:{self.url}", daemon=True)
        thread.start()
        return thread

    def answer(self, method: str, url: str, headers: dict[str, str], raw: bytes,
               source_ip: str) -> tuple[int, dict[str, str], bytes]:
        """The API's answer to one request."""
        path = urlsplit(url).path
        for route in self.routes:
            params = route.match(method, path)
            if params is None:
                continue
            answer = self._route(route, params, method, url, headers, raw, source_ip)
            self.ledger.add("requests", f"{method} {route.path} -> {answer[0]}")
            return answer
        self.ledger.add("requests", f"{method} (no route)")
        known = any(r.match(m, path) is not None for r in self.routes for m in ("GET", "POST", "PUT", "DELETE"))
        status = 403 if known or self.routes[0].version == 1 else 404
        message = "Missing Authentication Token" if status == 403 else "Not Found"
        return status, {"Content-Type": "application/json"}, json.dumps({"message": message}).encode()

    def _route(self, route: Route, params: dict[str, str], method: str, url: str, headers: dict[str, str], raw: bytes,
               source_ip: str) -> tuple[int, dict[str, str], bytes]:
        if route.function is None:
            return route.mock_status, route.mock_headers, b""
        missing = [h for h in route.required_headers if h.lower() not in {k.lower() for k in headers}]
        if missing:
            return self._missing(missing)
        build = rest_event if route.version == 1 else http_event
        event = build(route, method, url, headers, raw, params, source_ip)
        granted = self._authorize(route, Request(
            route.version, method, f"http://{headers.get('Host', '127.0.0.1')}{url}", headers, raw, event,
            method_arn(route.api, route.stage, method, urlsplit(url).path), route.scopes,
            parse_qs(urlsplit(url).query, keep_blank_values=True)))
        if not isinstance(granted, Granted):
            return granted
        event["requestContext"]["authorizer"] = granted.authorizer
        if granted.identity:
            event["requestContext"]["identity"] |= granted.identity
        arn = method_arn(route.api, route.stage, method, urlsplit(url).path)
        if self.may_invoke is not None and not self.may_invoke(route.function, arn):
            # the function's resource policy does not let API Gateway invoke it: a configuration error
            message = "Internal server error" if route.version == 1 else "Internal Server Error"
            return 500, {"Content-Type": "application/json"}, json.dumps({"message": message}).encode()
        return proxy_response(self.invoke(route.function, event), route.version)

    def _authorize(self, route: Route, request: Request) -> Granted | tuple[int, dict[str, str], bytes]:
        if route.authorizer is not None and route.authorizer in self.gate.authorizers:
            return self.gate.authorize(route.authorizer, request)
        if route.authorization == "AWS_IAM":
            return self.gate.iam(request)
        return local_tenant(route, self.tenant)

    def _missing(self, names: list[str]) -> tuple[int, dict[str, str], bytes]:
        detail = f"Missing required request parameters: [{', '.join(names)}]"
        if self.bad_request is None:
            return 400, {"Content-Type": "application/json"}, json.dumps({"message": detail}).encode()
        headers = {k.rsplit(".", 1)[1]: str(v).strip("'")
                   for k, v in self.bad_request.get("ResponseParameters", {}).items()}
        template = next(iter(self.bad_request.get("ResponseTemplates", {}).values()), json.dumps({"message": detail}))
        body = template.replace("$context.error.validationErrorString", f"[{detail}]")
        return int(self.bad_request.get("StatusCode", 400)), headers, body.encode()


class _Handler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, headers, body = self.server.answer(self.command, self.path, dict(self.headers.items()), raw,
                                                   self.client_address[0])
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client hung up before reading its answer

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the ledger counts requests."""
