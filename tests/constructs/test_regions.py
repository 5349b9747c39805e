"""A table with replicas: refused without a stated strategy, wired with home regions (issue 26 part 2).

In-process construct tests (``node.validate()`` and ``Template``; no ``cdk synth``): each refusal
names the reason and the fix, and each wiring is read from the synthesized template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from retrysafe import HomeRegions, names
from retrysafe_cdk import IdempotencyTable, IdempotentFunction, Outbox, OutboxPipe, OutboxTarget

from app import feature_flags

from .builders import inline_function

HOME, OTHER = "eu-west-1", "us-east-1"


def regional_stack(region: str = HOME, name: str = "Regions") -> cdk.Stack:
    return cdk.Stack(cdk.App(), name, env=cdk.Environment(account="123456789012", region=region))


def global_table(stack: cdk.Stack, mode: dynamodb.MultiRegionConsistency | None = None,
                 replicas: tuple[str, ...] = (OTHER,)) -> dynamodb.TableV2:
    return dynamodb.TableV2(
        stack, "Global", partition_key=dynamodb.Attribute(name=names.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
        time_to_live_attribute=names.TTL_ATTRIBUTE, replicas=[dynamodb.ReplicaTableProps(region=r) for r in replicas],
        multi_region_consistency=mode, dynamo_stream=dynamodb.StreamViewType.NEW_IMAGE,
        global_secondary_indexes=[dynamodb.GlobalSecondaryIndexPropsV2(
            index_name=names.OUTBOX_INDEX,
            partition_key=dynamodb.Attribute(name=names.UNPUBLISHED_ATTRIBUTE, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=names.COMMITTED_AT_ATTRIBUTE, type=dynamodb.AttributeType.STRING))])


def test_replicas_through_table_props_are_refused_for_a_table_v2_with_replicas() -> None:
    """Table(replication_regions=...) makes CDK's replica custom resource, which cdk-nag flags; TableV2 does not."""
    stack = regional_stack()
    with pytest.raises(ValueError, match=r"^Regions/Idempotency: table_props cannot set replication_regions: .*"
                                         r"cdk-nag flags.*Fix: create a dynamodb.TableV2 with replicas=\[dynamodb."
                                         r"ReplicaTableProps\(region=...\)\] \(partition key 'pk' \(S\), TTL on "
                                         r"'exp', the 'outbox-unpublished' index.*pass existing_table=it"):
        IdempotencyTable(stack, "Idempotency", table_props={"replication_regions": [OTHER]},
                         home_regions=HomeRegions(HOME))


def test_the_documented_global_table_has_no_cdk_nag_finding(tmp_path: Path) -> None:
    from examples.snippets.cdk_multi_region import FarStack, HomeStack

    app = cdk.App(outdir=str(tmp_path), context=feature_flags())
    HomeStack(app, "DocsHome")
    FarStack(app, "DocsFar")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert [v["ruleName"] for p in report["pluginReports"] for v in p["violations"]] == []


def test_an_existing_global_table_without_a_strategy_is_refused_with_the_fix() -> None:
    stack = regional_stack()
    table = IdempotencyTable(stack, "Idempotency", existing_table=global_table(stack))
    (error,) = table.node.validate()
    assert f"has replicas ({HOME}, {OTHER}) and no stated multi-region strategy" in error
    assert "last-writer-wins" in error and "both win the claim and both commit" in error
    assert "Fix: pass home_regions=HomeRegions(" in error
    with pytest.raises(RuntimeError, match="no stated multi-region strategy"):
        stack.node.root.synth()  # type: ignore[attr-defined]


def _two_regions() -> tuple[cdk.App, cdk.Stack, cdk.Stack]:
    app = cdk.App()
    home = cdk.Stack(app, "Home", env=cdk.Environment(account="123456789012", region=HOME))
    far = cdk.Stack(app, "Far", env=cdk.Environment(account="123456789012", region=OTHER))
    return app, home, far


def test_a_replica_of_a_table_v2_is_a_replicated_table() -> None:
    """TableV2.replica(region) in the far region's stack: the same refusal as the table with replicas."""
    _, home, far = _two_regions()
    replica = global_table(home).replica(OTHER)
    table = IdempotencyTable(far, "Idempotency", existing_table=replica)
    (error,) = table.node.validate()
    assert error.startswith(f"Far/Idempotency: the table {replica.node.path} has replicas ({OTHER}, {HOME}) and no "
                            "stated multi-region strategy")
    assert "Fix: pass home_regions=HomeRegions(" in error
    stated = IdempotencyTable(far, "Stated", existing_table=replica, home_regions=HomeRegions(HOME))
    assert stated.node.validate() == []
    elsewhere = IdempotencyTable(far, "Elsewhere", existing_table=replica,
                                 home_regions=HomeRegions(HOME, tenants={"acme": "ap-southeast-2"}))
    assert any("home_regions names ap-southeast-2, where the table" in e for e in elsewhere.node.validate())


def test_an_imported_replica_of_a_global_table_of_the_app_needs_its_strategy_too() -> None:
    """The far stack imports the replica by name; the home stack's table of that name has replicas."""
    _, home, far = _two_regions()
    owned = dynamodb.TableV2(home, "Global", table_name="idempotency", partition_key=dynamodb.Attribute(
        name=names.PARTITION_KEY, type=dynamodb.AttributeType.STRING), replicas=[dynamodb.ReplicaTableProps(region=OTHER)])
    IdempotencyTable(home, "Idempotency", existing_table=owned, home_regions=HomeRegions(HOME))
    imported = IdempotencyTable(far, "Idempotency",
                                existing_table=dynamodb.Table.from_table_name(far, "Replica", "idempotency"))
    (error,) = imported.node.validate()
    assert error.startswith("Far/Idempotency: the table Far/Replica is also the table of Home/Idempotency, a global "
                            "table (replicas or home_regions there), and has no stated multi-region strategy here.")
    assert "Fix: pass home_regions=HomeRegions(" in error
    # another table of the same name in another account is another table
    other = cdk.Stack(home.node.root, "Other", env=cdk.Environment(account="210987654321", region=OTHER))
    assert IdempotencyTable(other, "Idempotency", existing_table=dynamodb.Table.from_table_name(
        other, "Replica", "idempotency")).node.validate() == []


def test_one_global_table_gets_one_mapping_across_stacks() -> None:
    def build(far_homes: HomeRegions) -> cdk.App:
        app, home, far = _two_regions()
        for stack, homes in ((home, HomeRegions(HOME, tenants={"acme": OTHER})), (far, far_homes)):
            IdempotencyTable(stack, "Idempotency", existing_table=dynamodb.Table.from_table_name(
                stack, "Replica", "idempotency"), home_regions=homes)
        return app

    build(HomeRegions(HOME, tenants={"acme": OTHER})).synth()  # the same mapping (equal, not the same object)
    with pytest.raises(RuntimeError) as raised:
        build(HomeRegions(HOME)).synth()
    message = str(raised.value)
    assert "Home/Idempotency: the table Home/Replica is also the table of Far/Idempotency, whose home_regions " \
           "differ from these: a tenant would have one home" in message
    assert "Far/Idempotency: the table Far/Replica is also the table of Home/Idempotency" in message
    assert "Fix: one mapping per global table" in message and "acme" not in message


def test_a_business_table_needs_a_replica_in_each_home_region() -> None:
    stack = regional_stack()
    table = IdempotencyTable(stack, "Idempotency", existing_table=global_table(stack),
                             home_regions=HomeRegions(HOME, tenants={"acme": OTHER}))
    function = inline_function(stack, table)
    single = dynamodb.Table(stack, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING))
    function.grant_business_table(single)
    (error,) = function.node.validate()
    assert error.startswith(f"Regions/Fn10: the business table Regions/Orders has no replica in {OTHER} (it is in "
                            f"{HOME}), and the home_regions of Regions/Idempotency send the transactions")
    assert "ResourceNotFoundException" in error and "Fix: make it a global table with a replica in each home" in error
    with pytest.raises(RuntimeError, match="the business table Regions/Orders has no replica"):
        Template.from_stack(stack)
    replicated = regional_stack()
    table = IdempotencyTable(replicated, "Idempotency", existing_table=global_table(replicated),
                             home_regions=HomeRegions(HOME, tenants={"acme": OTHER}))
    business = dynamodb.TableV2(replicated, "Orders", partition_key=dynamodb.Attribute(
        name="id", type=dynamodb.AttributeType.STRING), replicas=[dynamodb.ReplicaTableProps(region=OTHER)])
    function = IdempotentFunction(replicated, "Fn", table=table, code=lambda_.Code.from_inline("x = 1"),
                                  handler="index.handler", business_tables=[business])
    assert function.node.validate() == []


def test_multi_region_strong_consistency_is_refused_whatever_the_strategy() -> None:
    stack = regional_stack()
    strong = dynamodb.TableV2(  # three replicas of one region set: aws-cdk-lib refuses MRSC otherwise
        stack, "Strong", partition_key=dynamodb.Attribute(name=names.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
        multi_region_consistency=dynamodb.MultiRegionConsistency.STRONG,
        replicas=[dynamodb.ReplicaTableProps(region="eu-west-2"), dynamodb.ReplicaTableProps(region="eu-west-3")])
    table = IdempotencyTable(stack, "Idempotency", existing_table=strong, home_regions=HomeRegions(HOME))
    error = next(e for e in table.node.validate() if "MRSC" in e)
    assert "multi-Region strong consistency (MRSC)" in error and "does not support transactions" in error
    assert "nor TTL" in error


def test_a_home_region_without_a_replica_is_refused() -> None:
    stack = regional_stack()
    table = IdempotencyTable(stack, "Idempotency", existing_table=global_table(stack),
                             home_regions=HomeRegions(HOME, tenants={"acme": "ap-southeast-2"}))
    (error,) = table.node.validate()
    assert "home_regions names ap-southeast-2, where the table" in error and "has no replica" in error


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
            for s in r["Properties"]["PolicyDocument"]["Statement"]]


def test_with_home_regions_functions_get_the_mapping_and_the_home_replicas(monkeypatch: pytest.MonkeyPatch) -> None:
    """A function in OTHER's stack, on the imported replica there, is routed to HOME and may write it there."""
    stack = regional_stack(OTHER, "Far")
    homes = HomeRegions(HOME, tenants={"acme": OTHER})
    replica = dynamodb.Table.from_table_name(stack, "Replica", "idempotency")
    table = IdempotencyTable(stack, "Idempotency", existing_table=replica, home_regions=homes)
    business = dynamodb.Table.from_table_name(stack, "Orders", "orders")
    function = inline_function(stack, table)
    function.grant_business_table(business)
    assert table.node.validate() == []
    template = Template.from_stack(stack).to_json()
    (fn,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    environment = fn["Properties"]["Environment"]["Variables"]
    assert environment[names.HOME_REGION_ENV] == HOME
    assert json.loads(environment[names.TENANT_HOME_REGIONS_ENV]) == {"acme": OTHER}
    for name in (names.HOME_REGION_ENV, names.TENANT_HOME_REGIONS_ENV):
        monkeypatch.setenv(name, environment[name])
    assert HomeRegions.from_env() == homes  # the deployed function's runtime routes as the app says
    resources = json.dumps([s["Resource"] for s in _statements(template)])
    for name in ("idempotency", "orders"):
        assert f"arn:\", {{\"Ref\": \"AWS::Partition\"}}, \":dynamodb:{HOME}:123456789012:table/{name}" in resources
        assert f":dynamodb:{OTHER}:123456789012:table/{name}" in resources


def test_a_single_region_function_gets_no_home_environment() -> None:
    stack = regional_stack()
    inline_function(stack, IdempotencyTable(stack, "Idempotency"))
    (fn,) = [r for r in Template.from_stack(stack).to_json()["Resources"].values()
             if r["Type"] == "AWS::Lambda::Function"]
    assert names.HOME_REGION_ENV not in fn["Properties"]["Environment"]["Variables"]


@pytest.mark.parametrize("relay", [Outbox, OutboxPipe])
def test_the_outbox_relay_runs_in_the_default_home_region_only(relay: type) -> None:
    far = regional_stack(OTHER, "Far")
    table = IdempotencyTable(far, "Idempotency", existing_table=dynamodb.Table.from_table_attributes(
        far, "Replica", table_name="idempotency", table_stream_arn="arn:aws:dynamodb:us-east-1:123456789012:"
        "table/idempotency/stream/2026-01-01T00:00:00.000"), home_regions=HomeRegions(HOME))
    with pytest.raises(ValueError, match=f"runs in one region only, the default home region {HOME}") as raised:
        relay(far, "Relay", table=table, target=OutboxTarget.event_bus(events.EventBus(far, "Bus")))
    assert "would publish each event once per region" in str(raised.value)
    home = regional_stack(HOME, "Home")
    owned = IdempotencyTable(home, "Idempotency", existing_table=global_table(home), home_regions=HomeRegions(HOME))
    relay(home, "Relay", table=owned, target=OutboxTarget.event_bus(events.EventBus(home, "Bus")))
    assert owned.node.validate() == []
