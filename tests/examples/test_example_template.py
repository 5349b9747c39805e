"""The example stack's template carries each construct's defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from retrysafe import metrics, names

from tests.helpers import Synthesized

pytestmark = pytest.mark.synth
STACK = "RetrysafeOrders"
RECORD_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                  "dynamodb:ConditionCheckItem"]
# 7 days of client/webhook/operator/settlement parts + the inventory queue: 4 d retention + 14 d DLQ + 5 x 60 s.
EXPECTED_HORIZON = 7 * 86_400 + 4 * 86_400 + 14 * 86_400 + 5 * 60


@pytest.fixture(scope="module")
def raw(example: Synthesized) -> dict[str, Any]:
    return example.template(STACK)


@pytest.fixture(scope="module")
def template(raw: dict[str, Any]) -> Template:
    return Template.from_json(raw)


def resources(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in raw["Resources"].items() if v["Type"] == kind}


def test_idempotency_table_defaults(template: Template) -> None:
    template.has_resource("AWS::DynamoDB::Table", {
        "DeletionPolicy": "Retain",
        "Properties": Match.object_like({
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": True},
            "StreamSpecification": {"StreamViewType": "NEW_IMAGE"},
            "GlobalSecondaryIndexes": [{"IndexName": names.OUTBOX_INDEX, "Projection": {"ProjectionType": "ALL"},
                                        "KeySchema": [{"AttributeName": names.UNPUBLISHED_ATTRIBUTE, "KeyType": "HASH"},
                                                      {"AttributeName": "at", "KeyType": "RANGE"}]}],
        }),
    })


def test_functions_run_latest_python_with_the_runtime_layer_and_horizon(raw: dict[str, Any]) -> None:
    functions = resources(raw, "AWS::Lambda::Function")
    idempotent = {k: v for k, v in functions.items() if names.TABLE_ENV in
                  v["Properties"].get("Environment", {}).get("Variables", {})}
    # create, pay, reserve, ship, notify, apply-push, publisher, sweeper, webhook receiver
    assert len(idempotent) == 9
    for function in functions.values():
        assert function["Properties"]["Runtime"] == "python3.14"
    for function in idempotent.values():
        props = function["Properties"]
        assert props["Environment"]["Variables"][names.HORIZON_ENV] == str(EXPECTED_HORIZON)
        assert len(props["Layers"]) == 1


def test_runtime_layer_asset_has_sources_and_powertools_without_bytecode(example: Synthesized,
                                                                         raw: dict[str, Any]) -> None:
    (layer,) = resources(raw, "AWS::Lambda::LayerVersion").values()
    asset = example.outdir / ("asset." + layer["Properties"]["Content"]["S3Key"].removesuffix(".zip"))
    python = asset / "python"
    assert (python / "retrysafe" / "_engine.py").is_file()
    assert (python / "aws_lambda_powertools" / "__init__.py").is_file()
    assert (python / "typing_extensions.py").is_file()
    assert not [p for p in asset.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]
    assert (python / "retrysafe" / "http").is_dir() and not (python / "retrysafe" / "testing").exists()


def test_grants_are_item_level_on_named_tables_only(raw: dict[str, Any]) -> None:
    for name, policy in resources(raw, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert "*" not in targets, name
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert "dynamodb:TransactWriteItems" not in actions  # not an IAM action: per-item actions authorize it
            assert not [a for a in actions if a.startswith("dynamodb:") and ("Scan" in a or a.endswith("*"))], name
    create = next(p for k, p in resources(raw, "AWS::IAM::Policy").items() if k.startswith("CreateOrderRole"))
    (dynamo,) = [s for s in create["Properties"]["PolicyDocument"]["Statement"]
                 if str(s["Action"]).startswith("['dynamodb:")]
    assert sorted(dynamo["Action"]) == sorted(RECORD_ACTIONS)
    assert sorted(r["Fn::GetAtt"][0].rstrip("0123456789ABCDEF") for r in dynamo["Resource"]) == [
        "IdempotencyTable", "Orders"]


def test_rest_api_logs_validates_throttles_and_authorizes(template: Template, raw: dict[str, Any]) -> None:
    template.has_resource_properties("AWS::ApiGateway::Stage", {
        "AccessLogSetting": Match.object_like({"DestinationArn": Match.any_value()}),
        "MethodSettings": [Match.object_like({"LoggingLevel": "ERROR", "ThrottlingRateLimit": 100,
                                              "ThrottlingBurstLimit": 200})],
    })
    template.has_resource_properties("AWS::ApiGateway::RequestValidator",
                                     {"ValidateRequestBody": True, "ValidateRequestParameters": True})
    methods = {m["Properties"]["HttpMethod"] + " " + json.dumps(m["Properties"]["ResourceId"]): m["Properties"]
               for m in resources(raw, "AWS::ApiGateway::Method").values()}
    posts = [m for m in methods.values() if m["HttpMethod"] == "POST"]
    keyed = [m for m in posts if m.get("RequestParameters") == {"method.request.header.Idempotency-Key": True}]
    assert len(keyed) == 2 and all(m["AuthorizationType"] == "CUSTOM" for m in keyed)
    webhook = [m for m in posts if m not in keyed]
    assert len(webhook) == 1 and webhook[0]["AuthorizationType"] == "NONE"
    options = [m for m in methods.values() if m["HttpMethod"] == "OPTIONS"]
    allow = options[0]["Integration"]["IntegrationResponses"][0]["ResponseParameters"][
        "method.response.header.Access-Control-Allow-Headers"]
    assert names.IDEMPOTENCY_KEY_HEADER in allow


def test_queue_consumer_defaults(template: Template, raw: dict[str, Any]) -> None:
    template.has_resource_properties("AWS::SQS::Queue", {
        "VisibilityTimeout": 60,  # 6 x the 10 s function timeout
        "MessageRetentionPeriod": 4 * 86_400,
        "SqsManagedSseEnabled": True,
        "RedrivePolicy": {"deadLetterTargetArn": Match.any_value(), "maxReceiveCount": 5},
    })
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("InventoryQueue"), "Arn"]},
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "ScalingConfig": {"MaximumConcurrency": 5},
    })
    policies = resources(raw, "AWS::SQS::QueuePolicy").values()
    tls = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]
           if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}]
    assert len(tls) == len(resources(raw, "AWS::SQS::Queue"))


def test_outbox_publisher_mapping_and_sweeper(template: Template) -> None:
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("IdempotencyTable"), "StreamArn"]},
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": 5,
        "MaximumRecordAgeInSeconds": 86_400,
        "StartingPosition": "TRIM_HORIZON",
        "DestinationConfig": {"OnFailure": {"Destination": Match.any_value()}},
        "FilterCriteria": {"Filters": [{"Pattern": json.dumps(
            {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"kind": {"S": ["outbox"]}}}})}]},
    })
    template.has_resource_properties("AWS::Lambda::Function", {
        "Handler": names.OUTBOX_PUBLISHER_HANDLER,
        "Environment": {"Variables": Match.object_like({names.EVENT_BUS_ENV: Match.any_value(),
                                                        names.EVENT_SOURCE_ENV: "orders"})},
    })
    template.has_resource_properties("AWS::Lambda::Function", {
        "Handler": names.OUTBOX_SWEEPER_HANDLER,
        "Environment": {"Variables": Match.object_like({names.SWEEP_AFTER_ENV: "900"})},
    })
    template.has_resource_properties("AWS::Events::Rule", {"ScheduleExpression": "rate(5 minutes)"})
    template.has_resource_properties("AWS::Events::Rule", {
        "EventPattern": {"source": ["orders"], "detail-type": ["OrderPlaced"]}})


def test_shipping_rule_target_and_notices_stream_consumer(template: Template) -> None:
    # the EventBridge rule target: OrderPlaced to the shipping function, retried, then its dead-letter queue
    template.has_resource_properties("AWS::Events::Rule", {
        "EventPattern": {"source": ["orders"], "detail-type": ["OrderPlaced"]},
        "Targets": [Match.object_like({
            "Arn": {"Fn::GetAtt": [Match.string_like_regexp("ShipOrderFunction"), "Arn"]},
            "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [Match.string_like_regexp("ShipOrdersDeadLetterQueue"), "Arn"]}},
            "RetryPolicy": {"MaximumEventAgeInSeconds": 86_400, "MaximumRetryAttempts": 185}})]})
    template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "FunctionName": {"Ref": Match.string_like_regexp("ShipOrderFunction")}, "MaximumRetryAttempts": 2,
        "DestinationConfig": {"OnFailure": {"Destination": {
            "Fn::GetAtt": [Match.string_like_regexp("ShipOrdersDeadLetterQueue"), "Arn"]}}}})
    # the shipments table's stream, its INSERTs of shipment# items only, with partial batch failures
    template.has_resource_properties("AWS::DynamoDB::Table", {
        "TableName": Match.absent(), "StreamSpecification": {"StreamViewType": "NEW_IMAGE"},
        "SSESpecification": {"SSEEnabled": True}, "PointInTimeRecoverySpecification": Match.any_value()})
    template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "EventSourceArn": {"Fn::GetAtt": [Match.string_like_regexp("Shipments"), "StreamArn"]},
        "FunctionName": {"Ref": Match.string_like_regexp("NotifyShippedFunction")},
        "FunctionResponseTypes": ["ReportBatchItemFailures"], "BisectBatchOnFunctionError": True,
        "StartingPosition": "TRIM_HORIZON",
        "DestinationConfig": {"OnFailure": {"Destination": {
            "Fn::GetAtt": [Match.string_like_regexp("ShippingNoticesFailureQueue"), "Arn"]}}},
        "FilterCriteria": {"Filters": [{"Pattern": json.dumps(
            {"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "shipment#"}]}}}},
            separators=(",", ":"))}]}})


def test_webhook_receiver_secret_route_and_handoff(template: Template) -> None:
    template.has_resource_properties("AWS::Lambda::Function", {
        "Handler": names.WEBHOOK_HANDLER,
        "Environment": {"Variables": Match.object_like({
            names.WEBHOOK_SECRET_ARN_ENV: {"Ref": Match.string_like_regexp("GitHubSigningSecret")},
            names.WEBHOOK_PROVIDER_ENV: "github"})},
    })
    template.has_resource_properties("AWS::Events::Rule", {"EventPattern": {
        "source": ["orders"], "detail-type": [names.WEBHOOK_RECEIPT_EVENT], "detail": {"aggregate_type": ["webhook:github"]}}})


def test_alarms(template: Template) -> None:
    template.has_resource_properties("AWS::CloudWatch::Alarm",
                                     {"MetricName": metrics.FENCING_REJECTED, "Namespace": "retrysafe"})
    template.has_resource_properties("AWS::CloudWatch::Alarm", {"MetricName": "IteratorAge"})
    template.has_resource_properties("AWS::CloudWatch::Alarm",
                                     {"MetricName": "ApproximateNumberOfMessagesVisible", "Threshold": 1})


def test_handlers_asset_is_free_of_bytecode(example: Synthesized, raw: dict[str, Any]) -> None:
    keys = {f["Properties"]["Code"].get("S3Key") for f in resources(raw, "AWS::Lambda::Function").values()}
    folders = [example.outdir / ("asset." + k.removesuffix(".zip")) for k in keys if k]
    handler_assets = [f for f in folders if (f / "orders.py").is_file()]
    assert len(handler_assets) == 1
    assert not list(Path(handler_assets[0]).rglob("*.pyc"))


#: The example app's stateful resources by logical id. A logical id follows the construct path: a refactor that
#: moves or renames a construct would replace the resource (a new, empty table; the RETAINed one orphaned, and
#: every in-flight retry running again). Changing this list needs the migration in docs/constructs.md
#: ("Moving the stateful resources"), not an edit here.
STATEFUL_LOGICAL_IDS = {
    "RetrysafeOrders": {
        "AuthorizerTokenSecret1957847C": "AWS::SecretsManager::Secret",
        "GitHubBodiesEDDC9E42": "AWS::S3::Bucket",
        "GitHubSigningSecretA7058982": "AWS::SecretsManager::Secret",
        "GitHubWorkDeadLetterQueueA799257C": "AWS::SQS::Queue",
        "GitHubWorkQueue406BD06A": "AWS::SQS::Queue",
        "IdempotencyTable48612DF4": "AWS::DynamoDB::Table",
        "InventoryCFCBEC24": "AWS::DynamoDB::Table",
        "InventoryQueue9CB6A1E3": "AWS::SQS::Queue",
        "InventoryQueueDeadLetterQueue0100568D": "AWS::SQS::Queue",
        "OrdersA9B65338": "AWS::DynamoDB::Table",
        "OutboxFailureQueueF968CAFD": "AWS::SQS::Queue",
        "ShipOrdersDeadLetterQueue31CCEE31": "AWS::SQS::Queue",
        "Shipments6E8A22F1": "AWS::DynamoDB::Table",
        "ShippingNoticesFailureQueue1F5B62B7": "AWS::SQS::Queue",
    },
    "RetrysafeSaga": {
        "IdempotencyTable48612DF4": "AWS::DynamoDB::Table",
        "OrdersA9B65338": "AWS::DynamoDB::Table",
        "OutboxFailureQueueF968CAFD": "AWS::SQS::Queue",
        "ProviderLedger23F6E796": "AWS::DynamoDB::Table",
    },
}
STATEFUL_TYPES = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::SecretsManager::Secret")


@pytest.mark.parametrize("stack", sorted(STATEFUL_LOGICAL_IDS))
def test_the_stateful_resources_keep_their_logical_ids(example: Synthesized, stack: str) -> None:
    found = {k: v["Type"] for k, v in example.template(stack)["Resources"].items() if v["Type"] in STATEFUL_TYPES}
    assert found == STATEFUL_LOGICAL_IDS[stack]
