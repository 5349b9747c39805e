"""``IdempotentFunction``: a Lambda wired to the idempotency table with least privilege."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from retrysafe import names

from constructs import Construct

from . import snapstart
from .delegation import delegate
from .horizon import HORIZON_ENV
from .layer import RUNTIME, runtime_layer
from .nag import acknowledge
from .table import RECORD_ACTIONS, IdempotencyTable

TABLE_ENV = names.TABLE_ENV
#: What a function in a VPC needs for its network interfaces (AWSLambdaVPCAccessExecutionRole's actions).
ENI_ACTIONS = ("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface",
               "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses")
DEFAULT_TIMEOUT = Duration.seconds(10)


def python_function(scope: Construct, *, code: lambda_.Code, handler: str, environment: Mapping[str, str],
                    timeout: Duration = DEFAULT_TIMEOUT, memory_size: int = 512,
                    architecture: lambda_.Architecture = lambda_.Architecture.ARM_64,
                    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
                    layers: Sequence[lambda_.ILayerVersion] = (), description: str | None = None,
                    reserved_concurrent_executions: int | None = None, runtime: lambda_.Runtime = RUNTIME,
                    tracing: lambda_.Tracing | None = None, vpc: ec2.IVpc | None = None,
                    vpc_subnets: ec2.SubnetSelection | None = None,
                    security_groups: Sequence[ec2.ISecurityGroup] | None = None, role: iam.IRole | None = None,
                    environment_encryption: kms.IKey | None = None, log_group: logs.ILogGroup | None = None,
                    function_props: Mapping[str, Any] | None = None,
                    ) -> tuple[lambda_.Function, iam.IRole, logs.ILogGroup]:
    """A Python Lambda (latest runtime) with its own log group and a role that can only write to it.

    For a function that is not an :class:`IdempotentFunction` (a Lambda authorizer, say); returns
    ``(function, role, log_group)``. No managed policies: grants are added by the caller. Children of ``scope``: ``Logs`` (unless
    ``log_group``), ``Role`` (unless ``role``), ``Function``. ``function_props``: any other
    ``lambda_.Function`` props, applied last (they win over everything here).
    """
    log_group = log_group or logs.LogGroup(scope, "Logs", retention=log_retention,
                                           removal_policy=RemovalPolicy.DESTROY)
    role = role or iam.Role(scope, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                            description=f"{scope.node.path}: its own logs; other grants are explicit")
    log_group.grant_write(role)
    if vpc is not None:
        # What AWSLambdaVPCAccessExecutionRole grants, without the managed policy.
        iam.Grant.add_to_principal(grantee=role, actions=list(ENI_ACTIONS), resource_arns=["*"])
        acknowledge(scope, "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                    "Lambda's VPC network interface actions support no resource-level scoping.")
    props: dict[str, Any] = {
        "runtime": runtime, "code": code, "handler": handler, "role": role, "layers": list(layers),
        "environment": dict(environment), "timeout": timeout, "memory_size": memory_size,
        "architecture": architecture, "log_group": log_group, "description": description,
        "reserved_concurrent_executions": reserved_concurrent_executions, "tracing": tracing, "vpc": vpc,
        "vpc_subnets": vpc_subnets, "security_groups": list(security_groups) if security_groups else None,
        "environment_encryption": environment_encryption}
    props.update(function_props or {})
    function = lambda_.Function(scope, "Function", **props)
    return function, role, log_group


@delegate(lambda_.IFunction, "invoke_target")
@jsii.implements(lambda_.IFunction)
class IdempotentFunction(Construct):
    """A Python Lambda with the retrysafe runtime layer, the table and the retry horizon in its environment.

    It is an ``IFunction`` (and so an ``IGrantable``): every member delegates to
    :attr:`invoke_target` (the function, or its SnapStart alias), so ``orders.grant_read_data(fn)``,
    ``targets.LambdaFunction(fn)`` and ``fn.add_permission(...)`` work as with a ``lambda_.Function``.

    Props:

    - ``table`` (required): the :class:`IdempotencyTable`; the function may only Get/Put/
      Update/Delete/ConditionCheck items of it (no scans, no wildcard resources).
    - ``code`` + ``handler`` (required): e.g. ``Code.from_asset("handlers")`` and ``"orders.handler"``.
    - ``business_tables``: other tables its transactions write (same item-level actions).
    - ``environment``: extra variables. ``timeout``: default 10 s. ``memory_size``: default 512 MB.
    - ``runtime``: default Python 3.14. ``architecture``: default ARM_64. ``tracing``: default none.
    - ``vpc``, ``vpc_subnets``, ``security_groups``: run in a VPC (the role gets the ENI actions).
    - ``layers``: more layers, after the retrysafe layer. ``powertools_layer``: the public
      Powertools layer (e.g. ``LayerVersion.from_layer_version_arn(...)``); the retrysafe layer then
      ships without Powertools.
    - ``role``: an existing role (default a new one that can only write its logs); the grants
      are added to it. ``log_group``: an existing log group. ``log_retention``: default one month.
    - ``reserved_concurrent_executions``: default unreserved. ``environment_encryption``: a KMS key.
    - ``function_props``: any other ``lambda_.Function`` props (applied last).
    - ``snap_start``: default False. True turns on Lambda SnapStart: a version is published on
      every change and the alias ``live`` points to it; API routes, queue and stream consumers,
      Step Functions tasks, schedules and invoke grants use the alias (:attr:`invoke_target`).
      The runtime creates its DynamoDB client before the snapshot and refreshes what must differ
      per environment after each restore. Refused at synthesis where Lambda cannot snapshot the
      function (runtime before Python 3.12, EFS, more than 512 MiB of ephemeral storage,
      provisioned concurrency). Python SnapStart is billed per cached snapshot and per restore:
      see the performance page of the docs for when it pays.

    Attributes: ``function``, ``role``, ``log_group``, ``table``, ``layer`` (the retrysafe layer),
    ``alias`` (the SnapStart alias, None without SnapStart), ``invoke_target``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, code: lambda_.Code,
                 handler: str, business_tables: Sequence[dynamodb.ITable] = (),
                 environment: Mapping[str, str] | None = None, timeout: Duration = DEFAULT_TIMEOUT,
                 memory_size: int = 512, architecture: lambda_.Architecture = lambda_.Architecture.ARM_64,
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
                 reserved_concurrent_executions: int | None = None, description: str | None = None,
                 runtime: lambda_.Runtime = RUNTIME, tracing: lambda_.Tracing | None = None,
                 vpc: ec2.IVpc | None = None, vpc_subnets: ec2.SubnetSelection | None = None,
                 security_groups: Sequence[ec2.ISecurityGroup] | None = None,
                 layers: Sequence[lambda_.ILayerVersion] = (), powertools_layer: lambda_.ILayerVersion | None = None,
                 role: iam.IRole | None = None, log_group: logs.ILogGroup | None = None,
                 environment_encryption: kms.IKey | None = None,
                 function_props: Mapping[str, Any] | None = None, snap_start: bool = False) -> None:
        super().__init__(scope, construct_id)
        self.table = table
        if snap_start:
            snapstart.check(self, runtime, function_props)
            function_props = {**snapstart.function_props(f"{self.node.path}: a published SnapStart version"),
                              **(function_props or {})}
        env = {TABLE_ENV: table.table.table_name, HORIZON_ENV: table.retention_env(), **(environment or {})}
        self.layer = runtime_layer(self, with_powertools=powertools_layer is None)
        own_layers = [self.layer, *([powertools_layer] if powertools_layer is not None else []), *layers]
        self.function, self._role, self.log_group = python_function(
            self, code=code, handler=handler, environment=env, timeout=timeout, memory_size=memory_size,
            architecture=architecture, log_retention=log_retention, description=description,
            reserved_concurrent_executions=reserved_concurrent_executions, layers=own_layers, runtime=runtime,
            tracing=tracing, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups, role=role,
            environment_encryption=environment_encryption, log_group=log_group, function_props=function_props)
        self.alias = snapstart.publish(self, self.function, own_layers) if snap_start else None
        table.grant_records(self._role)
        for business in business_tables:
            self.grant_business_table(business)

    @property
    def role(self) -> iam.IRole:
        """The function's execution role (the one passed in, or the one created)."""
        return self._role

    @property
    def invoke_target(self) -> lambda_.IFunction:
        """What integrations invoke: the SnapStart alias when ``snap_start=True``, else the function itself."""
        return self.alias if self.alias is not None else self.function

    @property
    def timeout(self) -> Duration:
        """The function's timeout (queue visibility is sized from it)."""
        return self.function.timeout or Duration.seconds(3)

    def grant_business_table(self, business: dynamodb.ITable) -> iam.Grant:
        """Let transactions write items of another table (item-level actions, that table only)."""
        grant = iam.Grant.add_to_principal(grantee=self._role, actions=list(RECORD_ACTIONS),
                                           resource_arns=[business.table_arn])
        if business.encryption_key is not None:
            business.encryption_key.grant_encrypt_decrypt(self._role)
        return grant

    def add_environment(self, name: str, value: str) -> None:
        """Set an environment variable on the function."""
        self.function.add_environment(name, value)

    def metric_fencing_rejections(self, **options: Any) -> cloudwatch.Metric:
        """``FencingRejected`` (emitted by the runtime via EMF; ``options``: ``MetricOptions`` fields)."""
        return self.table.metric_fencing_rejections(**{"region": Stack.of(self).region, **options})
