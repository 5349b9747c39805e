"""HTTP events as one small request model, and its fingerprint.

The sources: API Gateway REST API (v1 proxy) and HTTP API (payload v2.0), Lambda
function URLs (payload v2.0, ``routeKey`` ``$default``), and Application Load
Balancer target groups, with multi-value headers off (``headers``,
``queryStringParameters``) or on (``multiValueHeaders``,
``multiValueQueryStringParameters``); the load balancer passes query names and
values as the client sent them, still percent-encoded.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeGuard
from urllib.parse import unquote

from .._fingerprint import canonical_json, fingerprint
from .._value import Value, set_field
from ..errors import InvalidInputError, MalformedRequestError

#: Content types whose bodies are canonicalised as JSON (besides ``*/*+json`` and an absent Content-Type).
JSON_MEDIA_TYPES = frozenset({"application/json"})
#: Response shapes (:attr:`HttpRequest.shape`): a proxy response (API Gateway, function URLs), an ALB
#: response (with ``statusDescription``), an ALB response with ``multiValueHeaders``.
PROXY, ALB, ALB_MULTI_VALUE = "proxy", "alb", "alb-multi-value"
#: How a parameter part of the fingerprint was read: decoded by API Gateway (REST v1 multi-value
#: parameters, HTTP API v2 parameters when the event has no raw query string), or from the raw query string.
_DECODED, _RAW = b"d", b"r"


def is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, answered without the ABC check for a ``dict`` (what every event holds):
    the nine checks of an HTTP API request's parsing and tenant were 3 µs of its first request."""
    return type(value) is dict or isinstance(value, Mapping)


class HttpRequest(Value):
    """What the idempotency layer needs to know about a request.

    ``route``: method + resource template (``POST /orders/{id}``), never the raw
    path. ``path``: the raw path (path parameters are part of the request's
    identity, not of the operation's). ``headers``: names lower-cased, repeated
    headers joined with ``,``. ``query``: each parameter's values in request
    order; on HTTP API v2 read from ``rawQueryString`` (names and values still
    percent-encoded, normalised per RFC 3986 6.2.2), else as API Gateway decoded
    them. ``body``: the body's bytes; ``text``: the body as received when it was
    not base64-encoded. ``source``: ``rest``, ``http``, ``function-url`` or
    ``alb``. ``multi_value``: the event carried ``multiValueHeaders`` (an ALB
    target group with multi-value headers on), so the response must too.
    """

    __slots__ = ("_query_form", "body", "event", "headers", "method", "multi_value", "path", "query", "route",
                 "source", "text", "version")

    body: bytes
    event: Mapping[str, Any]
    headers: Mapping[str, str]
    method: str
    multi_value: bool
    path: str
    query: Mapping[str, tuple[str, ...]]
    route: str
    source: str
    text: str | None
    version: str
    _query_form: bytes

    def __init__(self, event: Mapping[str, Any], version: str, method: str, route: str, path: str,
                 headers: Mapping[str, str], query: Mapping[str, tuple[str, ...]], body: bytes,
                 text: str | None = None, raw_query: bool = False, source: str = "rest",
                 multi_value: bool = False) -> None:
        set_field(self, "event", event)
        set_field(self, "version", version)
        set_field(self, "method", method)
        set_field(self, "route", route)
        set_field(self, "path", path)
        set_field(self, "headers", headers)
        set_field(self, "query", query)
        set_field(self, "body", body)
        set_field(self, "text", text)
        set_field(self, "source", source)
        set_field(self, "multi_value", multi_value)
        set_field(self, "_query_form", _RAW if raw_query else _DECODED)

    @property
    def shape(self) -> str:
        """The response shape the source expects: :data:`PROXY`, :data:`ALB` or :data:`ALB_MULTI_VALUE`."""
        if self.source != "alb":
            return PROXY
        return ALB_MULTI_VALUE if self.multi_value else ALB

    def header(self, name: str) -> str | None:
        """A header's value, case-insensitively."""
        return self.headers.get(name.lower())

    def fingerprint(self, query_params: Collection[str] | None = None,
                    body: Callable[[Any], str] | None = None) -> str:
        """Hash of method, route, path, the chosen query parameters (all when ``None``) and the canonical body.

        ``body``: a fingerprint selector (:class:`~retrysafe._select.FingerprintSelector`) given the
        JSON body, whose fingerprint stands for the body (a body that is not JSON raises
        :class:`~retrysafe.errors.InvalidInputError`).

        The parameters, sorted by name, each with its values in order, are one unambiguous part, so no
        two different parameter lists share a fingerprint. A JSON body
        (Content-Type ``application/json``, ``*/*+json`` or none) is hashed in its canonical form
        (:mod:`retrysafe._fingerprint`), any other body as its bytes. Raises
        :class:`~retrysafe.errors.InvalidInputError` when the request has no canonical form.
        """
        if query_params is None:
            names = sorted(self.query)
        elif self._query_form is _RAW:
            wanted = frozenset(query_params)
            names = sorted(n for n in self.query if unquote(n) in wanted)
        else:
            names = sorted(n for n in query_params if n in self.query)
        parts: list[bytes | str] = ["http/v1", self.method, self.route, self.path]
        if names:  # one part: every name and value behind its length, and each value count (injective)
            text: list[str] = []
            for name in names:
                values = self.query[name]
                text.append(f"{len(name)}:{name}{len(values)}:")
                for value in values:
                    text.append(f"{len(value)}:{value}")
            parts.append(self._query_form + "".join(text).encode("utf-8", "surrogatepass"))
        parts.append(self._body_part() if body is None else b"selected:" + body(self.json_body()).encode("ascii"))
        return fingerprint(parts)

    def json_body(self) -> Any:
        """The body as a JSON value; :class:`~retrysafe.errors.InvalidInputError` when it is not JSON."""
        try:
            return json.loads(self.text if self.text is not None else self.body)
        except (ValueError, RecursionError):
            raise InvalidInputError("the request body is not JSON, so fingerprint= cannot select from it") from None

    def _body_part(self) -> bytes:
        if not self.body:
            return b"raw:"
        if _is_json(self.headers.get("content-type")):
            canonical = canonical_json(self.text if self.text is not None else self.body)
            if canonical is not None:
                return b"json:" + canonical
        return b"raw:" + self.body


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return True
    media = content_type.partition(";")[0].strip().lower()
    return media in JSON_MEDIA_TYPES or media.endswith("+json")


def parse_event(event: Any) -> HttpRequest:
    """Read an HTTP event (see the module docstring); :class:`MalformedRequestError` when it is none of them."""
    if not is_mapping(event):
        raise MalformedRequestError("the event is not an HTTP event (API Gateway, function URL or load balancer)")
    context = event.get("requestContext") or {}
    if not is_mapping(context):
        raise MalformedRequestError("requestContext is not an object")
    if is_mapping(context.get("elb")):
        return _alb_request(event)
    if event.get("version") == "2.0":
        http = context.get("http") or {}
        method = str(http.get("method") or "").upper() if is_mapping(http) else ""
        route_key = str(event.get("routeKey") or "")
        path = str(event.get("rawPath") or "/")
        route = route_key if route_key and route_key != "$default" else f"{method} {path}"
        raw = event.get("rawQueryString")
        raw_query = isinstance(raw, str)
        if isinstance(raw, str):
            query = raw_query_parameters(raw)
        else:  # hand-built events: API Gateway's comma-joined values, kept whole
            query = {k: (_text(v, "a query parameter"),)
                     for k, v in _mapping(event, "queryStringParameters").items()}
        version = "2.0"
        source = "function-url" if ".lambda-url." in str(context.get("domainName") or "") else "http"
    else:
        method = str(event.get("httpMethod") or "").upper()
        path = str(event.get("path") or "/")
        route = f"{method} {event.get('resource') or path}"
        raw_query = False
        multi = _mapping(event, "multiValueQueryStringParameters")
        if multi:
            query = {k: tuple(_text(x, "a query parameter") for x in (v if isinstance(v, list) else [v]))
                     for k, v in multi.items()}
        else:
            query = {k: (_text(v, "a query parameter"),) for k, v in _mapping(event, "queryStringParameters").items()}
        version = "1.0"
        source = "rest"
    if not method:
        raise MalformedRequestError("the event has no HTTP method (is this an HTTP event?)")
    headers = {str(k).lower(): str(v) for k, v in _mapping(event, "headers").items() if v is not None}
    body, text = _body(event)
    return HttpRequest(event=event, version=version, method=method, route=route, path=path, headers=headers,
                       query=query, body=body, text=text, raw_query=raw_query, source=source)


def _alb_request(event: Mapping[str, Any]) -> HttpRequest:
    """An Application Load Balancer event: single-value (``headers``) or multi-value (``multiValueHeaders``)."""
    method = str(event.get("httpMethod") or "").upper()
    if not method:
        raise MalformedRequestError("the load balancer event has no httpMethod")
    path = str(event.get("path") or "/")
    multi_value = "multiValueHeaders" in event
    if multi_value:  # repeated headers joined with "," (RFC 9110 5.3), as API Gateway joins them
        headers = {str(k).lower(): ",".join(_text(x, "a header value") for x in _values(v))
                   for k, v in _mapping(event, "multiValueHeaders").items() if v is not None}
        query = {_normalise(str(k)): tuple(_normalise(_text(x, "a query parameter")) for x in _values(v))
                 for k, v in _mapping(event, "multiValueQueryStringParameters").items()}
    else:
        headers = {str(k).lower(): str(v) for k, v in _mapping(event, "headers").items() if v is not None}
        query = {_normalise(str(k)): (_normalise(_text(v, "a query parameter")),)
                 for k, v in _mapping(event, "queryStringParameters").items()}
    body, text = _body(event)
    # The load balancer passes query names and values still percent-encoded: the raw form of the fingerprint.
    return HttpRequest(event=event, version="alb", method=method, route=f"{method} {path}", path=path,
                       headers=headers, query=query, body=body, text=text, raw_query=True, source="alb",
                       multi_value=multi_value)


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def raw_query_parameters(raw: str) -> dict[str, tuple[str, ...]]:
    """Parameters of a raw query string: name -> values in order, both normalised per RFC 3986 6.2.2.

    Percent-escapes get upper-case hex digits and escapes of unreserved characters are decoded;
    nothing else is decoded (``+``, ``%20`` and ``%2C`` stay distinct from a space and a comma),
    so two query strings that API Gateway could present differently never share a form.
    ``a`` and ``a=`` both give ``a`` the empty value; empty ``&&`` segments are skipped.
    """
    params: dict[str, tuple[str, ...]] = {}
    for segment in raw.split("&"):
        if segment:
            name, _, value = segment.partition("=")
            if "%" in segment:
                name, value = _normalise(name), _normalise(value)
            params[name] = (*params[name], value) if name in params else (value,)
    return params


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _unescape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _normalise(component: str) -> str:
    return _ESCAPE.sub(_unescape, component)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedRequestError(f"{what} is not a string")
    return value


def _mapping(event: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = event.get(name)
    if value is None:
        return {}
    if not is_mapping(value):
        raise MalformedRequestError(f"{name} is not an object")
    return value


def _body(event: Mapping[str, Any]) -> tuple[bytes, str | None]:
    body = event.get("body")
    if body is None:
        return b"", None
    if not isinstance(body, str):
        raise MalformedRequestError("body is not a string")
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True), None
        except (binascii.Error, ValueError):
            raise MalformedRequestError("isBase64Encoded is true but the body is not valid base64") from None
    return body.encode("utf-8", "surrogatepass"), body
