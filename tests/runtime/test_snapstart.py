"""SnapStart: the store's client exists before the snapshot, without connections; restored environments differ.

``snapshot_restore_py`` exists only in Lambda's runtime: a stand-in module in ``sys.modules``
records the hooks the runtime registers, and the tests call them as Lambda would (before the
snapshot in reverse order of registration, after a restore in order). A "restore" puts back the
process state the snapshot holds (here: the ``random`` generator's state) before running the
after-restore hooks, twice from the same snapshot state.
"""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.retries.standard import ExponentialBackoff
from retrysafe import DynamoStore, Engine, Mode, idempotent_http, names
from retrysafe import _snapstart as snapstart
from retrysafe import _store as store_module
from retrysafe._engine import new_token
from retrysafe.testing._events import DrillContext, api_event

from tests.helpers import TABLE, CallCounter


class FakeHooks(types.ModuleType):
    """``snapshot_restore_py`` as Lambda's runtime provides it: registration functions."""

    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.before: list[Callable[[], None]] = []
        self.after: list[Callable[[], None]] = []

    def register_before_snapshot(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.before.append(lambda: func(*args, **kwargs))

    def register_after_restore(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.after.append(lambda: func(*args, **kwargs))

    def snapshot(self) -> object:
        """Run the before-snapshot hooks (reverse order of registration); the process state then frozen."""
        for hook in reversed(self.before):
            hook()
        return random.getstate()

    def restore(self, state: object, *, hooks: bool = True) -> None:
        """Resume from ``state`` and run the after-restore hooks (in order of registration)."""
        random.setstate(state)  # type: ignore[arg-type]
        for hook in self.after if hooks else ():
            hook()


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHooks]:
    """Lambda's SnapStart init phase: the hooks module exists, and no store or hook is registered yet."""
    fake = FakeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    monkeypatch.setattr(snapstart, "_stores", [])
    monkeypatch.setattr(snapstart, "_registered", False)
    monkeypatch.setattr(store_module, "_SHARED", {})
    saved = random.getstate()
    yield fake
    random.setstate(saved)


def _ok(event: Any, context: Any, txn: Any) -> dict[str, Any]:
    txn.append_event("Created", {"n": 1}, aggregate_type="Thing", aggregate_id="1")
    return {"statusCode": 201, "body": "{}"}


def test_the_client_is_created_in_init_and_kept_across_the_snapshot(hooks: FakeHooks, ddb: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Module load (the init phase) creates the client and registers the hooks once; the first request after a
    restore uses that client: no client is created after the snapshot."""
    handler = idempotent_http(_ok, operation="Snap", mode=Mode.CLAIM_FIRST)
    idempotent_http(_ok, operation="Other")  # a second decorator: same store, hooks not registered twice
    store = handler.idempotency.engine.store
    client = store._client
    assert client is not None and len(hooks.before) == 1 and len(hooks.after) == 1
    state = hooks.snapshot()
    created: list[str] = []
    import botocore.session

    original = botocore.session.Session.create_client
    monkeypatch.setattr(botocore.session.Session, "create_client",
                        lambda self, *a, **k: created.append(a[0]) or original(self, *a, **k))
    hooks.restore(state)
    calls = CallCounter(store.client)
    response = handler(api_event("{}", headers={names.IDEMPOTENCY_KEY_HEADER: "after-restore"}), DrillContext())
    assert response["statusCode"] == 201
    assert store.client is client and created == [] and calls.total == 2  # claim-first: claim + commit


def test_a_store_made_before_the_hooks_exist_gets_its_client_before_the_snapshot(hooks: FakeHooks) -> None:
    """A store registered by hand (not through ``from_env``) without a client has one once the snapshot is taken."""
    own = DynamoStore("own-table")
    assert snapstart.register_snapstart(own) and own._client is None
    hooks.snapshot()
    assert own._client is not None


def test_outside_lambda_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapstart, "_stores", [])
    monkeypatch.setattr(snapstart, "_registered", False)
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # importing it raises ImportError, as outside Lambda
    assert snapstart.register_snapstart(DynamoStore(TABLE)) is False


def test_connections_are_closed_before_the_snapshot_and_after_restore(hooks: FakeHooks) -> None:
    """A connection opened during init (``RETRYSAFE_VERIFY_TABLE``'s DescribeTable, a user's warm-up call) is not
    carried into the snapshot, where every restored environment would share one stale socket."""
    from moto.server import ThreadedMotoServer

    from tests.helpers import create_idempotency_table

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        store = DynamoStore(TABLE, region_name="eu-west-1")
        store._client = _client_for(f"http://{host}:{port}")
        snapstart.register_snapstart(store)
        create_idempotency_table(store.client)
        store.verify()  # a real round trip: the pool now holds a connection
        assert _open_connections(store.client) == 1
        state = hooks.snapshot()
        assert _open_connections(store.client) == 0
        store.verify()  # a call made after our hook (another library's before-snapshot hook)
        hooks.restore(state)
        assert _open_connections(store.client) == 0
        store.verify()  # the client still works: it opens a new connection
        assert _open_connections(store.client) == 1
    finally:
        server.stop()


def _client_for(endpoint: str) -> Any:
    import boto3

    return boto3.client("dynamodb", region_name="eu-west-1", endpoint_url=endpoint)


def _open_connections(client: Any) -> int:
    pools = client._endpoint.http_session._manager.pools  # urllib3's pools of idle connections, per host
    # urllib3's RecentlyUsedContainer refuses iteration; keys() is its snapshot of the hosts
    return sum(1 for key in pools.keys() for connection in list(pools[key].pool.queue)  # noqa: SIM118
               if connection is not None)


def test_restores_from_one_snapshot_get_different_tokens_and_retry_jitter(hooks: FakeHooks, ddb: Any) -> None:
    """Two environments restored from the same snapshot: the owner tokens and intent instances they write differ,
    and so does botocore's retry jitter (drawn from ``random``), which the after-restore hook reseeds."""
    handler = idempotent_http(_ok, operation="Tokens", mode=Mode.CLAIM_FIRST)
    engine: Engine = handler.idempotency.engine
    state = hooks.snapshot()
    seen = []
    for environment in ("a", "b"):
        hooks.restore(state)
        jitter = ExponentialBackoff().delay_amount(types.SimpleNamespace(attempt_number=3, http_response=None))
        token = new_token()
        handler(api_event("{}", headers={names.IDEMPOTENCY_KEY_HEADER: f"restore-{environment}"}), DrillContext())
        records = ddb.scan(TableName=TABLE, FilterExpression="begins_with(pk, :p)",
                           ExpressionAttributeValues={":p": {"S": names.RECORD_PREFIX}})["Items"]
        seen.append((jitter, token, {item["ow"]["S"] for item in records}))
    (jitter_a, token_a, owners_a), (jitter_b, token_b, owners_b) = seen
    assert jitter_a != jitter_b and token_a != token_b
    assert len(owners_a) == 1 and len(owners_b - owners_a) == 1  # each environment's claim had its own owner token
    assert engine.store is DynamoStore.from_env()


def test_without_the_reseed_restored_environments_share_the_random_sequence(hooks: FakeHooks) -> None:
    """The control: resuming the same snapshot state twice without the hook repeats ``random``'s draws exactly
    (what the after-restore hook prevents); ``os.urandom`` tokens never depend on that state."""
    state = hooks.snapshot()
    draws = []
    for _ in range(2):
        hooks.restore(state, hooks=False)
        draws.append((random.random(), new_token()))
    assert draws[0][0] == draws[1][0] and draws[0][1] != draws[1][1]


def test_the_home_regions_clients_are_created_in_init_and_closed_around_the_snapshot(
        hooks: FakeHooks, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table with replicas: the store of each other home region gets its client in init too (no client is
    created on a first request after a restore), and its connections are closed like the local one's."""
    monkeypatch.setenv(names.HOME_REGION_ENV, "us-east-1")
    monkeypatch.setenv(names.TENANT_HOME_REGIONS_ENV, '{"acme": "eu-west-1", "globex": "ap-southeast-2"}')
    store = DynamoStore.from_env()
    homes = store.home_stores()
    assert [home.region for home in homes] == ["ap-southeast-2", "us-east-1"]  # eu-west-1 is the store's own
    assert all(home._client is not None for home in homes) and snapstart._stores == [store, *homes]
    closed: list[str] = []
    for each in (store, *homes):
        monkeypatch.setattr(each.client, "close", lambda region=each.region: closed.append(region))
    hooks.snapshot()
    assert sorted(closed) == ["ap-southeast-2", "eu-west-1", "us-east-1"]
