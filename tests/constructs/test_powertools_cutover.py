"""``IdempotentFunction(powertools_cutover=...)``: GetItem on the old table and nothing else, the window in the
environment, refusals at synthesis, and cdk-nag clean."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from retrysafe import names
from retrysafe_cdk import CutoverFromPowertools, IdempotencyTable, IdempotentFunction

from app import feature_flags

#: A window still open whenever the tests run (a past one is refused at synthesis).
UNTIL = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
OLD = "powertools-idempotency"
OLD_FUNCTION = "orders-api"


def _function(stack: cdk.Stack, old: dynamodb.ITable, until: datetime = UNTIL, *,
              function: lambda_.IFunction | str | None = OLD_FUNCTION, key_prefix: str | None = None,
              function_props: lambda_.FunctionOptions | None = None) -> IdempotentFunction:
    return IdempotentFunction(stack, "Orders", table=IdempotencyTable(stack, "Table"),
                              code=lambda_.Code.from_inline("x = 1"), handler="index.handler",
                              function_props=function_props,
                              powertools_cutover=CutoverFromPowertools(table=old, until=until, function=function,
                                                                       key_prefix=key_prefix))


def _variables(stack: cdk.Stack, fn: IdempotentFunction) -> dict[str, Any]:
    resources = Template.from_stack(stack).to_json()["Resources"]
    function = resources[stack.get_logical_id(fn.function.node.default_child)]  # type: ignore[arg-type]
    return dict(function["Properties"]["Environment"]["Variables"])


def _statements_on(stack: cdk.Stack, arn_fragment: str) -> list[dict[str, Any]]:
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    return [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"]
            if arn_fragment in json.dumps(s["Resource"])]


def test_the_old_table_is_read_with_get_item_only_and_the_window_is_in_the_environment() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    fn = _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD))
    variables = _variables(stack, fn)
    [statement] = _statements_on(stack, f":table/{OLD}")
    assert statement["Action"] == "dynamodb:GetItem"
    assert variables[names.POWERTOOLS_TABLE_ENV] == statement["Resource"]  # the table's ARN, as granted
    assert variables[names.POWERTOOLS_UNTIL_ENV] == str(int(UNTIL.timestamp()))
    assert variables[names.POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV] == OLD_FUNCTION


def test_a_table_of_another_account_is_looked_up_by_the_arn_it_is_granted_on() -> None:
    """The runtime would resolve a bare name in its own account: GetItem takes the table's ARN as TableName."""
    stack = cdk.Stack(cdk.App(), "Cutover", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    arn = f"arn:aws:dynamodb:eu-west-1:210987654321:table/{OLD}"
    fn = _function(stack, dynamodb.Table.from_table_arn(stack, "Old", arn))
    assert _variables(stack, fn)[names.POWERTOOLS_TABLE_ENV] == arn
    assert [s["Resource"] for s in _statements_on(stack, "210987654321")] == [arn]


def test_the_old_function_passes_its_name_and_a_key_prefix_is_passed_as_it_is() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    old_function = lambda_.Function.from_function_arn(
        stack, "OldFunction", "arn:aws:lambda:us-east-1:123456789012:function:orders-api-Handler-9Z8Y")
    fn = _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD), function=old_function)
    assert _variables(stack, fn)[names.POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV] == "orders-api-Handler-9Z8Y"
    other = cdk.Stack(cdk.App(), "Prefixed")
    prefixed = _variables(other, _function(other, dynamodb.Table.from_table_name(other, "Old", OLD), function=None,
                                           key_prefix="charges"))
    assert prefixed[names.POWERTOOLS_KEY_PREFIX_ENV] == "charges"
    assert names.POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV not in prefixed


def test_a_generated_function_name_without_the_old_one_is_refused_with_the_fix() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    with pytest.raises(ValueError, match=r"AWS_LAMBDA_FUNCTION_NAME.*generated.*Fix: .*function=.*key_prefix="):
        _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD), function=None)


def test_a_function_that_keeps_its_name_needs_no_old_one() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    fn = _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD), function=None,
                   function_props=lambda_.FunctionOptions(function_name=OLD_FUNCTION))
    assert names.POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV not in _variables(stack, fn)


def test_a_window_already_over_is_refused_with_the_fix() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    with pytest.raises(ValueError, match="is already past.*remove powertools_cutover.*Else"):
        _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD), datetime(2020, 1, 8, tzinfo=UTC))


def test_a_customer_managed_key_of_the_old_table_gets_decrypt_only() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    key = kms.Key(stack, "OldKey", enable_key_rotation=True)
    old = dynamodb.Table(stack, "Old", partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
                         encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED, encryption_key=key)
    _function(stack, old)
    key_id = stack.get_logical_id(key.node.default_child)  # type: ignore[arg-type]
    assert [s["Action"] for s in _statements_on(stack, key_id)] == ["kms:Decrypt"]
    table_id = stack.get_logical_id(old.node.default_child)  # type: ignore[arg-type]
    assert [s["Action"] for s in _statements_on(stack, table_id)] == ["dynamodb:GetItem"]


def test_a_window_without_a_time_zone_is_refused_with_the_fix() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover")
    with pytest.raises(ValueError, match="has no time zone.*tzinfo=timezone.utc"):
        _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD), datetime(2027, 1, 8))


def test_an_old_table_of_another_region_is_refused() -> None:
    stack = cdk.Stack(cdk.App(), "Cutover", env=cdk.Environment(region="eu-west-1"))
    old = dynamodb.Table.from_table_arn(stack, "Old", f"arn:aws:dynamodb:us-east-1:123456789012:table/{OLD}")
    with pytest.raises(ValueError, match="the Powertools idempotency table"):
        _function(stack, old)


def test_cdk_nag_has_no_finding_on_the_cutover(tmp_path: Path) -> None:
    app = cdk.App(outdir=str(tmp_path), context=feature_flags())
    stack = cdk.Stack(app, "Cutover")
    _function(stack, dynamodb.Table.from_table_name(stack, "Old", OLD))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    # cdk-nag lists a plugin here only with findings (an unguarded sqs.Queue shows AwsSolutions-SQS3)
    assert [v["ruleName"] for p in report["pluginReports"] for v in p["violations"]] == []
