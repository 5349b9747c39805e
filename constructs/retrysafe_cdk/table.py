"""``IdempotencyTable``: the DynamoDB table holding idempotency records and outbox events."""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Duration, IResolvable, IResolveContext, RemovalPolicy, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from constructs import Construct

from .horizon import MIN_HORIZON_SECONDS, RetryHorizon

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "exp"
OUTBOX_INDEX = "outbox-unpublished"
METRICS_NAMESPACE = "retrysafe"
#: Item-level actions a function needs for claims, commits and replays. DynamoDB has no
#: ``dynamodb:TransactWriteItems`` IAM action: a transaction is authorized per item by these.
RECORD_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                  "dynamodb:ConditionCheckItem")
STREAM_ACTIONS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
                  "dynamodb:ListStreams")


@jsii.implements(IResolvable)
class _RetentionToken:
    """Resolves at synthesis, after every queue has added its redelivery window."""

    def __init__(self, table: IdempotencyTable) -> None:
        self._table = table

    @property
    def creation_stack(self) -> list[str]:
        return []

    def resolve(self, _context: IResolveContext) -> str:
        return str(self._table.retention_seconds)

    def to_string(self) -> str:
        return Token.as_string(self)


class IdempotencyTable(Construct):
    """The idempotency table: on-demand, point-in-time recovery, encrypted, TTL on ``exp``.

    Props (all optional):

    - ``table``: an existing table to use instead of creating one. It must have the
      partition key ``pk`` (S), TTL on ``exp`` and the ``outbox-unpublished`` GSI
      (``obq`` S / ``at`` S); for an outbox, a NEW_IMAGE stream and ``table_stream_arn``.
    - ``horizon``: the :class:`RetryHorizon` parts (default 7 days before queues).
      Queue consumers add their redelivery window to it.
    - ``record_ttl``: how long records live. Default: the computed horizon. A value
      shorter than the horizon fails synthesis.
    - ``removal_policy``: default ``RETAIN`` (records are the dedup memory).
    - ``encryption_key``: a customer-managed KMS key (default: the AWS-managed key).
    - ``stream``: create the table with a NEW_IMAGE stream (default: only once an outbox
      is attached).

    Attributes: ``table``, ``horizon``, ``retention_seconds``, ``stream_arn``,
    ``encryption_key``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: dynamodb.ITable | None = None,
                 horizon: RetryHorizon | None = None, record_ttl: Duration | None = None,
                 removal_policy: RemovalPolicy = RemovalPolicy.RETAIN, encryption_key: kms.IKey | None = None,
                 stream: bool = False) -> None:
        super().__init__(scope, construct_id)
        self.horizon = horizon or RetryHorizon()
        self.record_ttl_seconds = int(record_ttl.to_seconds()) if record_ttl is not None else None
        if self.record_ttl_seconds is not None and self.record_ttl_seconds < MIN_HORIZON_SECONDS:
            raise ValueError(f"{self.node.path}: record_ttl must be at least 24 hours (the runtime refuses less); "
                             f"got {self.record_ttl_seconds}s. Pass record_ttl=Duration.days(7) or leave it unset.")
        self.encryption_key = encryption_key
        self._stream_arn: str | None = None
        if table is not None:
            self.table: dynamodb.ITable = table
            self._cfn: dynamodb.CfnTable | None = None
            self._stream_arn = table.table_stream_arn
        else:
            created = dynamodb.Table(
                self, "Table",
                partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
                billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
                point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                    point_in_time_recovery_enabled=True),
                encryption=(dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key
                            else dynamodb.TableEncryption.AWS_MANAGED),
                encryption_key=encryption_key,
                time_to_live_attribute=TTL_ATTRIBUTE,
                removal_policy=removal_policy,
            )
            created.add_global_secondary_index(
                index_name=OUTBOX_INDEX,
                partition_key=dynamodb.Attribute(name="obq", type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name="at", type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType.ALL,
            )
            self.table = created
            self._cfn = created.node.default_child  # type: ignore[assignment]
            if stream:
                self.enable_stream()
        self._check_ttl()

    # -- retry horizon -------------------------------------------------------------------------

    @property
    def retention_seconds(self) -> int:
        """Seconds a record lives: ``record_ttl`` when set, else the computed horizon."""
        return self.record_ttl_seconds if self.record_ttl_seconds is not None else self.horizon.total_seconds

    def retention_env(self) -> str:
        """A token resolving (at synth, after every queue is wired) to :attr:`retention_seconds`."""
        return Token.as_string(_RetentionToken(self))

    def add_queue_redelivery(self, name: str, seconds: int) -> None:
        """Account for a wired queue's redelivery window; fails if ``record_ttl`` is now too short."""
        self.horizon = self.horizon.with_queue(name, seconds)
        self._check_ttl()

    def _check_ttl(self) -> None:
        ttl = self.record_ttl_seconds
        if ttl is not None and ttl < self.horizon.total_seconds:
            total = self.horizon.total_seconds
            raise ValueError(
                f"{self.node.path}: record_ttl ({ttl}s) is shorter than the retry horizon ({total}s = "
                f"{self.horizon.describe()}). Records would expire while retries can still arrive, and a late "
                f"retry would run twice. Fix: raise record_ttl to at least Duration.seconds({total}) or leave it "
                "unset (it then follows the horizon), or shorten the parts: the queue's retention_period, the "
                "DLQ's retention, or RetryHorizon.of(...)."
            )

    # -- stream ----------------------------------------------------------------------------------

    def enable_stream(self) -> str:
        """Turn on the NEW_IMAGE stream (the outbox needs it) and return its ARN."""
        if self._stream_arn is not None:
            return self._stream_arn
        if self._cfn is None:
            raise ValueError(f"{self.node.path}: the existing table has no stream ARN. Enable a NEW_IMAGE stream on "
                             "it and pass Table.from_table_attributes(..., table_stream_arn=...) (or the Table "
                             "object itself, created with stream=StreamViewType.NEW_IMAGE).")
        self._cfn.stream_specification = dynamodb.CfnTable.StreamSpecificationProperty(stream_view_type="NEW_IMAGE")
        self._stream_arn = self._cfn.attr_stream_arn
        return self._stream_arn

    @property
    def stream_arn(self) -> str | None:
        """The stream's ARN, once a stream is enabled."""
        return self._stream_arn

    # -- grants ----------------------------------------------------------------------------------

    def _grant(self, grantee: iam.IGrantable, actions: tuple[str, ...], resources: list[str]) -> iam.Grant:
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=list(actions), resource_arns=resources)
        if self.encryption_key is not None:
            self.encryption_key.grant_encrypt_decrypt(grantee)
        return grant

    def grant_records(self, grantee: iam.IGrantable) -> iam.Grant:
        """Claim, commit, replay and release records: item-level actions on this table only."""
        return self._grant(grantee, RECORD_ACTIONS, [self.table.table_arn])

    def grant_sweep(self, grantee: iam.IGrantable) -> iam.Grant:
        """Query the ``outbox-unpublished`` index and mark events published (the sweeper)."""
        self._grant(grantee, ("dynamodb:Query",), [f"{self.table.table_arn}/index/{OUTBOX_INDEX}"])
        return self._grant(grantee, ("dynamodb:GetItem", "dynamodb:UpdateItem"), [self.table.table_arn])

    def grant_stream_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read this table's stream (enables it if needed), scoped to the stream's ARN."""
        return self._grant(grantee, STREAM_ACTIONS, [self.enable_stream()])

    # -- metrics ---------------------------------------------------------------------------------

    def metric(self, name: str, **props: Any) -> cloudwatch.Metric:
        """A ``retrysafe`` namespace metric the runtime emits (EMF), summed per 5 minutes."""
        return cloudwatch.Metric(namespace=METRICS_NAMESPACE, metric_name=name,
                                 statistic=props.pop("statistic", "Sum"), **props)

    def metric_fencing_rejections(self, **props: Any) -> cloudwatch.Metric:
        """``FencingRejected``: a zombie invocation tried to write after its lease was taken over."""
        return self.metric("FencingRejected", **props)

    def metric_key_mismatches(self, **props: Any) -> cloudwatch.Metric:
        """``KeyMismatch``: a key was reused with a different payload (422)."""
        return self.metric("KeyMismatch", **props)

    def add_fencing_alarm(self, threshold: int = 1) -> cloudwatch.Alarm:
        """Alarm when any fencing rejection happens in 5 minutes."""
        return self.metric_fencing_rejections().create_alarm(
            self, "FencingRejectedAlarm", threshold=threshold, evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="retrysafe: a zombie invocation was fenced off (lease taken over)")
