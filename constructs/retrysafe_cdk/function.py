"""``IdempotentFunction``: a Lambda wired to the idempotency table with least privilege."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from constructs import Construct

from .horizon import HORIZON_ENV
from .layer import RUNTIME, runtime_layer
from .table import RECORD_ACTIONS, IdempotencyTable

TABLE_ENV = "RETRYSAFE_TABLE"
DEFAULT_TIMEOUT = Duration.seconds(10)


def python_function(scope: Construct, *, code: lambda_.Code, handler: str, environment: Mapping[str, str],
                    timeout: Duration = DEFAULT_TIMEOUT, memory_size: int = 512,
                    architecture: lambda_.Architecture = lambda_.Architecture.ARM_64,
                    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
                    layers: Sequence[lambda_.ILayerVersion] = (), description: str | None = None,
                    reserved_concurrent_executions: int | None = None,
                    ) -> tuple[lambda_.Function, iam.Role, logs.LogGroup]:
    """A Python Lambda (latest runtime) with its own log group and a role that can only write to it.

    No managed policies: grants are added by the caller. Children of ``scope``: ``Logs``,
    ``Role``, ``Function``.
    """
    log_group = logs.LogGroup(scope, "Logs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
    role = iam.Role(scope, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                    description=f"{scope.node.path}: its own logs; other grants are explicit")
    log_group.grant_write(role)
    function = lambda_.Function(
        scope, "Function", runtime=RUNTIME, code=code, handler=handler, role=role, layers=list(layers),
        environment=dict(environment), timeout=timeout, memory_size=memory_size, architecture=architecture,
        log_group=log_group, description=description, reserved_concurrent_executions=reserved_concurrent_executions,
    )
    return function, role, log_group


class IdempotentFunction(Construct):
    """A Python Lambda with the retrysafe runtime layer, the table and the retry horizon in its environment.

    Props:

    - ``table`` (required): the :class:`IdempotencyTable`; the function may only Get/Put/
      Update/Delete/ConditionCheck items of it (no scans, no wildcard resources).
    - ``code`` + ``handler`` (required): e.g. ``Code.from_asset("handlers")`` and ``"orders.handler"``.
    - ``business_tables``: other tables its transactions write (same item-level actions).
    - ``environment``: extra variables. ``timeout``: default 10 s. ``memory_size``: default 512 MB.
    - ``architecture``: default ARM_64. ``log_retention``: default one month.
    - ``reserved_concurrent_executions``: default unreserved.

    Attributes: ``function``, ``role``, ``log_group``, ``table``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, code: lambda_.Code,
                 handler: str, business_tables: Sequence[dynamodb.ITable] = (),
                 environment: Mapping[str, str] | None = None, timeout: Duration = DEFAULT_TIMEOUT,
                 memory_size: int = 512, architecture: lambda_.Architecture = lambda_.Architecture.ARM_64,
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
                 reserved_concurrent_executions: int | None = None, description: str | None = None) -> None:
        super().__init__(scope, construct_id)
        self.table = table
        env = {TABLE_ENV: table.table.table_name, HORIZON_ENV: table.retention_env(), **(environment or {})}
        self.function, self.role, self.log_group = python_function(
            self, code=code, handler=handler, environment=env, timeout=timeout, memory_size=memory_size,
            architecture=architecture, log_retention=log_retention, description=description,
            reserved_concurrent_executions=reserved_concurrent_executions, layers=[runtime_layer(self)])
        table.grant_records(self.role)
        for business in business_tables:
            self.grant_business_table(business)

    @property
    def timeout(self) -> Duration:
        """The function's timeout (queue visibility is sized from it)."""
        return self.function.timeout or Duration.seconds(3)

    def grant_business_table(self, business: dynamodb.ITable) -> iam.Grant:
        """Let transactions write items of another table (item-level actions, that table only)."""
        grant = iam.Grant.add_to_principal(grantee=self.role, actions=list(RECORD_ACTIONS),
                                           resource_arns=[business.table_arn])
        if business.encryption_key is not None:
            business.encryption_key.grant_encrypt_decrypt(self.role)
        return grant

    def add_environment(self, name: str, value: str) -> None:
        """Set an environment variable on the function."""
        self.function.add_environment(name, value)

    def metric_errors(self, **props: object) -> cloudwatch.Metric:
        """The function's ``Errors`` metric."""
        return self.function.metric_errors(**props)  # type: ignore[arg-type]

    def metric_fencing_rejections(self) -> cloudwatch.Metric:
        """``FencingRejected`` in the ``retrysafe`` namespace (emitted by the runtime via EMF)."""
        return self.table.metric_fencing_rejections(region=Stack.of(self).region)
