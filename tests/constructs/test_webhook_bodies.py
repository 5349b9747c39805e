"""The example's WebhookReceiver and Outbox: the claim-check bucket, its grants, the producers' target settings,
and the parked-events alarm."""

from __future__ import annotations

import math
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from retrysafe import metrics, names

from tests.helpers import Synthesized

pytestmark = pytest.mark.synth
STACK = "RetrysafeOrders"


@pytest.fixture(scope="module")
def raw(example: Synthesized) -> dict[str, Any]:
    return example.template(STACK)


def of_type(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in raw["Resources"].items() if v["Type"] == kind}


def receiver(raw: dict[str, Any]) -> dict[str, Any]:
    (function,) = [f for f in of_type(raw, "AWS::Lambda::Function").values()
                   if f["Properties"]["Handler"] == names.WEBHOOK_HANDLER]
    return function


def statements(raw: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return [s for p in of_type(raw, "AWS::IAM::Policy").values() if any(r.get("Ref") == role for r in
            p["Properties"].get("Roles", [])) for s in p["Properties"]["PolicyDocument"]["Statement"]]


def test_the_bodies_bucket_is_private_encrypted_tls_only_and_expires_with_the_horizon(raw: dict[str, Any]) -> None:
    ((name, bucket),) = of_type(raw, "AWS::S3::Bucket").items()
    props = bucket["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"}
    assert props["PublicAccessBlockConfiguration"] == {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                                       "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    env = receiver(raw)["Properties"]["Environment"]["Variables"]
    horizon = int(env[names.HORIZON_ENV])
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["ExpirationInDays"] == math.ceil(horizon / 86_400) + 1
    (policy,) = [p for p in of_type(raw, "AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"] == {"Ref": name}]
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert env[names.CLAIM_CHECK_BUCKET_ENV] == {"Ref": name}
    assert env[names.OUTBOX_TARGET_ENV] == "eventbridge"


def test_the_receiver_may_put_bodies_and_the_worker_may_read_them(raw: dict[str, Any]) -> None:
    ((name, _),) = of_type(raw, "AWS::S3::Bucket").items()
    role = receiver(raw)["Properties"]["Role"]["Fn::GetAtt"][0]

    def actions(of: str) -> set[str]:
        found: set[str] = set()
        for statement in statements(raw, of):
            if name in str(statement["Resource"]):
                found |= set([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
        return found

    assert actions(role) == {"s3:PutObject"}  # exact actions, no wildcards
    readers = [r for r in of_type(raw, "AWS::IAM::Role") if r != role and actions(r)]
    assert len(readers) == 1 and actions(readers[0]) == {"s3:GetObject"}
    for statement in statements(raw, role) + statements(raw, readers[0]):
        if name in str(statement["Resource"]):
            assert statement["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [name, "Arn"]}, "/webhooks/*"]]}
    # The worker's @idempotent_sqs fetches claim-checked bodies from its configured bucket only: it is given it.
    (worker,) = [f for f in of_type(raw, "AWS::Lambda::Function").values()
                 if f["Properties"]["Role"] == {"Fn::GetAtt": [readers[0], "Arn"]}]
    assert worker["Properties"]["Environment"]["Variables"][names.CLAIM_CHECK_BUCKET_ENV] == {"Ref": name}


def test_parked_outbox_events_raise_an_alarm(raw: dict[str, Any]) -> None:
    Template.from_json(raw).has_resource_properties("AWS::CloudWatch::Alarm", {
        "MetricName": metrics.OUTBOX_EVENT_PARKED, "Namespace": "retrysafe", "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold", "AlarmDescription": Match.string_like_regexp("parked"),
    })
