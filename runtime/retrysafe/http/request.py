"""API Gateway events (REST v1 proxy and HTTP API v2) as one small request model, and its fingerprint."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection, Mapping
from typing import Any

from .._value import Value
from ..fingerprint import canonical_json, fingerprint
from .problem import MalformedRequestError


class HttpRequest(Value):
    """What the idempotency layer needs to know about a request.

    ``route``: method + resource template (``POST /orders/{id}``), never the raw
    path. ``path``: the raw path (path parameters are part of the request's
    identity, not of the operation's). ``headers``: names lower-cased, repeated
    headers joined with ``,``.
    """

    __slots__ = ("event", "version", "method", "route", "path", "headers", "query", "body")

    def __init__(self, event: Mapping[str, Any], version: str, method: str, route: str, path: str,
                 headers: Mapping[str, str], query: Mapping[str, tuple[str, ...]], body: bytes) -> None:
        self.event = event
        self.version = version
        self.method = method
        self.route = route
        self.path = path
        self.headers = headers
        self.query = query
        self.body = body

    def header(self, name: str) -> str | None:
        """A header's value, case-insensitively."""
        return self.headers.get(name.lower())

    def fingerprint(self, query_params: Collection[str] | None = None) -> str:
        """Hash of method, route, path, the chosen query parameters (all when ``None``) and the canonical body."""
        names = sorted(self.query) if query_params is None else sorted(n for n in query_params if n in self.query)
        parts: list[bytes | str] = ["http/v1", self.method, self.route, self.path]
        for name in names:
            parts.append(name)
            parts.extend(self.query[name])
        canonical = canonical_json(self.body) if self.body else None
        parts.append(b"json:" + canonical if canonical is not None else b"raw:" + self.body)
        return fingerprint(parts)


def parse_event(event: Any) -> HttpRequest:
    """Read an API Gateway proxy event (v1 or v2); :class:`MalformedRequestError` when it is neither."""
    if not isinstance(event, Mapping):
        raise MalformedRequestError("the event is not an API Gateway proxy event")
    context = event.get("requestContext") or {}
    if not isinstance(context, Mapping):
        raise MalformedRequestError("requestContext is not an object")
    if event.get("version") == "2.0":
        http = context.get("http") or {}
        method = str(http.get("method") or "").upper() if isinstance(http, Mapping) else ""
        route_key = str(event.get("routeKey") or "")
        path = str(event.get("rawPath") or "/")
        route = route_key if route_key and route_key != "$default" else f"{method} {path}"
        query = {k: tuple(str(v).split(",")) for k, v in _mapping(event, "queryStringParameters").items()}
        version = "2.0"
    else:
        method = str(event.get("httpMethod") or "").upper()
        path = str(event.get("path") or "/")
        route = f"{method} {event.get('resource') or path}"
        multi = _mapping(event, "multiValueQueryStringParameters")
        if multi:
            query = {k: tuple(str(x) for x in (v if isinstance(v, list) else [v])) for k, v in multi.items()}
        else:
            query = {k: (str(v),) for k, v in _mapping(event, "queryStringParameters").items()}
        version = "1.0"
    if not method:
        raise MalformedRequestError("the event has no HTTP method (is this an API Gateway proxy event?)")
    headers = {str(k).lower(): str(v) for k, v in _mapping(event, "headers").items()}
    return HttpRequest(event=event, version=version, method=method, route=route, path=path, headers=headers,
                       query=query, body=_body(event))


def _mapping(event: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = event.get(name)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedRequestError(f"{name} is not an object")
    return value


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if body is None:
        return b""
    if not isinstance(body, str):
        raise MalformedRequestError("body is not a string")
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise MalformedRequestError("isBase64Encoded is true but the body is not valid base64") from None
    return body.encode("utf-8", "surrogatepass")
