"""``IdempotentFunction``: a Lambda wired to the idempotency table with least privilege."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from retrysafe import names

from constructs import Construct

from . import snapstart
from ._props import refuse_ignored, refuse_owned, struct_values
from .cutover import CutoverFromPowertools, cutover_environment
from .delegation import delegate
from .layer import RUNTIME, runtime_layer
from .nag import acknowledge
from .table import (
    KEY_WRITE_ACTIONS,
    RECORD_ACTIONS,
    BusinessTableCheck,
    IdempotencyTable,
    check_same_region,
    grant_key,
)

#: What a function in a VPC needs for its network interfaces (AWSLambdaVPCAccessExecutionRole's actions).
ENI_ACTIONS = ("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DeleteNetworkInterface",
               "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses")
DEFAULT_TIMEOUT = Duration.seconds(10)
#: All the cut-over from Powertools needs on the old table: its records are read, never written.
CUTOVER_ACTIONS = ("dynamodb:GetItem",)
#: What a GetItem of a table encrypted with a customer-managed key needs of that key.
KEY_READ_ACTIONS = ("kms:Decrypt",)


#: ``lambda_.Function`` props the constructs decide themselves, with where each one goes instead.
_OWNED_FUNCTION_PROPS = {
    "role": "pass existing_role=... (the grants are added to it)",
    "log_group": "pass existing_log_group=..., or log_group_props=LogGroupProps(...) for the created one",
    "log_retention": "pass log_group_props=logs.LogGroupProps(retention=...) (a log group the construct owns, "
                     "no custom resource)",
}
#: The defaults of every function the constructs create; ``function_props`` override them.
FUNCTION_DEFAULTS: Mapping[str, Any] = {"timeout": DEFAULT_TIMEOUT, "memory_size": 512,
                                        "architecture": lambda_.Architecture.ARM_64}


def stack_relative_path(scope: Construct) -> str:
    """``scope``'s construct path below its stack: what stays the same when stacks or stages are renamed."""
    stack = Stack.of(scope)
    return scope.node.path.removeprefix(stack.node.path + "/")


def with_defaults(defaults: Mapping[str, Any], function_props: lambda_.FunctionOptions | None
                  ) -> lambda_.FunctionOptions:
    """``function_props`` over a construct's own defaults (``environment`` merged: the user's variables win)."""
    user = struct_values(function_props)
    environment = {**defaults.get("environment", {}), **user.pop("environment", {})}
    return lambda_.FunctionOptions(**{**defaults, **user, "environment": environment})


def _settings(scope: Construct, function_props: lambda_.FunctionOptions | None) -> dict[str, Any]:
    """:data:`FUNCTION_DEFAULTS` under ``function_props``; the settings the constructs own are refused there."""
    user = struct_values(function_props)
    refuse_owned(scope, "function_props", user, _OWNED_FUNCTION_PROPS)
    return {**FUNCTION_DEFAULTS, **user}


def python_function(scope: Construct, *, code: lambda_.Code, handler: str,
                    runtime: lambda_.Runtime = RUNTIME, layers: Sequence[lambda_.ILayerVersion] = (),
                    existing_role: iam.IRole | None = None, existing_log_group: logs.ILogGroup | None = None,
                    log_group_props: logs.LogGroupProps | None = None,
                    function_props: lambda_.FunctionOptions | None = None,
                    ) -> tuple[lambda_.Function, iam.IRole, logs.ILogGroup]:
    """A Python Lambda (latest runtime) with its own log group and a role that can only write to it.

    For a function that is not an :class:`IdempotentFunction` (a Lambda authorizer, say); returns
    ``(function, role, log_group)``. No managed policies: grants are added by the caller.
    Children of ``scope``: ``Logs`` (unless ``existing_log_group``), ``Role`` (unless
    ``existing_role``), ``Function``.

    :param code: the function's code, e.g. ``Code.from_asset("handlers")`` (required).
    :param handler: ``module.function`` (required).
    :param runtime: @default ``Runtime.PYTHON_3_14``.
    :param layers: layers before the ones in ``function_props.layers``. @default none.
    :param existing_role: a role to use (its grants are added to it). @default a new role that can only
        write the function's logs.
    :param existing_log_group: a log group to use. @default a new one (see ``log_group_props``).
    :param log_group_props: settings of the created log group. @default retention one month,
        removal policy ``DESTROY``. Refused with ``existing_log_group``.
    :param function_props: every other ``lambda_.Function`` setting (memory, timeout, VPC, tracing,
        reserved concurrency, environment, description...). @default timeout 10 s, 512 MB, ARM_64.
    """
    refuse_ignored(scope, "existing_log_group", existing_log_group, {"log_group_props": log_group_props},
                   "set retention and removal policy on that log group")
    settings = _settings(scope, function_props)
    log_group = existing_log_group or logs.LogGroup(
        scope, "Logs", **{"retention": logs.RetentionDays.ONE_MONTH, "removal_policy": RemovalPolicy.DESTROY,
                          **struct_values(log_group_props)})
    role = existing_role or iam.Role(scope, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                                     description=f"{scope.node.path}: its own logs; other grants are explicit")
    log_group.grant_write(role)
    if settings.get("vpc") is not None:
        # What AWSLambdaVPCAccessExecutionRole grants, without the managed policy.
        iam.Grant.add_to_principal(grantee=role, actions=list(ENI_ACTIONS), resource_arns=["*"])
        acknowledge(scope, "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                    "Lambda's VPC network interface actions support no resource-level scoping.")
    settings["layers"] = [*layers, *(settings.get("layers") or ())]
    function = lambda_.Function(scope, "Function", runtime=runtime, code=code, handler=handler, role=role,
                                log_group=log_group, **settings)
    return function, role, log_group


@delegate(lambda_.IFunction, "invoke_target")
@jsii.implements(lambda_.IFunction)
class IdempotentFunction(Construct):
    """A Python Lambda with the retrysafe runtime layer, the table and the retry horizon in its environment.

    It is an ``IFunction`` (and so an ``IGrantable``): every member delegates to
    :attr:`invoke_target` (the function, or its SnapStart alias), so ``orders.grant_read_data(fn)``,
    ``targets.LambdaFunction(fn)`` and ``fn.add_permission(...)`` work as with a ``lambda_.Function``.

    Props: only what retrysafe decides is a prop of its own; every other Lambda setting goes
    through ``function_props``.

    :param table: the :class:`IdempotencyTable` (required); the function may only Get/Put/Update/
        Delete/ConditionCheck items of it (no scans, no wildcard resources). It must be in the
        function's region.
    :param code: e.g. ``Code.from_asset("handlers")`` (required).
    :param handler: e.g. ``"orders.handler"`` (required).
    :param business_tables: other tables its transactions write (same item-level actions; with the
        table's ``home_regions``, also on their replicas in the home regions, and a ``Table`` or
        ``TableV2`` of this app without a replica in each home region fails synthesis). @default none.
    :param runtime: @default ``Runtime.PYTHON_3_14``.
    :param powertools_layer: the public Powertools layer (``LayerVersion.from_layer_version_arn(...)``);
        the retrysafe layer then ships without Powertools. @default Powertools inside the retrysafe layer.
    :param existing_role: a role to add the grants to. @default a new role that can only write its logs.
    :param existing_log_group: a log group to use. @default a new one (``log_group_props``).
    :param log_group_props: the created log group's settings. @default retention one month, ``DESTROY``.
        Refused with ``existing_log_group``.
    :param function_props: every other ``lambda_.Function`` setting, as ``lambda_.FunctionOptions(...)``
        (``memory_size``, ``timeout``, ``environment``, ``vpc``, ``tracing``, ``layers`` after the
        retrysafe layer, ``reserved_concurrent_executions``, ``environment_encryption``...).
        @default timeout 10 s, 512 MB, ARM_64; ``role``, ``log_group`` and ``log_retention`` are
        refused there (use the props above).
    :param snap_start: Lambda SnapStart. @default False. True publishes a version on every change
        and points the alias ``live`` at it; API routes, queue and stream consumers, Step Functions
        tasks, schedules and invoke grants use the alias (:attr:`invoke_target`). The runtime
        creates its DynamoDB client before the snapshot and refreshes what must differ per
        environment after each restore. Refused at synthesis where Lambda cannot snapshot the
        function (runtime before Python 3.12, EFS, more than 512 MiB of ephemeral storage,
        provisioned concurrency). Python SnapStart is billed per cached snapshot and per restore:
        see the performance page of the docs for when it pays.
    :param record_actions: the item-level actions granted on the table. @default what claims,
        commits, replays and releases need (``RECORD_ACTIONS``); the outbox relays grant only what
        they call.
    :param powertools_cutover: while switching from Powertools idempotency, the old table, the
        end of the window and the old function (:class:`~retrysafe_cdk.CutoverFromPowertools`):
        ``GetItem`` on that table only, and its ARN, the window's end and the old function's name in
        the environment. Refused when the window has no time zone or is already over, when the table
        is in another region, and when the keys' prefix cannot be known (no old function, no key
        prefix, and a generated function name). @default none.
    :param layer_bytecode: the retrysafe layer ships its modules compiled (PEP 552 hash-based
        bytecode) for ``runtime``, so cold starts do not compile them from source (Lambda's ``/opt``
        is read-only: a layer without bytecode compiles on every cold start). A layer of its own for
        that runtime; the synthesizing Python must be the runtime's version, else synthesis fails.
        @default False (one layer for every runtime, no bytecode).

    Attributes: ``function``, ``role``, ``log_group``, ``table``, ``layer`` (the retrysafe layer),
    ``alias`` (the SnapStart alias, None without SnapStart), ``invoke_target``, ``lease_source``
    (the event source whose lease the function got, see :meth:`bind_lease`), ``subscriber`` (the
    stable name its records are scoped by, ``RETRYSAFE_SUBSCRIBER``: its path below its stack, or the
    one its event rule, subscription, queue or stream consumer gave it, see :meth:`bind_subscriber`).
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, code: lambda_.Code,
                 handler: str, business_tables: Sequence[dynamodb.ITable] = (), runtime: lambda_.Runtime = RUNTIME,
                 powertools_layer: lambda_.ILayerVersion | None = None, existing_role: iam.IRole | None = None,
                 existing_log_group: logs.ILogGroup | None = None, log_group_props: logs.LogGroupProps | None = None,
                 function_props: lambda_.FunctionOptions | None = None, snap_start: bool = False,
                 record_actions: Sequence[str] = RECORD_ACTIONS,
                 powertools_cutover: CutoverFromPowertools | None = None, layer_bytecode: bool = False) -> None:
        super().__init__(scope, construct_id)
        self.table = table
        self.lease_source: str | None = None
        # The runtime's default subscriber, a name that survives the function's replacement (its physical
        # name does not): the path below the stack until an event source names it (bind_subscriber).
        self.subscriber: str = stack_relative_path(self)
        self._subscriber_source: str | None = None
        check_same_region(self, table.table, "the idempotency table")
        own: dict[str, Any] = {"environment": {names.TABLE_ENV: table.table.table_name, names.HORIZON_ENV: table.retention_env(),
                                               names.SUBSCRIBER_ENV: self.subscriber, **table.home_environment()}}
        if powertools_cutover is not None:
            check_same_region(self, powertools_cutover.table, "the Powertools idempotency table",
                              why="The runtime's DynamoDB client calls its own region, where GetItem on that "
                                  "table's ARN fails.")
            named = struct_values(function_props).get("function_name") is not None
            own["environment"].update(cutover_environment(self, powertools_cutover, named=named))
        if snap_start:
            snapstart.check(self, runtime, struct_values(function_props))
            own.update(snapstart.function_props(f"{self.node.path}: a published SnapStart version"))
        self.layer = runtime_layer(self, with_powertools=powertools_layer is None,
                                   bytecode_for=runtime if layer_bytecode else None)
        own_layers = [self.layer, *([powertools_layer] if powertools_layer is not None else [])]
        self.function, self._role, self.log_group = python_function(
            self, code=code, handler=handler, runtime=runtime, layers=own_layers, existing_role=existing_role,
            existing_log_group=existing_log_group, log_group_props=log_group_props,
            function_props=with_defaults(own, function_props))
        all_layers = [*own_layers, *(struct_values(function_props).get("layers") or ())]
        self.alias = snapstart.publish(self, self.function, all_layers) if snap_start else None
        if record_actions:
            table.grant_records(self._role, record_actions)
        for business in business_tables:
            self.grant_business_table(business)
        if powertools_cutover is not None:
            old = powertools_cutover.table
            iam.Grant.add_to_principal(grantee=self._role, actions=list(CUTOVER_ACTIONS), resource_arns=[old.table_arn])
            if old.encryption_key is not None:
                grant_key(self._role, old.encryption_key, KEY_READ_ACTIONS)

    def bind_lease(self, source: Construct, seconds: int) -> None:
        """Give the function the claim lease of the one event source that feeds it (``source``).

        The runtime reads one lease per function (``RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS``): a second
        source would silently overwrite the first one's, so it is refused with the fix.
        """
        if self.lease_source is not None:
            raise ValueError(
                f"{source.node.path}: {self.node.path} is already fed by {self.lease_source}, and a function gets one "
                f"claim lease (RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS): the second source's {seconds}s would replace "
                "the first one's, and messages would be redelivered while still being processed (or wait too long). "
                "Fix: give each consumer its own IdempotentFunction (the same code and handler are fine).")
        self.lease_source = source.node.path
        self.function.add_environment(names.VISIBILITY_TIMEOUT_ENV, str(seconds))

    def bind_subscriber(self, source: Construct, subscriber: str | None) -> str:
        """The subscriber the function's records are scoped by, for an event rule, subscription, queue or stream of it.

        The function has one default subscriber (``RETRYSAFE_SUBSCRIBER``): the first ``source`` sets it
        (``subscriber``, @default ``source``'s path below its stack) and claims it on the table (two
        consumers with one subscriber are refused, see :meth:`IdempotencyTable.claim_subscriber`); a
        further source of the function shares it, and a different ``subscriber`` there is refused (it
        would silently replace the first one's).
        """
        if self._subscriber_source is not None:
            if subscriber is not None and subscriber != self.subscriber:
                raise ValueError(
                    f"{source.node.path}: {self.node.path} already has the subscriber {self.subscriber!r} (from "
                    f"{self._subscriber_source}), and a function has one ({names.SUBSCRIBER_ENV}): "
                    f"subscriber={subscriber!r} would replace it, and the first source's retries would no longer "
                    f"find their records. Fix: omit subscriber= here (or pass {self.subscriber!r}), or give this "
                    "source its own IdempotentFunction.")
            return self.subscriber
        chosen = subscriber or stack_relative_path(source)
        self.table.claim_subscriber(chosen, source)
        self.subscriber, self._subscriber_source = chosen, source.node.path
        self.function.add_environment(names.SUBSCRIBER_ENV, chosen)
        return chosen

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
                                           resource_arns=[business.table_arn, *self.table.home_arns(self, business)])
        check_same_region(self, business, "the business table")
        self.node.add_validation(BusinessTableCheck(self, self.table, business))
        if business.encryption_key is not None:
            grant_key(self._role, business.encryption_key, KEY_WRITE_ACTIONS)
        return grant

    def add_environment(self, name: str, value: str) -> None:
        """Set an environment variable on the function."""
        self.function.add_environment(name, value)

    def metric_fencing_rejections(self, **options: Any) -> cloudwatch.Metric:
        """``FencingRejected`` (emitted by the runtime via EMF; ``options``: ``MetricOptions`` fields)."""
        return self.table.metric_fencing_rejections(**{"region": Stack.of(self).region, **options})
