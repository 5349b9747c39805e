"""The CDK snippets of the documentation site synthesize, and build what the constructs page says."""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import names

from tests.helpers import ROOT

pytestmark = pytest.mark.synth

SNIPPETS = ROOT / "examples" / "snippets"


@pytest.fixture(scope="module")
def stacks() -> dict[str, Any]:
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from examples.snippets.cdk_app import ExistingStack
    from examples.snippets.cdk_pinned import MovedStack
    from examples.snippets.cdk_saga import SagaStack
    from examples.snippets.cdk_snapstart import SnapStartStack
    from examples.snippets.cdk_sources import SourcesStack

    app = cdk.App()
    existing, saga = ExistingStack(app, "DocsExisting"), SagaStack(app, "DocsSaga")
    snapped = SnapStartStack(app, "DocsSnapStart")
    sources = SourcesStack(app, "DocsSources")
    moved = MovedStack(app, "DocsMoved")
    return {"sources": Template.from_stack(sources), "sources_stack": sources, "moved": Template.from_stack(moved),
            "existing": Template.from_stack(existing), "saga": Template.from_stack(saga), "saga_stack": saga,
            "snapstart": Template.from_stack(snapped), "snapstart_stack": snapped}


def test_existing_app_gets_the_table_api_outbox_and_consumer(stacks: dict[str, Any]) -> None:
    from aws_cdk.assertions import Match

    template = stacks["existing"]
    template.has_resource_properties("AWS::DynamoDB::Table", {
        "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": True},
        "StreamSpecification": {"StreamViewType": "NEW_IMAGE"}})
    template.has_resource_properties("AWS::Lambda::Function", {
        "Handler": "http_atomic.handler",
        "Environment": {"Variables": Match.object_like({names.TABLE_ENV: Match.any_value()})}})
    template.has_resource_properties("AWS::ApiGateway::Method", {"HttpMethod": "POST",
                                                                 "AuthorizationType": "AWS_IAM"})
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("^BillingQueue"), "Arn"]},
        "FunctionResponseTypes": ["ReportBatchItemFailures"]})


def test_moved_constructs_keep_the_example_apps_logical_ids(stacks: dict[str, Any]) -> None:
    from tests.examples.test_example_template import STATEFUL_LOGICAL_IDS

    moved = stacks["moved"].to_json()["Resources"]
    example = STATEFUL_LOGICAL_IDS["RetrysafeOrders"]
    for logical_id in ("IdempotencyTable48612DF4", "InventoryQueue9CB6A1E3", "InventoryQueueDeadLetterQueue0100568D"):
        assert moved[logical_id]["Type"] == example[logical_id]
    (function,) = [r for r in moved.values() if r["Type"] == "AWS::Lambda::Function"]
    assert function["Properties"]["Environment"]["Variables"][names.SUBSCRIBER_ENV] == "InventoryQueue"


def test_saga_has_its_compensations_and_the_documented_task_payload(stacks: dict[str, Any]) -> None:
    from retrysafe_cdk import task_payload

    machines = stacks["saga"].find_resources("AWS::StepFunctions::StateMachine")
    (machine,) = machines.values()
    definition = json.dumps(machine["Properties"]["DefinitionString"])
    for state in ("ReserveInventory", "ChargePayment", "ConfirmOrder", "ReleaseInventory", "RefundPayment"):
        assert f'\\"{state}\\"' in definition
    documented = json.loads((SNIPPETS / "task_payload.json").read_text())
    assert task_payload().value == documented
    assert stacks["saga_stack"].state.to_state_json()["Parameters"] == documented          # payload_response_only


def test_snapstart_route_invokes_the_live_alias(stacks: dict[str, Any]) -> None:
    from aws_cdk.assertions import Match

    template, stack = stacks["snapstart"], stacks["snapstart_stack"]
    alias_id = stack.get_logical_id(stack.function.alias.node.default_child)
    template.has_resource_properties("AWS::Lambda::Function", {"SnapStart": {"ApplyOn": "PublishedVersions"}})
    template.has_resource_properties("AWS::Lambda::Alias", {"Name": "live"})
    template.has_resource_properties("AWS::ApiGateway::Method", {"Integration": Match.object_like({
        "Uri": {"Fn::Join": ["", Match.array_with([{"Ref": alias_id}])]}})})


def test_event_sources_get_their_dlqs_mappings_and_horizon(stacks: dict[str, Any]) -> None:
    from aws_cdk.assertions import Match

    template, stack = stacks["sources"], stacks["sources_stack"]
    template.has_resource_properties("AWS::Events::Rule", {"Targets": [Match.object_like({
        "DeadLetterConfig": Match.any_value(),
        "RetryPolicy": {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185}})]})
    template.resource_count_is("AWS::Lambda::EventInvokeConfig", 2)               # the rule's and the topic's
    for source in (stack.clicks.stream_arn, stack.changes.stream_arn):
        template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
            "EventSourceArn": stack.resolve(source), "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BisectBatchOnFunctionError": True, "ParallelizationFactor": 1})
    template.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "lambda",
                                                                "RedrivePolicy": Match.any_value()})
    # what the constructs page says: the subscription's window is the longest, about 37 days on top of 7
    assert stack.receipts.redelivery_seconds == 2_000_202 + 6 * 3600 + 14 * 86_400
    assert stack.table.horizon.queue_redelivery == stack.receipts.redelivery_seconds


def test_multi_region_stacks_route_both_regions_to_the_home_and_relay_once() -> None:
    """multi-region.md: both stacks' functions get the same mapping and may write the home replicas;
    the relay is in the home stack only (a relay in the other stack is refused: test_regions.py)."""
    import aws_cdk as cdk
    from aws_cdk.assertions import Template
    from retrysafe import HomeRegions

    from examples.snippets.cdk_multi_region import HOMES, FarStack, HomeStack

    app = cdk.App()
    home, far = HomeStack(app, "DocsHome"), FarStack(app, "DocsFar")
    assert home.node.validate() == [] and far.node.validate() == []
    templates = {"home": Template.from_stack(home).to_json(), "far": Template.from_stack(far).to_json()}
    for template in templates.values():
        functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
                     and r["Properties"]["Handler"] == "http_atomic.handler"]
        (variables,) = [f["Properties"]["Environment"]["Variables"] for f in functions]
        assert variables[names.HOME_REGION_ENV] == "eu-west-1"
        assert HomeRegions("eu-west-1", tenants=json.loads(variables[names.TENANT_HOME_REGIONS_ENV])) == HOMES
    far_policies = json.dumps([r for r in templates["far"]["Resources"].values() if r["Type"] == "AWS::IAM::Policy"])
    assert ":dynamodb:eu-west-1:" in far_policies and ":dynamodb:us-east-1:" in far_policies
    (global_table,) = [r for r in templates["home"]["Resources"].values() if r["Type"] == "AWS::DynamoDB::GlobalTable"]
    assert sorted(r["Region"] for r in global_table["Properties"]["Replicas"]) == ["eu-west-1", "us-east-1"]
    assert not [r for r in templates["home"]["Resources"].values() if r["Type"] == "Custom::DynamoDBReplica"]
    assert not [r for r in templates["far"]["Resources"].values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    assert [r for r in templates["home"]["Resources"].values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
