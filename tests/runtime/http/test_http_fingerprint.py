"""HTTP fingerprints are injective: requests a handler reads differently never replay each other's answer.

Query parameters (REST v1 multi-value, HTTP API v2 raw query string), exact JSON numbers, duplicate
member names and lone surrogates, through the decorator against moto.
"""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe import names
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import problem
from tests.runtime.http.test_http_contract import OrdersApi, build, orders_in


def v2_query(raw: str, params: dict[str, str] | None = None, body: Any = None) -> dict[str, Any]:
    """An HTTP API event as API Gateway sends it: the raw query string, and values joined with commas."""
    event = http_event(body)
    event["rawQueryString"] = raw
    event["queryStringParameters"] = params
    return event


def v1_query(multi: dict[str, list[str]], body: Any = None) -> dict[str, Any]:
    event = rest_event(body)
    event["multiValueQueryStringParameters"] = multi
    event["queryStringParameters"] = {k: v[-1] for k, v in multi.items()}
    return event


def test_v1_query_values_cannot_pose_as_parameters(ddb, store):
    handler = build(store, OrdersApi())
    handler(v1_query({"amount": ["100"], "currency": ["EUR"]}), DrillContext())
    response = handler(v1_query({"amount": ["100", "currency", "EUR"]}), DrillContext())
    assert response["statusCode"] == 422 and len(orders_in(ddb)) == 1


@pytest.mark.parametrize("first, second", [
    (("amount=100&currency=EUR", {"amount": "100", "currency": "EUR"}),
     ("amount=100,currency,EUR", {"amount": "100,currency,EUR"})),
    (("tag=red%2Cblue", {"tag": "red,blue"}), ("tag=red&tag=blue", {"tag": "red,blue"})),
    (("a=1&a=2", {"a": "1,2"}), ("a=2&a=1", {"a": "2,1"})),  # the order of one parameter's values counts
    (("q=a+b", {"q": "a+b"}), ("q=a%20b", {"q": "a b"})),
])
def test_v2_raw_query_strings_that_differ_are_different_requests(ddb, store, first, second):
    handler = build(store, OrdersApi())
    assert handler(v2_query(*first), DrillContext())["statusCode"] == 201
    response = handler(v2_query(*second), DrillContext())
    assert response["statusCode"] == 422 and len(orders_in(ddb)) == 1


@pytest.mark.parametrize("first, second", [
    ("b=2&a=1", "a=1&b=2"),  # parameter order
    ("name=Zo%c3%ab&x=%7e", "x=~&name=Zo%C3%AB"),  # RFC 3986 6.2.2 normalisation
    ("flag&x=1", "x=1&flag="),  # a name without "=" has the empty value
])
def test_v2_query_strings_that_name_the_same_parameters_replay(ddb, store, first, second):
    handler = build(store, OrdersApi())
    handler(v2_query(first), DrillContext())
    assert handler(v2_query(second), DrillContext())["headers"][names.REPLAYED_HEADER] == "true"


def test_fingerprint_query_selects_raw_parameters_by_their_decoded_name(ddb, store):
    handler = build(store, OrdersApi(), fingerprint_query=("dry run",))
    handler(v2_query("dry%20run=1&trace=a"), DrillContext())
    assert handler(v2_query("trace=b&dry%20run=1"), DrillContext())["headers"][names.REPLAYED_HEADER] == "true"
    assert handler(v2_query("dry%20run=2&trace=a"), DrillContext())["statusCode"] == 422


@pytest.mark.parametrize("make_event", [rest_event, http_event])
@pytest.mark.parametrize("first, second", [
    ('{"n": 9007199254740993}', '{"n": 9007199254740992}'),
    ('{"amount": 0.10000000000000001}', '{"amount": 0.1}'),
])
def test_numbers_a_double_cannot_hold_are_different_requests(ddb, store, make_event, first, second):
    handler = build(store, OrdersApi())
    handler(make_event(raw_body=first), DrillContext())
    assert handler(make_event(raw_body=second), DrillContext())["statusCode"] == 422


@pytest.mark.parametrize("make_event", [rest_event, http_event])
def test_json_spelling_does_not_change_the_request(ddb, store, make_event):
    handler = build(store, OrdersApi())
    handler(make_event(raw_body='{"amount": 1.0, "note": "caf\\u00e9", "lines": [1E2]}'), DrillContext())
    again = handler(make_event(raw_body='{"lines":[100],"note":"caf\u00e9","amount":1}'), DrillContext())
    assert again["headers"][names.REPLAYED_HEADER] == "true"


@pytest.mark.parametrize("make_event", [rest_event, http_event])
@pytest.mark.parametrize("body, why", [('{"a": 1, "a": 2}', "repeats an object member name"),
                                       ('{"x": "\\ud800"}', "lone surrogate")])
def test_json_bodies_without_a_canonical_form_are_400_before_any_call(ddb, store, calls, make_event, body, why):
    api = OrdersApi()
    response = build(store, api)(make_event(raw_body=body), DrillContext())
    assert response["statusCode"] == 400 and why in problem(response)["detail"]
    assert api.runs == 0 and calls.total == 0


def test_a_body_that_is_not_declared_json_is_hashed_as_bytes(ddb, store):
    handler = build(store, OrdersApi())
    plain = {"Content-Type": "text/plain"}
    handler(rest_event(raw_body='{"a": 1}', headers=plain), DrillContext())
    assert handler(rest_event(raw_body='{"a":1}', headers=plain), DrillContext())["statusCode"] == 422
    # Undeclared or JSON media types (with parameters, +json) are canonicalised.
    for key, content_type in (("k-2", "application/json; charset=utf-8"), ("k-3", "application/merge-patch+json")):
        handler(rest_event(raw_body='{"b": 2, "a": 1}', key=key, headers={"Content-Type": content_type}),
                DrillContext())
        again = handler(rest_event(raw_body='{"a":1,"b":2}', key=key, headers={"Content-Type": content_type.upper()}),
                        DrillContext())
        assert again["headers"][names.REPLAYED_HEADER] == "true"


def test_an_event_of_read_only_mappings_reads_as_the_same_request() -> None:
    # Dicts skip the ABC check; any other mapping (here read-only views) is still an object of the event.
    from types import MappingProxyType

    from retrysafe.http._request import parse_event
    from retrysafe.http._tenant import default_tenant

    event = http_event({"amount": 42}, key="k-1")

    def frozen(value: Any) -> Any:
        return MappingProxyType({k: frozen(v) for k, v in value.items()}) if isinstance(value, dict) else value

    request, viewed = parse_event(event), parse_event(frozen(event))
    assert viewed.fingerprint() == request.fingerprint()
    assert (viewed.method, viewed.route, viewed.headers) == (request.method, request.route, request.headers)
    assert default_tenant(viewed) == default_tenant(request) is not None
