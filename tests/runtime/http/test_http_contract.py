"""Every row of the HTTP contract (docs/contract.md, rows H1-H16), on REST v1 and HTTP API v2 events, against moto."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import Engine, Mode, RecordCache, Transaction, idempotent_http, names
from retrysafe._keys import Scope
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import ORDERS, problem

EVENTS = {"rest": rest_event, "http": http_event}


class OrdersApi:
    """A create-order handler whose every execution is visible: it counts runs and writes an order item."""

    def __init__(self, status: int = 201) -> None:
        self.runs = 0
        self.status = status

    def __call__(self, event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        self.runs += 1
        body = json.loads(event["body"] or "{}")
        order_id = txn.derive_key("order")[:12]
        txn.put({"pk": f"order#{order_id}", "amount": body.get("amount", 0), "run": self.runs}, table=ORDERS)
        txn.append_event("OrderPlaced", {"id": order_id}, aggregate_type="Order", aggregate_id=order_id, sequence=1)
        return {"statusCode": self.status, "headers": {"Content-Type": "application/json",
                                                       "Location": f"/orders/{order_id}", "X-Run": str(self.runs)},
                "body": json.dumps({"id": order_id, "amount": body.get("amount", 0), "run": self.runs})}


def orders_in(ddb: Any) -> list[dict[str, Any]]:
    return ddb.scan(TableName=ORDERS)["Items"]


def records_in(ddb: Any) -> list[dict[str, Any]]:
    return [i for i in ddb.scan(TableName="idempotency")["Items"] if i["pk"]["S"].startswith(names.RECORD_PREFIX)]


@pytest.fixture(params=["rest", "http"])
def make_event(request: pytest.FixtureRequest) -> Any:
    return EVENTS[request.param]


@pytest.fixture(params=[Mode.ATOMIC, Mode.CLAIM_FIRST])
def mode(request: pytest.FixtureRequest) -> Mode:
    return request.param


def build(store: Any, api: Any, mode: Mode = Mode.ATOMIC, **options: Any) -> Any:
    engine = options.pop("engine", None) or Engine(store)
    return idempotent_http(api, mode=mode, engine=engine, **options)


def test_first_request_runs_once_and_commits_writes_record_and_event_atomically(ddb, store, calls, make_event, mode):
    api = OrdersApi()
    handler = build(store, api, mode)
    response = handler(make_event({"amount": 10}), DrillContext())
    assert response["statusCode"] == 201
    assert names.REPLAYED_HEADER not in response["headers"]
    assert api.runs == 1
    assert len(orders_in(ddb)) == 1
    outbox = [i for i in ddb.scan(TableName="idempotency")["Items"] if i["pk"]["S"].startswith(names.OUTBOX_PREFIX)]
    assert len(outbox) == 1 and outbox[0]["etype"]["S"] == "OrderPlaced"
    [record] = records_in(ddb)
    assert record["st"]["S"] == "completed" and "le" not in record  # "ow": the writer, for lost responses
    # Round trips: atomic = one TransactWriteItems; claim-first = claim + one TransactWriteItems.
    expected = {"TransactWriteItems": 1} if mode is Mode.ATOMIC else {"PutItem": 1, "TransactWriteItems": 1}
    assert dict(calls.calls) == expected


def test_replay_returns_stored_response_with_replayed_header_and_no_second_effect(ddb, store, calls, make_event, mode):
    api = OrdersApi()
    handler = build(store, api, mode)
    first = handler(make_event({"amount": 10}), DrillContext())
    calls.reset()
    again = handler(make_event({"amount": 10}), DrillContext())
    assert calls.total == 1
    assert again["statusCode"] == first["statusCode"] == 201
    assert again["body"] == first["body"]
    assert again["headers"]["Location"] == first["headers"]["Location"]
    assert again["headers"]["Content-Type"] == "application/json"
    assert again["headers"][names.REPLAYED_HEADER] == "true"
    assert "X-Run" not in again["headers"]  # only the headers that matter are stored
    assert len(orders_in(ddb)) == 1
    assert json.loads(orders_in(ddb)[0]["run"]["N"]) == 1


def test_replay_ignores_json_formatting_and_key_order(ddb, store, make_event):
    handler = build(store, OrdersApi())
    first = handler(make_event(raw_body='{"amount": 10, "currency": "EUR"}'), DrillContext())
    again = handler(make_event(raw_body='{"currency":"EUR",\n "amount":10}'), DrillContext())
    assert again["headers"][names.REPLAYED_HEADER] == "true" and again["body"] == first["body"]


def test_same_key_different_payload_is_422_and_nothing_happens(ddb, store, calls, make_event, mode):
    api = OrdersApi()
    handler = build(store, api, mode)
    handler(make_event({"amount": 10}), DrillContext())
    calls.reset()
    response = handler(make_event({"amount": 99}), DrillContext())
    assert response["statusCode"] == 422
    assert "different" in problem(response)["title"]
    assert len(orders_in(ddb)) == 1 and len(records_in(ddb)) == 1
    if mode is Mode.CLAIM_FIRST:
        assert api.runs == 1  # refused at the claim: the handler never ran
    assert calls.total == 1


def test_different_query_parameters_are_a_different_request(ddb, store, make_event):
    handler = build(store, OrdersApi())
    handler(make_event({"amount": 1}, query={"dry_run": "false"}), DrillContext())
    assert handler(make_event({"amount": 1}, query={"dry_run": "true"}), DrillContext())["statusCode"] == 422


def test_fingerprint_can_ignore_query_parameters(ddb, store, make_event):
    handler = build(store, OrdersApi(), fingerprint_query=())
    handler(make_event({"amount": 1}, query={"trace": "a"}), DrillContext())
    assert handler(make_event({"amount": 1}, query={"trace": "b"}), DrillContext())["headers"][names.REPLAYED_HEADER] == "true"


def test_in_flight_duplicate_is_409_with_retry_after(ddb, store, calls, make_event, clock):
    engine = Engine(store, clock=clock)
    seen: list[dict[str, Any]] = []

    def slow(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        calls.reset()
        seen.append(duplicate(event, DrillContext()))  # the duplicate arrives while the first holds the lease
        return {"statusCode": 200, "body": "{}"}

    duplicate = build(store, OrdersApi(), Mode.CLAIM_FIRST, engine=engine)
    first = build(store, slow, Mode.CLAIM_FIRST, engine=engine)
    assert first(make_event({"amount": 1}), DrillContext(remaining_ms=30_000))["statusCode"] == 200
    [response] = seen
    assert response["statusCode"] == 409
    assert 1 <= int(response["headers"]["Retry-After"]) <= 33
    assert problem(response)["type"].endswith("request-in-progress")


def test_in_flight_duplicate_is_one_round_trip(ddb, store, calls, make_event):
    first = build(store, OrdersApi(), Mode.CLAIM_FIRST)
    # A claim that is held by a live invocation (simulated by claiming directly).
    from retrysafe._engine import Intent
    from retrysafe.http._request import parse_event

    event = make_event({"amount": 1})
    request = parse_event(event)
    intent = Intent(Scope("tenant-a", request.route, "key-1", adapter=names.HTTP_ADAPTER,
                          subscriber=names.LOCAL_SUBSCRIBER), request.fingerprint(), Mode.CLAIM_FIRST)
    import time

    from retrysafe._record import PENDING, Record

    now = time.time()
    store.claim(Record(intent.scope.record_id, PENDING, intent.fingerprint, int(now) + 86400, int(now * 1000),
                       request.route, owner="someone", lease_until_ms=int((now + 30) * 1000)), now)
    calls.reset()
    response = first(event, DrillContext())
    assert response["statusCode"] == 409 and calls.total == 1


def test_in_flight_duplicate_can_wait_and_replay(ddb, store, make_event):
    import threading

    gate = threading.Event()
    results: list[dict[str, Any]] = []

    def slow(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        gate.set()
        import time
        time.sleep(0.4)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": '{"ok":true}'}

    first = build(store, slow, Mode.CLAIM_FIRST)
    waiter = build(store, OrdersApi(), Mode.CLAIM_FIRST, wait_for_in_flight=5.0)
    thread = threading.Thread(target=lambda: results.append(first(make_event({"a": 1}), DrillContext())))
    thread.start()
    gate.wait(5)
    replay = waiter(make_event({"a": 1}), DrillContext())
    thread.join()
    assert replay["statusCode"] == 201 and replay["headers"][names.REPLAYED_HEADER] == "true"
    assert replay["body"] == results[0]["body"]


@pytest.mark.parametrize("key, why", [
    ("", "empty"), ('""', "empty"), ("a" * 256, "too long"), ("has space", "bad character"),
    ("tab\tkey", "bad character"), ("é", "bad character"), ('"unterminated\\"', "bad escape"),
])
def test_malformed_key_is_400(ddb, store, calls, make_event, key, why):
    api = OrdersApi()
    response = build(store, api)(make_event({"amount": 1}, key=key), DrillContext())
    assert response["statusCode"] == 400, why
    assert problem(response)["type"].endswith("idempotency-key-invalid")
    assert api.runs == 0 and calls.total == 0


def test_missing_key_is_400_when_required(ddb, store, calls, make_event):
    api = OrdersApi()
    response = build(store, api)(make_event({"amount": 1}, key=None), DrillContext())
    assert response["statusCode"] == 400
    assert problem(response)["type"].endswith("idempotency-key-missing")
    assert api.runs == 0 and calls.total == 0


def test_optional_key_absent_runs_without_dedup_but_still_atomically(ddb, store, make_event):
    api = OrdersApi()
    handler = build(store, api, key_required=False)
    handler(make_event({"amount": 1}, key=None), DrillContext())
    handler(make_event({"amount": 1}, key=None), DrillContext())
    assert api.runs == 2 and len(records_in(ddb)) == 0


def test_quoted_structured_field_key_equals_bare_key(ddb, store, make_event):
    handler = build(store, OrdersApi())
    handler(make_event({"amount": 1}, key="abc-123"), DrillContext())
    assert handler(make_event({"amount": 1}, key='"abc-123"'), DrillContext())["headers"][names.REPLAYED_HEADER] == "true"


def test_key_header_name_is_configurable(ddb, store, make_event):
    api = OrdersApi()
    handler = build(store, api, header="X-Request-Intent")
    event = make_event({"amount": 1}, key=None, headers={"X-Request-Intent": "k"})
    handler(event, DrillContext())
    assert handler(event, DrillContext())["headers"][names.REPLAYED_HEADER] == "true"
    assert len(orders_in(ddb)) == 1


@pytest.mark.parametrize("status", [200, 201, 402, 404, 409, 422])
def test_2xx_and_4xx_results_are_stored_and_replayed(ddb, store, make_event, mode, status):
    api = OrdersApi(status=status)
    handler = build(store, api, mode)
    first = handler(make_event({"amount": 1}), DrillContext())
    again = handler(make_event({"amount": 1}), DrillContext())
    assert again["statusCode"] == status and again["body"] == first["body"]
    assert again["headers"][names.REPLAYED_HEADER] == "true" and len(orders_in(ddb)) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_not_cached_and_a_retry_runs_again(ddb, store, calls, make_event, mode, status):
    api = OrdersApi(status=status)
    handler = build(store, api, mode)
    assert handler(make_event({"amount": 1}), DrillContext())["statusCode"] == status
    assert records_in(ddb) == [] and orders_in(ddb) == []
    api.status = 201
    response = handler(make_event({"amount": 1}), DrillContext())
    assert response["statusCode"] == 201 and names.REPLAYED_HEADER not in response["headers"]
    assert len(orders_in(ddb)) == 1


def test_exception_releases_the_claim_and_a_retry_runs_again(ddb, store, calls, make_event, mode):
    api = OrdersApi()
    attempts = 0

    def flaky(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise TimeoutError("payment provider timed out")
        return api(event, context, txn)

    handler = build(store, flaky, mode)
    with pytest.raises(TimeoutError):
        handler(make_event({"amount": 1}), DrillContext())
    # Atomic: nothing was sent. Claim-first: claim + conditional delete.
    assert dict(calls.calls) == ({} if mode is Mode.ATOMIC else {"PutItem": 1, "DeleteItem": 1})
    assert records_in(ddb) == [] and orders_in(ddb) == []
    assert handler(make_event({"amount": 1}), DrillContext())["statusCode"] == 201
    assert len(orders_in(ddb)) == 1


def test_tenants_are_isolated(ddb, store, make_event, mode):
    api = OrdersApi()
    handler = build(store, api, mode)
    a = handler(make_event({"amount": 1}, tenant="tenant-a"), DrillContext())
    b = handler(make_event({"amount": 1}, tenant="tenant-b"), DrillContext())
    assert len(orders_in(ddb)) == 2 and a["body"] != b["body"]
    assert names.REPLAYED_HEADER not in b["headers"]
    # and a different payload under the same key in another tenant is not a mismatch
    assert handler(make_event({"amount": 7}, tenant="tenant-c"), DrillContext())["statusCode"] == 201


def test_operations_are_isolated(ddb, store, make_event):
    create, refund = OrdersApi(), OrdersApi()
    build(store, create, operation="CreateOrder")(make_event({"amount": 1}), DrillContext())
    response = build(store, refund, operation="RefundOrder")(make_event({"amount": 1}), DrillContext())
    assert len(orders_in(ddb)) == 2 and names.REPLAYED_HEADER not in response["headers"]


def test_default_operation_is_the_route_template_and_the_path_is_part_of_the_fingerprint(ddb, store):
    handler = build(store, OrdersApi())
    handler(rest_event({"a": 1}, resource="/orders/{id}/refund", path="/orders/1/refund"), DrillContext())
    replay = handler(rest_event({"a": 1}, resource="/orders/{id}/refund", path="/orders/1/refund"), DrillContext())
    assert replay["headers"][names.REPLAYED_HEADER] == "true"
    # Same operation (route template), same key, another resource: the key was reused for another request.
    other = handler(rest_event({"a": 1}, resource="/orders/{id}/refund", path="/orders/2/refund"), DrillContext())
    assert other["statusCode"] == 422


def test_missing_tenant_is_401_and_nothing_runs(ddb, store, calls, make_event):
    api = OrdersApi()
    response = build(store, api)(make_event({"amount": 1}, tenant=None), DrillContext())
    assert response["statusCode"] == 401 and problem(response)["type"].endswith("tenant-required")
    assert api.runs == 0 and calls.total == 0


def test_tenant_extractor_is_pluggable(ddb, store, make_event):
    api = OrdersApi()
    handler = build(store, api, tenant=lambda request: request.header("x-tenant"))
    handler(make_event({"a": 1}, tenant=None, headers={"X-Tenant": "t1"}), DrillContext())
    handler(make_event({"a": 1}, tenant=None, headers={"X-Tenant": "t2"}), DrillContext())
    assert len(orders_in(ddb)) == 2


def test_expired_record_not_yet_removed_by_ttl_is_treated_as_absent(ddb, store, make_event, mode, clock):
    runs: list[int] = []

    def api(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        runs.append(1)
        return {"statusCode": 201, "body": event["body"]}

    handler = build(store, api, mode, engine=Engine(store, clock=clock))
    handler(make_event({"amount": 1}), DrillContext())
    clock.advance(7 * 86400 + 1)  # past the horizon; moto (like DynamoDB for up to ~2 days) still has the item
    assert len(records_in(ddb)) == 1
    response = handler(make_event({"amount": 2}), DrillContext())
    assert response["statusCode"] == 201 and json.loads(response["body"]) == {"amount": 2} and len(runs) == 2


def test_late_replay_after_expiry_with_key_derived_business_id_creates_no_second_effect(ddb, store, make_event, clock):
    """Drill 8: the order id is derived from the key and its put is conditioned, so a late replay cannot duplicate it."""

    def create(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        order_id = txn.derive_key("order")
        txn.put({"pk": f"order#{order_id}", "amount": 1}, table=ORDERS, condition="attribute_not_exists(pk)")
        return {"statusCode": 201, "headers": {"Location": f"/orders/{order_id}"}, "body": json.dumps({"id": order_id})}

    handler = build(store, create, engine=Engine(store, clock=clock))
    first = handler(make_event({"amount": 1}), DrillContext())
    clock.advance(8 * 86400)
    late = handler(make_event({"amount": 1}), DrillContext())
    assert late["statusCode"] == 409 and problem(late)["type"].endswith("state-conflict")
    assert len(orders_in(ddb)) == 1 and first["statusCode"] == 201


def test_late_replay_after_expiry_answers_with_the_existing_resource(ddb, store, make_event, clock):
    """Drill 8 with on_state_conflict: the key-derived order exists, so the late replay answers with it."""

    def create(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        order_id = txn.derive_key("order")[:16]
        amount = json.loads(event["body"])["amount"]
        txn.put({"pk": f"order#{order_id}", "amount": amount}, table=ORDERS, condition="attribute_not_exists(pk)")
        return created(order_id, amount)

    def created(order_id: str, amount: Any) -> dict[str, Any]:
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order_id}"},
                "body": json.dumps({"id": order_id, "amount": int(amount)})}

    def existing_order(error: Any, event: Any) -> dict[str, Any]:
        order = error.current
        return created(order["pk"].removeprefix("order#"), order["amount"])

    handler = build(store, create, engine=Engine(store, clock=clock), on_state_conflict=existing_order)
    first = handler(make_event({"amount": 5}), DrillContext())
    clock.advance(8 * 86400)  # the record expired; the order lives on
    late = handler(make_event({"amount": 5}), DrillContext())
    assert late["statusCode"] == 201 and late["body"] == first["body"]
    assert late["headers"]["Location"] == first["headers"]["Location"]
    assert len(orders_in(ddb)) == 1


def test_claim_first_round_trips_first_2_replay_1(ddb, store, calls, make_event):
    handler = build(store, OrdersApi(), Mode.CLAIM_FIRST)
    handler(make_event({"amount": 1}), DrillContext())
    assert calls.total == 2
    calls.reset()
    handler(make_event({"amount": 1}), DrillContext())
    assert calls.total == 1


def test_warm_cache_replays_with_zero_round_trips(ddb, store, calls, make_event, mode):
    api = OrdersApi()
    handler = build(store, api, mode, engine=Engine(store, cache=RecordCache(16)))
    first = handler(make_event({"amount": 1}), DrillContext())
    calls.reset()
    again = handler(make_event({"amount": 1}), DrillContext())
    assert calls.total == 0 and again["body"] == first["body"] and again["headers"][names.REPLAYED_HEADER] == "true"
    mismatch = handler(make_event({"amount": 2}), DrillContext())
    assert mismatch["statusCode"] == 422 and calls.total == 0


def test_v2_plain_return_value_is_a_json_200(ddb, store):
    handler = build(store, lambda event, context, txn: {"id": "o-1"})
    first = handler(http_event({"a": 1}), DrillContext())
    again = handler(http_event({"a": 1}), DrillContext())
    assert first["statusCode"] == again["statusCode"] == 200
    assert json.loads(again["body"]) == {"id": "o-1"} and again["headers"][names.REPLAYED_HEADER] == "true"


def test_a_first_execution_answers_with_its_own_response_not_one_rebuilt_from_the_record(ddb, store, monkeypatch):
    # The response the handler's answer was reduced to is the answer; a replay rebuilds it from the record.
    from retrysafe.http import _core

    rebuilt: list[Any] = []
    real = _core.StoredResponse.from_result
    monkeypatch.setattr(_core.StoredResponse, "from_result", classmethod(
        lambda cls, result: rebuilt.append(result) or real(result)))
    handler = build(store, lambda event, context, txn: {"id": "o-1"})
    first = handler(http_event({"a": 1}), DrillContext())
    assert rebuilt == []
    again = handler(http_event({"a": 1}), DrillContext())
    assert len(rebuilt) == 1
    assert (first["statusCode"], first["body"], first["headers"]) == (
        again["statusCode"], again["body"], {k: v for k, v in again["headers"].items() if k != names.REPLAYED_HEADER})


def test_base64_binary_body_is_fingerprinted_as_bytes(ddb, store):
    import base64

    handler = build(store, lambda e, c, t: {"statusCode": 200, "body": "ok"})
    body = base64.b64encode(b"\x00\x01binary").decode()
    handler(rest_event(raw_body=body, base64=True, headers={"Content-Type": "application/octet-stream"}), DrillContext())
    other = base64.b64encode(b"\x00\x02binary").decode()
    response = handler(rest_event(raw_body=other, base64=True), DrillContext())
    assert response["statusCode"] == 422


def test_malformed_events_are_400_problems(ddb, store, calls):
    handler = build(store, OrdersApi())
    assert handler(rest_event(raw_body="%%%", base64=True), DrillContext())["statusCode"] == 400
    assert handler({"not": "an api gateway event"}, DrillContext())["statusCode"] == 400
    assert calls.total == 0
