"""The sandbox's IAM evaluation: policy logic, the actions a call needs, and denials on the wire."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from retrysafe_sandbox.assembly import Resource, Stack
from retrysafe_sandbox.calls import checks, s3_checks
from retrysafe_sandbox.embedded import EmbeddedAws
from retrysafe_sandbox.guard import Guard, Role
from retrysafe_sandbox.iam import Policies, Principal, UnsupportedPolicy, evaluate
from retrysafe_sandbox.ledger import Ledger
from retrysafe_sandbox.provision import Provisioner

from tests.helpers import create_business_table

TABLE = "arn:aws:dynamodb:eu-west-1:123456789012:table/Orders"
QUEUE = "arn:aws:sqs:eu-west-1:123456789012:Work"
RULE = "arn:aws:events:eu-west-1:123456789012:rule/Bus/ToWork"


def _allow(actions: Any, resources: Any, **extra: Any) -> dict[str, Any]:
    return {"Statement": [{"Effect": "Allow", "Action": actions, "Resource": resources, **extra}]}


def test_allow_needs_a_matching_action_and_resource() -> None:
    policies = Policies([_allow(["dynamodb:GetItem", "dynamodb:PutItem"], TABLE)])
    assert evaluate(policies, "dynamodb:PutItem", TABLE).allowed
    assert evaluate(policies, "DynamoDB:putitem", TABLE).allowed  # actions are case-insensitive
    denied = evaluate(policies, "dynamodb:UpdateItem", TABLE)
    assert not denied.allowed and not denied.explicit_deny and "no identity-based policy" in denied.reason
    assert not evaluate(policies, "dynamodb:PutItem", TABLE + "2").allowed
    assert not evaluate(policies, "dynamodb:PutItem", TABLE + "/index/byCustomer").allowed


def test_wildcards_not_action_not_resource_and_explicit_deny() -> None:
    policies = Policies([_allow("dynamodb:*", "arn:aws:dynamodb:*:123456789012:table/Ord?rs*"),
                         {"Statement": [{"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": "*"}]}])
    assert evaluate(policies, "dynamodb:Query", TABLE + "/index/byCustomer").allowed
    deny = evaluate(policies, "dynamodb:DeleteItem", TABLE)
    assert not deny.allowed and deny.explicit_deny
    not_action = Policies([{"Statement": [{"Effect": "Allow", "NotAction": "sqs:*", "NotResource": QUEUE}]}])
    assert evaluate(not_action, "dynamodb:GetItem", TABLE).allowed
    assert not evaluate(not_action, "sqs:SendMessage", TABLE).allowed
    assert not evaluate(not_action, "dynamodb:GetItem", QUEUE).allowed


def test_resource_policy_for_a_service_principal_with_source_arn_and_tls() -> None:
    queue_policy = {"Statement": [
        {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "sqs:*", "Resource": QUEUE,
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
        {"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage",
         "Resource": QUEUE, "Condition": {"ArnEquals": {"aws:SourceArn": RULE}}}]}
    events = Principal(service="events.amazonaws.com")
    tls = {"aws:SecureTransport": "true"}
    assert evaluate(Policies(), "sqs:SendMessage", QUEUE, {**tls, "aws:SourceArn": RULE}, [queue_policy], events).allowed
    assert not evaluate(Policies(), "sqs:SendMessage", QUEUE, {**tls, "aws:SourceArn": RULE + "x"}, [queue_policy],
                        events).allowed
    role = Principal(arn="arn:aws:iam::123456789012:role/r", account="123456789012")
    plain = evaluate(Policies([_allow("sqs:*", QUEUE)]), "sqs:SendMessage", QUEUE,
                     {"aws:SecureTransport": "false"}, [queue_policy], role)
    assert not plain.allowed and plain.explicit_deny


def test_condition_operators_and_missing_keys() -> None:
    def allowed(condition: dict[str, Any], context: dict[str, Any]) -> bool:
        return evaluate(Policies([_allow("s3:GetObject", "*", Condition=condition)]), "s3:GetObject", "x",
                        context).allowed

    assert allowed({"StringLike": {"k": "ab*"}}, {"k": "abc"}) and not allowed({"StringLike": {"k": "ab*"}}, {})
    assert allowed({"StringNotEquals": {"k": "a"}}, {}) and allowed({"StringEqualsIfExists": {"k": "a"}}, {})
    assert allowed({"Null": {"k": "true"}}, {}) and not allowed({"Null": {"k": "true"}}, {"k": "v"})
    assert allowed({"NumericLessThan": {"n": "10"}}, {"n": "9"}) and not allowed({"NumericLessThan": {"n": 10}},
                                                                                 {"n": "10"})
    assert allowed({"ForAnyValue:StringEquals": {"tags": ["a", "b"]}}, {"tags": ["c", "b"]})
    assert not allowed({"ForAllValues:StringEquals": {"tags": ["a"]}}, {"tags": ["a", "b"]})
    with pytest.raises(UnsupportedPolicy, match="DateGreaterThan"):
        allowed({"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"}}, {"aws:CurrentTime": "x"})


def test_permissions_boundary_limits_identity_policies() -> None:
    policies = Policies([_allow("dynamodb:*", "*")], boundary=_allow("dynamodb:GetItem", "*"))
    assert evaluate(policies, "dynamodb:GetItem", TABLE).allowed
    assert "boundary" in evaluate(policies, "dynamodb:PutItem", TABLE).reason


def test_transact_write_items_is_checked_per_item_and_batches_as_single_actions() -> None:
    transact = {"TransactItems": [
        {"Put": {"TableName": "Idempotency", "Item": {}}}, {"Update": {"TableName": "Orders", "Key": {}}},
        {"Delete": {"TableName": "Orders", "Key": {}}}, {"ConditionCheck": {"TableName": "Stock", "Key": {}}}]}
    table = "arn:aws:dynamodb:eu-west-1:123456789012:table/"
    assert checks("dynamodb", "TransactWriteItems", transact) == [
        ("dynamodb:PutItem", table + "Idempotency"), ("dynamodb:UpdateItem", table + "Orders"),
        ("dynamodb:DeleteItem", table + "Orders"), ("dynamodb:ConditionCheckItem", table + "Stock")]
    assert checks("dynamodb", "Query", {"TableName": "Orders", "IndexName": "byCustomer"}) == [
        ("dynamodb:Query", table + "Orders/index/byCustomer")]
    assert checks("sqs", "DeleteMessageBatch", {"QueueUrl": "http://127.0.0.1:1/123456789012/Work"}) == [
        ("sqs:DeleteMessage", QUEUE)]
    assert checks("sns", "PublishBatch", {"TopicArn": "arn:t"}) == [("sns:Publish", "arn:t")]
    assert checks("events", "PutEvents", {"Entries": [{"EventBusName": "Bus"}, {}]}) == [
        ("events:PutEvents", "arn:aws:events:eu-west-1:123456789012:event-bus/Bus"),
        ("events:PutEvents", "arn:aws:events:eu-west-1:123456789012:event-bus/default")]
    assert checks("sts", "GetCallerIdentity", {}) == []
    stream = table + "Orders/stream/2026-01-01T00:00:00.000"
    assert checks("dynamodb", "GetRecords", {"ShardIterator": f"{stream}|1|abc"}) == [("dynamodb:GetRecords", stream)]


@pytest.fixture
def guarded() -> Iterator[tuple[str, Guard, Ledger]]:
    """An embedded AWS behind a guard, with one role allowed to put items into ``Orders`` only."""
    ledger = Ledger()
    guard = Guard(ledger)
    server = EmbeddedAws(0, guard)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}", guard, ledger
    server.stop()


def test_a_denied_call_fails_as_aws_fails_it_and_is_listed(guarded: tuple[str, Guard, Ledger]) -> None:
    endpoint, guard, ledger = guarded
    name = f"Orders-{uuid.uuid4().hex[:8]}"  # the embedded AWS's backends are shared within the process
    table = f"arn:aws:dynamodb:eu-west-1:123456789012:table/{name}"
    key = guard.register(Role("WriterRole", "arn:aws:iam::123456789012:role/Writer", "writer-fn",
                              Policies([_allow("dynamodb:PutItem", table)])))

    def client(access_key: str) -> Any:
        return boto3.client("dynamodb", endpoint_url=endpoint, region_name="eu-west-1",
                            aws_access_key_id=access_key, aws_secret_access_key="x")

    admin = client("sandbox")  # the sandbox's own key: not evaluated
    create_business_table(admin, name)
    writer = client(key)
    writer.put_item(TableName=name, Item={"pk": {"S": "a"}})
    with pytest.raises(ClientError) as denied:
        writer.transact_write_items(TransactItems=[
            {"Put": {"TableName": name, "Item": {"pk": {"S": "b"}}}},
            {"Update": {"TableName": name, "Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"N": "1"}}}}])
    error = denied.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert error["Message"].startswith("User: arn:aws:sts::123456789012:assumed-role/Writer/writer-fn is not "
                                       f"authorized to perform: dynamodb:UpdateItem on resource: {table}")
    assert "v" not in admin.get_item(TableName=name, Key={"pk": {"S": "a"}})["Item"]  # never applied
    assert "Item" not in admin.get_item(TableName=name, Key={"pk": {"S": "b"}})
    assert ledger.iam == {"allowed": 2, "denied": 1}
    assert ledger.denied == {f"WriterRole: dynamodb:UpdateItem on {table}": 1}


def test_s3_rest_calls_are_read_from_their_method_and_path() -> None:
    assert s3_checks("PUT", "/bodies/webhooks/github/1", {}) == [("s3:PutObject", "arn:aws:s3:::bodies/webhooks/github/1")]
    assert s3_checks("GET", "/bodies/webhooks/a b", {"x-id": ["GetObject"]}) == [
        ("s3:GetObject", "arn:aws:s3:::bodies/webhooks/a b")]
    assert s3_checks("GET", "/bodies", {"list-type": ["2"], "prefix": ["orders/"]}) == [
        ("s3:ListBucket", "arn:aws:s3:::bodies")]
    assert s3_checks("PUT", "/bodies/k", {"tagging": [""]}) == [("s3:PUT?tagging", "arn:aws:s3:::bodies/k")]


def test_s3_objects_are_evaluated_with_their_buckets_policy(guarded: tuple[str, Guard, Ledger], tmp_path: Path) -> None:
    endpoint, guard, ledger = guarded
    name = f"Bodies{uuid.uuid4().hex[:8]}"  # the embedded AWS's backends are shared within the process
    bucket = {"Fn::GetAtt": [name, "Arn"]}
    objects = {"Fn::Join": ["", [bucket, "/*"]]}
    stack = Stack("Hooks", tmp_path, {r.logical_id: r for r in [
        Resource(name, "AWS::S3::Bucket", {}, {}),
        # the bucket's policy denies one prefix to everyone, and (as CDK's enforce_ssl) calls without TLS
        Resource("BodiesPolicy", "AWS::S3::BucketPolicy", {"Bucket": {"Ref": name}, "PolicyDocument": {"Statement": [
            {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*", "Resource": [bucket, objects],
             "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
            {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:PutObject",
             "Resource": {"Fn::Join": ["", [bucket, "/private/*"]]}}]}}, {}),
        Resource("ReceiverRole", "AWS::IAM::Role", {"Policies": [{"PolicyDocument": _allow("s3:PutObject", objects)}]},
                 {})]})

    def client(access_key: str) -> Any:
        return boto3.client("s3", endpoint_url=endpoint, region_name="eu-west-1",
                            aws_access_key_id=access_key, aws_secret_access_key="x")

    done = Provisioner(lambda service: client("sandbox")).provision(stack)
    assert done.skipped == {}
    guard.add_stack(done)
    role = guard.role(done, "ReceiverRole", "receiver-fn")
    assert role is not None
    receiver = client(guard.register(role))
    physical = done.intrinsics.ref(name)
    receiver.put_object(Bucket=physical, Key="webhooks/github/1", Body=b"{}", ServerSideEncryption="AES256")
    with pytest.raises(ClientError) as denied:
        receiver.put_object(Bucket=physical, Key="private/1", Body=b"{}")
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    assert "is not authorized to perform: s3:PutObject on resource: " in denied.value.response["Error"]["Message"]
    with pytest.raises(ClientError, match="AccessDenied"):
        receiver.get_object(Bucket=physical, Key="webhooks/github/1")  # PutObject only
    assert [o["Key"] for o in client("sandbox").list_objects_v2(Bucket=physical)["Contents"]] == ["webhooks/github/1"]
    assert ledger.denied == {f"ReceiverRole: s3:PutObject on arn:aws:s3:::{physical}/private/1": 1,
                             f"ReceiverRole: s3:GetObject on arn:aws:s3:::{physical}/webhooks/github/1": 1}
