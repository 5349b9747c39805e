"""The warm-container RecordCache: on by default for the store from the environment in Lambda's execution
environment (tests/runtime/test_user_test_suites.py: off in a test suite), and never answering
what DynamoDB would not (expired records, pending claims, another table's records), within a byte budget."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from retrysafe import DynamoStore, Engine, Mode, RecordCache, idempotent_http
from retrysafe._cache import entry_size
from retrysafe._config import DEFAULT_HORIZON_SECONDS
from retrysafe._record import COMPLETED, PENDING, Record
from retrysafe._store import _SHARED
from retrysafe.names import RECORD_PREFIX, REPLAYED_HEADER
from retrysafe.testing import Clock, DynamoSemantics
from retrysafe.testing._events import DrillContext, http_event

from tests.helpers import TABLE, CallCounter
from tests.runtime.http.test_http_contract import OrdersApi, orders_in


def _record(record_id: str = "idem#a", result: Any = None, state: str = COMPLETED, expires_at: int = 2_000_000_000,
            fingerprint: str = "fp") -> Record:
    return Record(record_id=record_id, state=state, fingerprint=fingerprint, expires_at=expires_at,
                  result={"s": 201, "b": "x"} if result is None else result)


@pytest.fixture(params=[Mode.ATOMIC, Mode.CLAIM_FIRST])
def mode(request: pytest.FixtureRequest) -> Mode:
    return request.param


@pytest.fixture
def env_store(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The store the adapters take from the environment (a fresh Lambda container's), on moto."""
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")  # Lambda's execution environment: the cache is on
    monkeypatch.setitem(_SHARED, TABLE, None)  # restored after the test
    del _SHARED[TABLE]
    store = DynamoStore.from_env()
    DynamoSemantics().install(store.client)
    return store


def _container(store_name: str = TABLE) -> DynamoStore:
    """Another container's store on the same table: its own client and its own (empty) cache."""
    store = DynamoStore(store_name, cache=RecordCache())
    DynamoSemantics().install(store.client)
    return store


def test_the_store_from_the_environment_caches_by_default_and_replays_with_zero_calls(env_store, ddb, mode):
    assert isinstance(env_store.cache, RecordCache) and Engine(env_store).cache is env_store.cache
    calls = CallCounter(env_store.client)
    api = OrdersApi()
    handler = idempotent_http(api, mode=mode)  # no store, no engine: the deployed default
    first = handler(http_event({"amount": 1}), DrillContext())
    calls.reset()
    again = handler(http_event({"amount": 1}), DrillContext())
    assert calls.total == 0 and api.runs == 1
    assert again["body"] == first["body"] and again["headers"][REPLAYED_HEADER] == "true"
    mismatch = handler(http_event({"amount": 2}), DrillContext())
    assert mismatch["statusCode"] == 422 and calls.total == 0


def test_a_replay_in_another_container_goes_to_dynamodb_once_and_fills_that_containers_cache(env_store, ddb, mode):
    first = idempotent_http(OrdersApi(), mode=mode)(http_event({"amount": 1}), DrillContext())
    other = _container()
    calls = CallCounter(other.client)
    api = OrdersApi()
    handler = idempotent_http(api, mode=mode, store=other)
    again = handler(http_event({"amount": 1}), DrillContext())
    assert calls.total == 1 and again["body"] == first["body"] and again["headers"][REPLAYED_HEADER] == "true"
    calls.reset()
    handler(http_event({"amount": 1}), DrillContext())
    assert calls.total == 0 and len(orders_in(ddb)) == 1
    assert api.runs == (1 if mode is Mode.ATOMIC else 0)  # atomic: the handler ran once, its transaction cancelled


def test_a_cached_record_is_not_answered_once_expired_the_key_executes_anew(ddb, mode):
    clock = Clock(1_800_000_000.0)
    store = _container()
    api = OrdersApi()
    handler = idempotent_http(api, mode=mode, engine=Engine(store, clock=clock))
    handler(http_event({"amount": 1}), DrillContext())
    clock.advance(DEFAULT_HORIZON_SECONDS - 1)
    assert handler(http_event({"amount": 2}), DrillContext())["statusCode"] == 422  # still live: mismatch
    clock.advance(2)  # past the record's expiry
    calls = CallCounter(store.client)
    fresh = handler(http_event({"amount": 2}), DrillContext())
    assert fresh["statusCode"] == 201 and REPLAYED_HEADER not in fresh["headers"]
    assert api.runs == 2 and calls.total >= 1  # went to DynamoDB, which let the new intent replace the record
    assert json.loads(fresh["body"])["amount"] == 2


def test_pending_records_are_never_cached_and_expired_ones_are_dropped():
    cache = RecordCache()
    cache.put(_record(state=PENDING))
    assert len(cache) == 0
    cache.put(_record(expires_at=100))
    assert cache.get("idem#a", 99.0) is not None
    assert cache.get("idem#a", 101.0) is None and len(cache) == 0 and cache.size_bytes == 0


def test_a_hit_is_a_copy_a_caller_mutating_its_answer_does_not_change_the_next_replay():
    cache = RecordCache()
    cache.put(_record(result={"s": 201, "h": {"Location": "/o/1"}, "b": "x"}))
    hit = cache.get("idem#a", 0.0)
    assert hit is not None
    hit.result["h"]["Location"] = "/changed"
    again = cache.get("idem#a", 0.0)
    assert again is not None and again.result == {"s": 201, "h": {"Location": "/o/1"}, "b": "x"}


def test_a_hit_has_every_field_of_the_record_put_and_the_cache_holds_no_result_object():
    cache = RecordCache()
    result = {"s": 201, "h": {"Location": "/o/1"}, "b": "x"}
    record = Record(record_id="idem#a", state=COMPLETED, fingerprint="fp-1", expires_at=2_000_000_000,
                    created_at_ms=1_700_000_000_123, operation="CreateOrder", owner="writer-1", result=result,
                    resource="order/1")
    held = sys.getrefcount(result)
    cache.put(record)
    assert sys.getrefcount(result) == held  # only the stored text is kept: the budget counts what is held
    hit = cache.get("idem#a", 0.0)
    assert hit == record and hit.result is not result and hit.result_text == record.result_text


def test_the_byte_budget_evicts_least_recently_used_and_skips_oversized_results():
    text = json.dumps({"b": "y" * 1000}, separators=(",", ":"))
    entry = entry_size("idem#0", text)
    cache = RecordCache(max_bytes=4 * entry + 10)
    for index in range(3):
        cache.put(_record(f"{RECORD_PREFIX}{index}", result={"b": "y" * 1000}))
    assert cache.get("idem#0", 0.0) is not None  # now the most recently used
    cache.put(_record("idem#3", result={"b": "y" * 1000}))
    cache.put(_record("idem#4", result={"b": "y" * 1000}))
    assert cache.size_bytes <= cache.max_bytes and len(cache) == 4
    assert cache.get("idem#1", 0.0) is None and cache.get("idem#0", 0.0) is not None
    cache.put(_record("idem#big", result={"b": "z" * (2 * entry)}))  # over a quarter of the budget
    assert cache.get("idem#big", 0.0) is None and len(cache) == 4
    cache.put(_record("idem#0", result={"b": "y" * 1000}))  # replacing an entry counts it once
    assert cache.size_bytes <= cache.max_bytes and len(cache) == 4


def test_each_store_has_its_own_cache(ddb):
    one, two = _container(TABLE), _container("other-table")
    one.cache.put(_record())
    assert Engine(two).cache is two.cache and two.cache.get("idem#a", 0.0) is None
    assert Engine(one, cache=None).cache is None  # opting out


def test_a_constructed_store_has_no_cache_unless_given_one():
    assert DynamoStore("t").cache is None and Engine(DynamoStore("t")).cache is None
    with pytest.raises(ValueError, match="max_bytes"):
        RecordCache(max_bytes=0)


#: One Lambda container's store from the environment, shared by the two runs below (as a warm container's is).
_CONTAINER: dict[str, DynamoStore] = {}


@pytest.fixture
def lambda_container(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lambda's execution environment, whose store from the environment (with its cache) outlives a test."""
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    monkeypatch.setitem(_SHARED, TABLE, _CONTAINER.setdefault(TABLE, DynamoStore(TABLE, cache=RecordCache())))


@pytest.mark.parametrize("run", [1, 2])
def test_the_pytest_plugins_table_starts_with_an_empty_cache(lambda_container: None, retrysafe_table: DynamoStore,
                                                             run: int) -> None:
    """The store from the environment outlives a test; a record cached by one test must not answer in the next
    (its table is new and empty): whichever of these runs second fails without the plugin's clearing."""
    assert retrysafe_table is _CONTAINER[TABLE]
    assert retrysafe_table.cache is not None and len(retrysafe_table.cache) == 0
    retrysafe_table.cache.put(_record())


def test_a_new_write_for_a_key_replaces_the_cached_one_and_the_same_write_is_kept_once():
    cache = RecordCache()
    old = Record(record_id="idem#a", state=COMPLETED, fingerprint="fp-1", expires_at=100, owner="w1", result={"v": 1})
    cache.put(old)
    size = cache.size_bytes
    cache.put(old)  # a replay of the cached record puts it again
    assert len(cache) == 1 and cache.size_bytes == size
    new = Record(record_id="idem#a", state=COMPLETED, fingerprint="fp-2", expires_at=900, owner="w2",
                 result={"v": 22})
    cache.put(new)  # the next intent after expiry (another writer)
    hit = cache.get("idem#a", 500.0)
    assert hit is not None and (hit.fingerprint, hit.result) == ("fp-2", {"v": 22}) and len(cache) == 1
    assert cache.size_bytes == size + 1


@pytest.mark.parametrize("character", ["y", "\u00e9", "\u20ac", "\U0001f600"], ids=["ascii", "latin-1", "bmp", "emoji"])
def test_the_byte_budget_bounds_the_memory_the_cache_holds_whatever_the_characters(character):
    """Measured with tracemalloc: CPython stores a text with one emoji at 4 bytes per character, so a budget
    counted in characters held ~3.5 MB for max_bytes=1_000_000. The cache must hold what it counts."""
    import tracemalloc

    budget = 1_000_000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache = RecordCache(max_items=100_000, max_bytes=budget)
        for index in range(2_000):
            record = _record(f"{RECORD_PREFIX}{index:06d}", result={"s": 201, "b": character + "x" * 2_000})
            cache.put(record)
            del record
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert cache.size_bytes <= budget and len(cache) > 0
    assert held <= budget * 1.1, f"the cache holds {held} bytes for a budget of {budget}"
    assert cache.get(f"{RECORD_PREFIX}001999", 0.0) is not None  # the most recent entries stay
