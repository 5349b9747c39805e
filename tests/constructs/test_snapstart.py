"""``snap_start=True``: SnapStart on published versions, the alias ``live``, and every integration invoking the alias.

cdk-nag and cfn-lint run over the SnapStart app in ``test_checks.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template
from retrysafe_cdk import IdempotencyTable, IdempotentFunction
from retrysafe_sandbox.assembly import function_name, load_stacks

from tests.helpers import Synthesized

from .builders import inline_function, new_stack
from .snapstart_app import STACK

pytestmark = pytest.mark.synth
#: The functions of the SnapStart app (logical id prefixes), all with snap_start=True.
SNAPPED = ("OrdersFunction", "WorkerFunction", "ConsumerFunction", "OutboxPublisherFunction", "OutboxSweeperFunction",
           "HooksReceiverFunction", "ConfirmFunction")


@pytest.fixture(scope="module")
def raw(snapstarted: Synthesized) -> dict[str, Any]:
    return snapstarted.template(STACK)


def _of_type(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in raw["Resources"].items() if v["Type"] == kind}


def _aliases(raw: dict[str, Any]) -> dict[str, str]:
    """Function logical id -> its alias's logical id."""
    return {v["Properties"]["FunctionName"]["Ref"]: k for k, v in _of_type(raw, "AWS::Lambda::Alias").items()}


def _refs(value: Any) -> set[str]:
    """Every logical id that ``value`` references (``Ref`` or ``Fn::GetAtt``)."""
    text = json.dumps(value)
    found = set()
    for marker in ('"Ref": "', '"Fn::GetAtt": ["'):
        for part in text.split(marker)[1:]:
            found.add(part.split('"', 1)[0])
    return found


def test_every_function_has_snapstart_a_version_and_the_live_alias(raw: dict[str, Any]) -> None:
    functions = _of_type(raw, "AWS::Lambda::Function")
    snapped = {k for k in functions if k.startswith(SNAPPED)}
    assert len(snapped) == len(SNAPPED)
    versions = _of_type(raw, "AWS::Lambda::Version")
    aliases = _aliases(raw)
    for function_id in snapped:
        assert functions[function_id]["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
        (version_id,) = [k for k, v in versions.items() if v["Properties"]["FunctionName"] == {"Ref": function_id}]
        assert versions[version_id]["DeletionPolicy"] == "Delete"  # a superseded version stops its cache charge
        alias = raw["Resources"][aliases[function_id]]["Properties"]
        assert alias["Name"] == "live" and alias["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}


def test_every_integration_invokes_the_alias_never_the_function(raw: dict[str, Any]) -> None:
    """API Gateway (REST and HTTP), SQS and stream mappings, the saga's tasks and its invoke grant, the sweeper's
    schedule and every invoke permission name the alias; nothing invokes a SnapStart function's $LATEST."""
    aliases = _aliases(raw)
    snapped = {k for k in _of_type(raw, "AWS::Lambda::Function") if k.startswith(SNAPPED)}
    invokers = {
        "AWS::ApiGateway::Method": lambda p: p["Integration"]["Uri"],
        "AWS::ApiGatewayV2::Integration": lambda p: p["IntegrationUri"],
        "AWS::Lambda::EventSourceMapping": lambda p: p["FunctionName"],
        "AWS::Lambda::Permission": lambda p: p["FunctionName"],
        "AWS::Events::Rule": lambda p: [t["Arn"] for t in p.get("Targets", [])],
        "AWS::StepFunctions::StateMachine": lambda p: p["DefinitionString"],
    }
    seen: dict[str, set[str]] = {}
    for kind, target in invokers.items():
        for resource in _of_type(raw, kind).values():
            named = _refs(target(resource["Properties"]))
            assert not named & snapped, (kind, named)
            seen.setdefault(kind, set()).update(named & set(aliases.values()))
    assert all(seen[kind] for kind in invokers), seen  # each kind of integration reaches some alias
    assert seen["AWS::Lambda::EventSourceMapping"] >= {aliases[k] for k in snapped
                                                        if k.startswith(("ConsumerFunction", "WorkerFunction",
                                                                         "OutboxPublisherFunction"))}
    policies = [s for p in _of_type(raw, "AWS::IAM::Policy").values() for s in p["Properties"]["PolicyDocument"]
                ["Statement"] if "lambda:InvokeFunction" in json.dumps(s["Action"])]
    assert policies and all(not _refs(s["Resource"]) & snapped for s in policies)


def test_the_alias_mapping_names_function_and_qualifier(raw: dict[str, Any]) -> None:
    """CDK's mapping on an alias is ``<function name>:live`` (built from the alias ARN)."""
    template = Template.from_json(raw)
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "FunctionName": {"Fn::Join": ["", [{"Fn::Select": [6, {"Fn::Split": [":", {"Ref": Match.string_like_regexp(
            "^ConsumerAlias")}]}]}, ":live"]]}})


def test_the_ifunction_members_go_through_the_alias() -> None:
    stack = new_stack("Members")
    fn = IdempotentFunction(stack, "Fn", table=IdempotencyTable(stack, "Table"), code=lambda_.Code.from_inline("x"),
                            handler="index.handler", snap_start=True)
    assert fn.alias is not None and fn.invoke_target is fn.alias
    caller = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    fn.grant_invoke(caller)
    events.Rule(stack, "Every5", schedule=events.Schedule.rate(cdk.Duration.minutes(5)),
                targets=[targets.LambdaFunction(fn)])
    assert fn.function_arn == fn.alias.function_arn and fn.grant_principal is fn.role
    template = Template.from_stack(stack)
    alias_id = stack.get_logical_id(fn.alias.node.default_child)  # type: ignore[arg-type]
    template.has_resource_properties("AWS::Events::Rule", {"Targets": [{"Arn": {"Ref": alias_id}, "Id": Match.any_value()}]})
    template.has_resource_properties("AWS::IAM::Policy", {"PolicyDocument": {"Statement": [Match.object_like({
        "Action": "lambda:InvokeFunction", "Resource": {"Ref": alias_id}})]}})


def test_without_snap_start_nothing_is_published() -> None:
    stack = new_stack("Plain")
    fn = inline_function(stack, IdempotencyTable(stack, "Table"))
    assert fn.alias is None and fn.invoke_target is fn.function
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Lambda::Version", 0)
    template.resource_count_is("AWS::Lambda::Alias", 0)
    assert "SnapStart" not in json.dumps(template.to_json())


def _version_id(layer_source: Path, flags: dict[str, object] | None = None) -> str:
    stack = cdk.Stack(cdk.App(context=flags or {}), "Versions")
    layer = lambda_.LayerVersion(stack, "Extra", code=lambda_.Code.from_asset(str(layer_source)))
    IdempotentFunction(stack, "Fn", table=IdempotencyTable(stack, "Table"), code=lambda_.Code.from_inline("x"),
                       handler="index.handler", function_props=lambda_.FunctionOptions(layers=[layer]), snap_start=True)
    (version_id,) = Template.from_stack(stack).find_resources("AWS::Lambda::Version")
    return version_id


def test_a_new_layer_publishes_a_new_version_even_without_cdks_layer_flag(tmp_path: Path) -> None:
    """A layer of the stack keeps its logical id when its contents change. Without CDK's
    ``@aws-cdk/aws-lambda:recognizeLayerVersion`` flag the version would stay, and the alias with it, on the old
    layer (an upgraded retrysafe runtime never reaching the alias): the construct mixes the layers' contents
    into the version's identity."""
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, text in ((old, "v1"), (new, "v2")):
        (folder / "python").mkdir(parents=True)
        (folder / "python" / "extra.py").write_text(f"VERSION = {text!r}\n")
    first = _version_id(old)
    assert _version_id(old) == first
    assert _version_id(new) != first
    flagged = {"@aws-cdk/aws-lambda:recognizeLayerVersion": True}
    assert _version_id(new, flagged) != _version_id(old, flagged)


_MOUNTED = lambda_.FileSystem(
    arn="arn:aws:elasticfilesystem:eu-west-1:123456789012:access-point/fsap-0123456789abcdef0",
    local_mount_path="/mnt/data")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"runtime": lambda_.Runtime.PYTHON_3_11}, "runtime python3.11 has no SnapStart.*PYTHON_3_14"),
    ({"runtime": lambda_.Runtime.PROVIDED_AL2023}, "runtime provided.al2023 has no SnapStart"),
    ({"function_props": lambda_.FunctionOptions(filesystem=_MOUNTED)}, "mounts EFS"),
    ({"function_props": lambda_.FunctionOptions(ephemeral_storage_size=cdk.Size.mebibytes(1024))},
     "1024 MiB; .* at most 512 MiB"),
    ({"function_props": lambda_.FunctionOptions(current_version_options=lambda_.VersionOptions(
        provisioned_concurrent_executions=2))}, "provisioned concurrency"),
    ({"function_props": lambda_.FunctionOptions(snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS)},
     "function_props cannot set snap_start; pass snap_start=True"),
])
def test_snap_start_where_lambda_cannot_snapshot_is_refused_at_synthesis(kwargs: dict[str, Any],
                                                                          message: str) -> None:
    stack = new_stack("Refused")
    table = IdempotencyTable(stack, "Table")
    with pytest.raises(ValueError, match=f"Refused/Fn: .*{message}"):
        IdempotentFunction(stack, "Fn", table=table, code=lambda_.Code.from_inline("x"), handler="index.handler",
                           snap_start=True, **kwargs)


def test_the_limits_themselves_are_accepted() -> None:
    """512 MiB of ephemeral storage, Python 3.12, and an own version description are fine."""
    stack = new_stack("Limits")
    IdempotentFunction(stack, "Fn", table=IdempotencyTable(stack, "Table"), code=lambda_.Code.from_inline("x"),
                       handler="index.handler", runtime=lambda_.Runtime.PYTHON_3_12, snap_start=True,
                       function_props=lambda_.FunctionOptions(
                           ephemeral_storage_size=cdk.Size.mebibytes(512),
                           current_version_options=lambda_.VersionOptions(description="mine")))
    Template.from_stack(stack).has_resource_properties("AWS::Lambda::Version", {"Description": "mine"})


def test_the_sandbox_runs_the_functions_latest(snapstarted: Synthesized) -> None:
    """The sandbox ignores SnapStart: versions and aliases fold into their function, and every reference to an
    alias becomes the function's ARN (mappings keep the ``:live`` qualifier, which names the same function)."""
    (stack,) = [s for s in load_stacks(snapstarted.outdir) if s.name == STACK]
    assert not list(stack.of_type("AWS::Lambda::Version", "AWS::Lambda::Alias"))
    functions = {r.logical_id for r in stack.of_type("AWS::Lambda::Function")}
    for resource in stack.resources.values():
        assert not _refs(resource.properties) - set(stack.resources) - {"AWS::Partition", "AWS::Region",
                                                                        "AWS::AccountId", "AWS::URLSuffix"}
    mapped = [r.properties["FunctionName"] for r in stack.of_type("AWS::Lambda::EventSourceMapping")]
    assert mapped and all(_refs(m) <= functions for m in mapped)
    assert function_name("arn:aws:lambda:eu-west-1:123456789012:function:orders:live") == "orders"
    assert function_name("orders:live") == function_name("orders") == "orders"
