"""Provision a stack's data plane on the embedded AWS: tables, queues, buses, rules, secrets, parameters, buckets.

Everything comes from the template: names, keys, GSIs, TTL, streams, redrive policies,
event patterns and targets (a function target gets a queue of the sandbox's own, :class:`EventTarget`) (bucket, queue and topic policies are the IAM guard's). Resources without a local meaning (IAM, log groups, alarms...)
are ignored silently; other types the sandbox does not run are listed in ``Provisioned.skipped``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .assembly import ACCOUNT, REGION, Intrinsics, Resource, Stack

#: Types with no local meaning (permissions, logging, alarms, deployment plumbing).
IGNORED = frozenset({
    "AWS::CDK::Metadata", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::Logs::LogGroup",
    "AWS::Lambda::Permission", "AWS::CloudWatch::Alarm", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy",
    "AWS::S3::BucketPolicy",
    "AWS::ApiGateway::Account", "AWS::ApiGateway::Deployment",
    "AWS::ApiGateway::RequestValidator", "AWS::ApiGateway::GatewayResponse",
    "AWS::ApiGatewayV2::Deployment", "AWS::KMS::Key", "AWS::KMS::Alias",
})
#: Types the sandbox runs itself (functions, API Gateway, roles it evaluates) rather than on the embedded AWS.
LOCAL = frozenset({
    "AWS::IAM::Role", "AWS::StepFunctions::StateMachine", "AWS::ApiGateway::Stage", "AWS::ApiGatewayV2::Stage",
    "AWS::Lambda::Function", "AWS::Lambda::LayerVersion", "AWS::Lambda::EventSourceMapping",
    "AWS::ApiGateway::RestApi", "AWS::ApiGateway::Resource", "AWS::ApiGateway::Method", "AWS::ApiGateway::Authorizer",
    "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Integration",
    "AWS::ApiGatewayV2::Authorizer", "AWS::Lambda::EventInvokeConfig",
})


@dataclass
class Schedule:
    """A scheduled rule targeting a function of the stack (run by the sandbox, ``rate(...)`` only)."""

    rule: str
    function_id: str
    seconds: float
    rule_arn: str = ""


@dataclass(frozen=True)
class EventTarget:
    """A function target of a pattern rule: the embedded EventBridge delivers its events to ``queue_url``.

    That queue is the sandbox's (it stands for Lambda's asynchronous invocation queue):
    :mod:`.event_targets` invokes ``function_id`` from it. ``dead_letter``: the target's
    ``DeadLetterConfig`` queue ARN.
    """

    rule: str
    rule_arn: str
    target_id: str
    function_id: str
    queue_url: str
    dead_letter: str | None = None


@dataclass
class Provisioned:
    """What was created for one stack, and the resolver for its intrinsics."""

    stack: Stack
    intrinsics: Intrinsics
    skipped: dict[str, list[str]] = field(default_factory=dict)
    schedules: list[Schedule] = field(default_factory=list)
    event_targets: list[EventTarget] = field(default_factory=list)

    def skip(self, resource: Resource, reason: str) -> None:
        """Record a resource the sandbox does not run."""
        self.skipped.setdefault(reason, []).append(resource.logical_id)


def physical_name(stack: Stack, resource: Resource, limit: int = 80) -> str:
    """A CloudFormation-style generated name: ``<stack>-<logical id>``, within ``limit`` characters."""
    return f"{stack.name}-{resource.logical_id}"[:limit]


def _rate_seconds(expression: str) -> float | None:
    if not expression.startswith("rate(") or not expression.endswith(")"):
        return None
    amount, unit = expression[5:-1].split()
    return float(amount) * {"minute": 60, "hour": 3600, "day": 86400}[unit.rstrip("s")]


class Provisioner:
    """Creates one stack's resources through boto3 clients pointed at the embedded AWS.

    ``client(service)`` makes the clients; ``visibility_timeout`` overrides every queue's
    visibility timeout (short redelivery for demos); ``target_allowed(done, rule_arn, target_arn)``,
    when given (called once every other resource exists), decides whether EventBridge may deliver to a rule's queue or topic (its resource
    policy); a refused target is not wired, so the rule's events never arrive, as in AWS.
    """

    def __init__(self, client: Callable[[str], Any], visibility_timeout: int | None = None,
                 target_allowed: Callable[[Provisioned, str, str], bool] | None = None) -> None:
        self.client, self.visibility_timeout, self.target_allowed = client, visibility_timeout, target_allowed

    def provision(self, stack: Stack) -> Provisioned:
        """Create every emulated resource of ``stack``; resolve their names, URLs and ARNs."""
        done = Provisioned(stack, Intrinsics(stack.name))
        steps: dict[str, Callable[[Provisioned, Resource], None]] = {
            "AWS::DynamoDB::Table": self._table, "AWS::SQS::Queue": self._queue,
            "AWS::Events::EventBus": self._bus, "AWS::SecretsManager::Secret": self._secret,
            "AWS::SSM::Parameter": self._parameter, "AWS::SNS::Topic": self._topic,
            "AWS::S3::Bucket": self._bucket,
        }
        later = {*steps, "AWS::Events::Rule", "AWS::SNS::Subscription"}
        for resource in stack.resources.values():
            if resource.type in LOCAL:
                self._local(done, resource)
            elif resource.type not in later:
                done.intrinsics.unemulated.add(resource.logical_id)
                if resource.type not in IGNORED:
                    done.skip(resource, resource.type)
        for resource in stack.resources.values():
            if resource.type in steps:
                steps[resource.type](done, resource)
        for queue in stack.of_type("AWS::SQS::Queue"):
            if "RedrivePolicy" in queue.properties:
                policy = done.intrinsics.resolve(queue.properties["RedrivePolicy"])
                self.client("sqs").set_queue_attributes(QueueUrl=done.intrinsics.ref(queue.logical_id),
                                                        Attributes={"RedrivePolicy": json.dumps(policy)})
        for subscription in stack.of_type("AWS::SNS::Subscription"):
            self._subscription(done, subscription)
        for rule in stack.of_type("AWS::Events::Rule"):
            self._rule_name(done, rule)
        for rule in stack.of_type("AWS::Events::Rule"):
            self._rule(done, rule)
        return done

    # -- data plane on the embedded AWS ---------------------------------------------------------

    def _table(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        name = props.get("TableName") or physical_name(done.stack, resource, 255)
        request: dict[str, Any] = {k: props[k] for k in ("AttributeDefinitions", "KeySchema", "LocalSecondaryIndexes")
                                   if k in props}
        request["BillingMode"] = props.get("BillingMode", "PROVISIONED")
        if request["BillingMode"] == "PROVISIONED":
            request["ProvisionedThroughput"] = props.get("ProvisionedThroughput",
                                                         {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
        if props.get("GlobalSecondaryIndexes"):
            request["GlobalSecondaryIndexes"] = [
                {k: v for k, v in index.items() if k != "ContributorInsightsSpecification"}
                for index in props["GlobalSecondaryIndexes"]]
        if "StreamSpecification" in props:
            request["StreamSpecification"] = {"StreamEnabled": True, **props["StreamSpecification"]}
        ddb = self.client("dynamodb")
        table = ddb.create_table(TableName=name, **request)["TableDescription"]
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
        done.intrinsics.refs[resource.logical_id] = name
        done.intrinsics.attributes[(resource.logical_id, "Arn")] = table["TableArn"]
        if "LatestStreamArn" in table:
            done.intrinsics.attributes[(resource.logical_id, "StreamArn")] = table["LatestStreamArn"]

    def _queue(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        fifo = bool(props.get("FifoQueue"))
        name = props.get("QueueName") or physical_name(done.stack, resource, 75) + (".fifo" if fifo else "")
        attributes = {k: str(props[k]).lower() if isinstance(props[k], bool) else str(props[k])
                      for k in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "MaximumMessageSize",
                                "ReceiveMessageWaitTimeSeconds", "FifoQueue", "ContentBasedDeduplication")
                      if k in props}
        if self.visibility_timeout is not None:
            attributes["VisibilityTimeout"] = str(self.visibility_timeout)
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
        done.intrinsics.refs[resource.logical_id] = url
        done.intrinsics.attributes.update({(resource.logical_id, "Arn"): arn, (resource.logical_id, "QueueUrl"): url,
                                           (resource.logical_id, "QueueName"): name})

    def _bus(self, done: Provisioned, resource: Resource) -> None:
        name = done.intrinsics.resolve(resource.properties.get("Name")) or physical_name(done.stack, resource, 256)
        arn = self.client("events").create_event_bus(Name=name)["EventBusArn"]
        done.intrinsics.refs[resource.logical_id] = name
        done.intrinsics.attributes.update({(resource.logical_id, "Arn"): arn, (resource.logical_id, "Name"): name})

    def _topic(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        name = props.get("TopicName") or physical_name(done.stack, resource, 256)
        arn = self.client("sns").create_topic(Name=name)["TopicArn"]
        done.intrinsics.refs[resource.logical_id] = arn
        done.intrinsics.attributes.update({(resource.logical_id, "TopicArn"): arn,
                                           (resource.logical_id, "TopicName"): name})

    def _subscription(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        if props.get("Protocol") != "sqs":
            done.skip(resource, f"AWS::SNS::Subscription ({props.get('Protocol')})")
            return
        attributes = {k: json.dumps(props[k]) if isinstance(props[k], dict) else str(props[k]).lower()
                      for k in ("RawMessageDelivery", "FilterPolicy") if k in props}
        self.client("sns").subscribe(TopicArn=props["TopicArn"], Protocol="sqs", Endpoint=props["Endpoint"],
                                     Attributes=attributes)

    def _bucket(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        # CloudFormation's generated bucket names are lowercase (S3 refuses capitals), 63 characters at most
        name = props.get("BucketName") or physical_name(done.stack, resource, 63).lower()
        # Only the bucket: its encryption, lifecycle and public access settings change nothing locally
        # (objects never expire within a sandbox's life, and nothing is public on 127.0.0.1).
        self.client("s3").create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})
        done.intrinsics.refs[resource.logical_id] = name
        done.intrinsics.attributes.update({
            (resource.logical_id, "Arn"): f"arn:aws:s3:::{name}",
            (resource.logical_id, "DomainName"): f"{name}.s3.amazonaws.com",
            (resource.logical_id, "RegionalDomainName"): f"{name}.s3.{REGION}.amazonaws.com"})

    def _secret(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        client = self.client("secretsmanager")
        value = props.get("SecretString")
        if value is None:
            spec = props.get("GenerateSecretString", {})
            options = {k: spec[k] for k in ("PasswordLength", "ExcludeCharacters", "ExcludeNumbers",
                                             "ExcludePunctuation", "ExcludeUppercase", "ExcludeLowercase",
                                             "IncludeSpace", "RequireEachIncludedType") if k in spec}
            value = client.get_random_password(**options)["RandomPassword"]
            if "GenerateStringKey" in spec:
                value = json.dumps({**json.loads(spec.get("SecretStringTemplate", "{}")),
                                    spec["GenerateStringKey"]: value})
        name = props.get("Name") or physical_name(done.stack, resource, 256)
        arn = client.create_secret(Name=name, SecretString=value)["ARN"]
        done.intrinsics.refs[resource.logical_id] = arn
        done.intrinsics.attributes[(resource.logical_id, "Id")] = arn

    def _parameter(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        name = props.get("Name") or "/" + physical_name(done.stack, resource, 1000)
        self.client("ssm").put_parameter(Name=name, Value=props["Value"], Type=props.get("Type", "String"))
        done.intrinsics.refs[resource.logical_id] = name
        done.intrinsics.attributes.update({(resource.logical_id, "Type"): props.get("Type", "String"),
                                           (resource.logical_id, "Value"): props["Value"]})

    @staticmethod
    def _rule_name(done: Provisioned, resource: Resource) -> None:
        props = resource.properties
        name = done.intrinsics.resolve(props.get("Name")) or physical_name(done.stack, resource, 64)
        bus = done.intrinsics.resolve(props.get("EventBusName", "default"))
        done.intrinsics.refs[resource.logical_id] = name
        done.intrinsics.attributes[(resource.logical_id, "Arn")] = (
            f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{'' if bus == 'default' else bus + '/'}{name}")

    def _rule(self, done: Provisioned, resource: Resource) -> None:
        props = done.intrinsics.resolve(resource.properties)
        name = done.intrinsics.ref(resource.logical_id)
        functions = {done.intrinsics.get_att(f.logical_id, "Arn"): f.logical_id
                     for f in done.stack.of_type("AWS::Lambda::Function")}
        targets = props.get("Targets", [])
        every = _rate_seconds(props.get("ScheduleExpression", ""))
        rule_arn = str(done.intrinsics.get_att(resource.logical_id, "Arn"))
        invoked = []
        for target in targets:
            if target["Arn"] in functions and every is not None:
                done.schedules.append(Schedule(name, functions[target["Arn"]], every, rule_arn))
            elif target["Arn"] in functions and "EventPattern" in props and not {"Input", "InputPath"} & set(target):
                invoked.append(self._function_target(done, name, rule_arn, target, functions[target["Arn"]]))
            elif target["Arn"] in functions or "ScheduleExpression" in props:
                done.skip(resource, "AWS::Events::Rule (function target with Input/InputPath, or a cron schedule)")
        queues = [{k: v for k, v in t.items() if k in ("Id", "Arn", "Input", "InputPath", "SqsParameters")}
                  for t in targets if (t["Arn"].startswith("arn:aws:sqs:") or t["Arn"].startswith("arn:aws:sns:"))
                  and (self.target_allowed is None or self.target_allowed(done, rule_arn, t["Arn"]))] + invoked
        if "EventPattern" not in props or not queues:
            return
        events = self.client("events")
        bus = props.get("EventBusName", "default")
        pattern = props["EventPattern"]
        events.put_rule(Name=name, EventBusName=bus, State=props.get("State", "ENABLED"),
                        EventPattern=pattern if isinstance(pattern, str) else json.dumps(pattern))
        events.put_targets(Rule=name, EventBusName=bus, Targets=queues)

    def _function_target(self, done: Provisioned, rule: str, rule_arn: str, target: dict[str, Any],
                         function_id: str) -> dict[str, Any]:
        """The sandbox's queue standing for Lambda's asynchronous queue of one function target (its rule target)."""
        # Deleted only once delivered (retries included): no redelivery while an invocation runs.
        name = f"sandbox-async-{rule}"[:70] + f"-{target['Id']}"[:10]
        url = self.client("sqs").create_queue(QueueName=name, Attributes={"VisibilityTimeout": "43200"})["QueueUrl"]
        dead_letter = target.get("DeadLetterConfig", {}).get("Arn")
        done.event_targets.append(EventTarget(rule, rule_arn, target["Id"], function_id, url,
                                              str(dead_letter) if dead_letter else None))
        return {"Id": target["Id"], "Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}",
                **({"InputTransformer": target["InputTransformer"]} if "InputTransformer" in target else {})}

    # -- resources the sandbox runs itself: only their names ------------------------------------

    def _local(self, done: Provisioned, resource: Resource) -> None:
        refs, attributes = done.intrinsics.refs, done.intrinsics.attributes
        lid = resource.logical_id
        if resource.type == "AWS::Lambda::Function":
            name = resource.properties.get("FunctionName") or physical_name(done.stack, resource, 64)
            refs[lid] = name
            attributes[(lid, "Arn")] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        elif resource.type == "AWS::IAM::Role":
            name = resource.properties.get("RoleName") or physical_name(done.stack, resource, 64)
            refs[lid] = name
            attributes[(lid, "Arn")] = f"arn:aws:iam::{ACCOUNT}:role/{name}"
            attributes[(lid, "RoleId")] = f"AROASANDBOX{lid.upper()}"[:32]
        elif resource.type == "AWS::StepFunctions::StateMachine":
            name = resource.properties.get("StateMachineName") or physical_name(done.stack, resource, 80)
            refs[lid] = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
            attributes[(lid, "Arn")] = refs[lid]
            attributes[(lid, "Name")] = name
        elif resource.type == "AWS::Lambda::LayerVersion":
            refs[lid] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:{physical_name(done.stack, resource, 64)}:1"
        elif resource.type in ("AWS::ApiGateway::RestApi", "AWS::ApiGatewayV2::Api"):
            refs[lid] = lid  # the API id in its execute-api ARNs (method ARNs, invoke permissions)
            attributes[(lid, "RootResourceId")] = "/"
            attributes[(lid, "ApiEndpoint")] = "http://127.0.0.1"
        elif resource.type in ("AWS::ApiGateway::Stage", "AWS::ApiGatewayV2::Stage"):
            refs[lid] = resource.properties.get("StageName", "$default")
        else:
            refs[lid] = lid
