"""The constructs composed into a stack that already owns its table, queue and event bus."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from retrysafe import names

from tests.helpers import Synthesized

from .composition import STACK

pytestmark = pytest.mark.synth


@pytest.fixture(scope="module")
def raw(composed: Synthesized) -> dict[str, Any]:
    return composed.template(STACK)


@pytest.fixture(scope="module")
def template(raw: dict[str, Any]) -> Template:
    return Template.from_json(raw)


def test_existing_table_queue_and_bus_are_used_not_duplicated(template: Template) -> None:
    template.resource_count_is("AWS::DynamoDB::Table", 2)  # the own table + the pipe's (one relay per table)
    template.resource_count_is("AWS::Events::EventBus", 1)
    # the own queue + DLQ, the outbox failure queue, the pipe's failure queue, the webhook work queue + DLQ
    template.resource_count_is("AWS::SQS::Queue", 6)
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("^OwnQueue"), "Arn"]},
        "FunctionResponseTypes": ["ReportBatchItemFailures"]})


def test_horizon_counts_the_existing_queue_settings(raw: dict[str, Any]) -> None:
    # own queue: 2 d retention + 7 d DLQ + 8 receives x 180 s; the webhook queue: 4 d + 14 d + 5 x 60 s (larger)
    expected = 7 * 86_400 + 4 * 86_400 + 14 * 86_400 + 5 * 60
    consumer = next(v for k, v in raw["Resources"].items() if k.startswith("ConsumerFunction"))
    variables = consumer["Properties"]["Environment"]["Variables"]
    assert variables[names.HORIZON_ENV] == str(expected)
    assert variables[names.VISIBILITY_TIMEOUT_ENV] == "180"


def test_http_api_has_cors_for_the_key_header_access_logs_and_throttling(template: Template) -> None:
    template.has_resource_properties("AWS::ApiGatewayV2::Api", {"CorsConfiguration": Match.object_like({
        "AllowHeaders": ["Content-Type", "Authorization", names.IDEMPOTENCY_KEY_HEADER],
        "ExposeHeaders": [names.REPLAYED_HEADER, "Retry-After", "Location"]})})
    template.has_resource_properties("AWS::ApiGatewayV2::Stage", {
        "AccessLogSettings": Match.object_like({"DestinationArn": Match.any_value()}),
        "DefaultRouteSettings": {"ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200}})
    template.has_resource_properties("AWS::ApiGatewayV2::Route", {"AuthorizationType": "AWS_IAM"})


def test_rest_api_with_iam_authorization(template: Template) -> None:
    template.has_resource_properties("AWS::ApiGateway::Method", {
        "HttpMethod": "POST", "AuthorizationType": "AWS_IAM",
        "RequestParameters": {"method.request.header.Idempotency-Key": True}})


def test_pipe_variant_filters_bisects_and_dead_letters(template: Template, raw: dict[str, Any]) -> None:
    template.has_resource_properties("AWS::Pipes::Pipe", {
        "Source": {"Fn::GetAtt": [Match.string_like_regexp("^PipeIdempotencyTable"), "StreamArn"]},
        "Target": {"Ref": Match.string_like_regexp("^OwnTopic")},
        "SourceParameters": {
            "FilterCriteria": {"Filters": [{"Pattern": Match.string_like_regexp('"INSERT"')}]},
            "DynamoDBStreamParameters": Match.object_like({
                "OnPartialBatchItemFailure": "AUTOMATIC_BISECT", "MaximumRetryAttempts": 5,
                "MaximumRecordAgeInSeconds": 86_400,
                "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [Match.string_like_regexp("^PipeFailureQueue"), "Arn"]}}}),
        },
    })
    role_policy = next(v for k, v in raw["Resources"].items() if k.startswith("PipeRoleDefaultPolicy"))
    actions = sorted(a for s in role_policy["Properties"]["PolicyDocument"]["Statement"]
                     for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]]))
    # kms:Decrypt twice: the table's customer-managed key (its stream) and the topic's key (with GenerateDataKey)
    assert actions == ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
                       "dynamodb:ListStreams", "kms:Decrypt", "kms:Decrypt", "kms:GenerateDataKey",
                       "lambda:InvokeFunction", "sns:Publish", "sqs:GetQueueAttributes", "sqs:GetQueueUrl",
                       "sqs:SendMessage"]


def test_one_runtime_layer_shared_by_every_function_with_a_stable_hash(raw: dict[str, Any],
                                                                         example: Synthesized) -> None:
    layers = [v for v in raw["Resources"].values() if v["Type"] == "AWS::Lambda::LayerVersion"]
    example_layers = [v for v in example.template("RetrysafeOrders")["Resources"].values()
                      if v["Type"] == "AWS::Lambda::LayerVersion"]
    assert len(layers) == len(example_layers) == 1
    # Two independent syntheses (another process, another app) bundle the same bytes: same asset hash.
    assert layers[0]["Properties"]["Content"]["S3Key"] == example_layers[0]["Properties"]["Content"]["S3Key"]


def test_the_runtime_handlers_deployed_are_the_outbox_package_paths(raw: dict[str, Any]) -> None:
    """New deployments name ``retrysafe.outbox.*`` handlers (the old module paths are aliases), and each resolves."""
    import importlib

    handlers = {r["Properties"]["Handler"] for r in raw["Resources"].values()
                if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler", "").startswith("retrysafe.")}
    assert {names.OUTBOX_PUBLISHER_HANDLER, names.OUTBOX_SWEEPER_HANDLER,
            names.OUTBOX_PIPE_HANDLER} <= handlers
    assert not any(h.startswith("retrysafe.outbox_") for h in handlers)
    for handler in handlers:
        module, name = handler.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), name)), handler
