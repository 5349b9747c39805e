"""Home regions: with replicas, every claim and commit of a tenant goes to its home region's replica.

Two regions of in-process moto stand for a global table's replicas (moto does not replicate:
each region's table is on its own here, which is exactly what a routing test needs: a record
written to the wrong replica is visible as such). Round trips are counted per region at
each transport's attempt seam: routing costs no extra call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import DynamoStore, Engine, HomeRegions, Mode, Transaction, idempotent_http, names
from retrysafe._keys import Scope
from retrysafe.errors import ConfigurationError
from retrysafe.testing._events import DrillContext, http_event

from tests.helpers import ORDERS, TABLE, CallCounter, create_business_table, create_idempotency_table

HOME, OTHER = "eu-west-1", "us-east-1"


@pytest.fixture
def regions(aws: None) -> dict[str, Any]:
    """A client per region, each region with the idempotency and business tables."""
    import boto3

    clients = {}
    for region in (HOME, OTHER):
        client = boto3.client("dynamodb", region_name=region)
        create_idempotency_table(client)
        create_business_table(client, ORDERS)
        clients[region] = client
    return clients


def records(client: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return [i for i in items if i["pk"]["S"].startswith(names.RECORD_PREFIX)]


def handler(store: DynamoStore, mode: Mode, effects: list[str]) -> Any:
    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        effects.append(event["body"])
        txn.put({"pk": "order-1", "amount": json.loads(event["body"])["amount"]}, table=ORDERS)
        return {"statusCode": 201, "body": json.dumps({"order": "order-1"})}

    return idempotent_http(create, operation="CreateOrder", mode=mode, engine=Engine(store))


@pytest.mark.parametrize(("mode", "calls"), [(Mode.ATOMIC, {"TransactWriteItems": 1}),
                                             (Mode.CLAIM_FIRST, {"PutItem": 1, "TransactWriteItems": 1})])
def test_a_function_in_another_region_writes_to_the_home_replica_in_the_same_round_trips(
        regions: dict[str, Any], mode: Mode, calls: dict[str, int]) -> None:
    counters = {region: CallCounter(client) for region, client in regions.items()}
    effects: list[str] = []
    # the function runs in OTHER; the tenant's home is HOME
    store = DynamoStore(TABLE, client=regions[OTHER], home_regions=HomeRegions(HOME),
                        home_clients={HOME: regions[HOME]})
    response = handler(store, mode, effects)(http_event({"amount": 10}), DrillContext())
    assert response["statusCode"] == 201
    assert dict(counters[HOME].calls) == calls
    assert counters[OTHER].total == 0
    assert len(records(regions[HOME])) == 1 and records(regions[OTHER]) == []
    assert regions[HOME].get_item(TableName=ORDERS, Key={"pk": {"S": "order-1"}}).get("Item")  # the business write too


def test_a_retry_in_the_home_region_replays_what_another_region_committed(regions: dict[str, Any]) -> None:
    """The failure the routing prevents: with MREC, a retry landing in another region's replica before
    replication would find no record and run again. Both functions send to the home replica: one effect."""
    effects: list[str] = []
    homes = HomeRegions(HOME)
    far = DynamoStore(TABLE, client=regions[OTHER], home_regions=homes, home_clients={HOME: regions[HOME]})
    near = DynamoStore(TABLE, client=regions[HOME], home_regions=homes)
    first = handler(far, Mode.CLAIM_FIRST, effects)(http_event({"amount": 10}), DrillContext())
    retry = handler(near, Mode.CLAIM_FIRST, effects)(http_event({"amount": 10}), DrillContext())
    assert retry["statusCode"] == first["statusCode"] == 201
    assert retry["headers"][names.REPLAYED_HEADER] == "true"
    assert len(effects) == 1


def test_without_home_regions_each_region_writes_its_own_replica(regions: dict[str, Any]) -> None:
    """What the routing is for: two regions' functions, each on its own replica, both run the effect
    (on a global table, replication would then overwrite one record with the other: last writer wins)."""
    effects: list[str] = []
    for region in (HOME, OTHER):
        handler(DynamoStore(TABLE, client=regions[region]), Mode.ATOMIC, effects)(http_event({"amount": 10}),
                                                                                 DrillContext())
    assert len(effects) == 2
    assert len(records(regions[HOME])) == len(records(regions[OTHER])) == 1


def test_a_tenant_homed_elsewhere_goes_to_its_own_region(regions: dict[str, Any]) -> None:
    effects: list[str] = []
    store = DynamoStore(TABLE, client=regions[HOME], home_regions=HomeRegions(HOME, tenants={"acme": OTHER}),
                        home_clients={OTHER: regions[OTHER]})
    handler(store, Mode.ATOMIC, effects)(http_event({"amount": 10}, tenant="acme"), DrillContext())
    handler(store, Mode.ATOMIC, effects)(http_event({"amount": 10}, tenant="tenant-a"), DrillContext())
    assert len(records(regions[OTHER])) == 1 and len(records(regions[HOME])) == 1


def test_unkeyed_requests_are_routed_too(regions: dict[str, Any]) -> None:
    store = DynamoStore(TABLE, client=regions[OTHER], home_regions=HomeRegions(HOME),
                        home_clients={HOME: regions[HOME]})
    counters = {region: CallCounter(client) for region, client in regions.items()}
    Engine(store).execute_unkeyed(Scope("tenant-a", "Ping", "", adapter=names.HTTP_ADAPTER), lambda txn: (
        txn.put({"pk": "ping"}, table=ORDERS), _stored())[1])
    assert dict(counters[HOME].calls) == {"TransactWriteItems": 1} and counters[OTHER].total == 0


def _stored() -> Any:
    from retrysafe._engine import Completion

    return Completion({"ok": True})


def test_the_home_store_makes_its_own_client_in_the_home_region(regions: dict[str, Any]) -> None:
    store = DynamoStore(TABLE, client=regions[OTHER], home_regions=HomeRegions(HOME))
    scope = Scope("tenant-a", "CreateOrder", "key-1", adapter=names.HTTP_ADAPTER)
    home = store.for_scope(scope)
    assert home is not store and home.region == HOME and home.client.meta.region_name == HOME
    assert store.for_scope(scope) is home  # one client per home region, reused
    assert home.for_scope(scope) is home and home.cache is store.cache
    assert DynamoStore(TABLE, client=regions[HOME], home_regions=HomeRegions(HOME)).for_scope(scope).region == HOME


def test_the_mapping_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.HOME_REGION_ENV, raising=False)
    monkeypatch.delenv(names.TENANT_HOME_REGIONS_ENV, raising=False)
    assert HomeRegions.from_env() is None
    monkeypatch.setenv(names.HOME_REGION_ENV, HOME)
    assert HomeRegions.from_env() == HomeRegions(HOME)
    monkeypatch.setenv(names.TENANT_HOME_REGIONS_ENV, json.dumps({"acme": OTHER}))
    homes = HomeRegions.from_env()
    assert homes is not None and homes.region_for(Scope("acme", "op", "k", adapter=names.HTTP_ADAPTER)) == OTHER
    assert homes.region_for(Scope("other", "op", "k", adapter=names.HTTP_ADAPTER)) == HOME and homes.regions == {HOME, OTHER}

    from retrysafe import _store as store_module

    monkeypatch.setattr(store_module, "_SHARED", {})
    assert DynamoStore.from_env().home_regions == homes


@pytest.mark.parametrize(("default", "tenants", "message"), [
    ("", None, "needs a default home region"),
    (HOME, '["us-east-1"]', "must be a JSON object"),
    (HOME, "{not json", "must be a JSON object"),
    (HOME, '{"acme": 1}', "must be a JSON object"),
    (HOME, '{"acme": ""}', "empty home region"),
])
def test_a_bad_mapping_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, default: str, tenants: str | None,
                                                message: str) -> None:
    monkeypatch.setenv(names.HOME_REGION_ENV, default)
    if tenants is None:
        monkeypatch.delenv(names.TENANT_HOME_REGIONS_ENV, raising=False)
        with pytest.raises(ConfigurationError, match=message):
            HomeRegions(default)
        monkeypatch.setenv(names.TENANT_HOME_REGIONS_ENV, '{"acme": "us-east-1"}')
        with pytest.raises(ConfigurationError, match="RETRYSAFE_HOME_REGION is not"):
            HomeRegions.from_env()
        return
    monkeypatch.setenv(names.TENANT_HOME_REGIONS_ENV, tenants)
    with pytest.raises(ConfigurationError, match=message):
        HomeRegions.from_env()


def test_while_the_home_region_is_down_other_regions_answer_503_and_write_nothing(regions: dict[str, Any]) -> None:
    """The failover story's first half (docs/multi-region.md): the mapping stays, the home replica refuses
    every attempt (botocore's retries included), the function elsewhere answers 503 with Retry-After,
    runs no effect twice, and writes nothing to its own replica; once the home is back, the retry runs once."""
    import boto3
    from botocore.config import Config
    from retrysafe.testing import ALWAYS, Boundary, instant_retries

    home = boto3.client("dynamodb", region_name=HOME, config=Config(retries={"mode": "standard", "max_attempts": 4}))
    instant_retries(home)
    outage = Boundary(home)
    outage.fail("PutItem", 500, "InternalServerError", "simulated regional outage", times=ALWAYS)
    effects: list[str] = []
    store = DynamoStore(TABLE, client=regions[OTHER], home_regions=HomeRegions(HOME), home_clients={HOME: home})
    create = handler(store, Mode.CLAIM_FIRST, effects)
    far = CallCounter(regions[OTHER])
    response = create(http_event({"amount": 10}), DrillContext())
    assert response["statusCode"] == 503 and "Retry-After" in response["headers"]
    assert far.total == 0  # nothing sent to the function's own region
    assert outage.fired == [("PutItem", "error")] * 5  # the claim and botocore's 4 retries, all to the home region
    assert effects == [] and records(regions[OTHER]) == [] and records(regions[HOME]) == []
    outage.close()
    assert create(http_event({"amount": 10}), DrillContext())["statusCode"] == 201
    assert len(effects) == 1 and len(records(regions[HOME])) == 1 and records(regions[OTHER]) == []
