"""``IdempotencyTable``: the DynamoDB table holding idempotency records and outbox events."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import (
    Arn,
    ArnFormat,
    CfnResource,
    Duration,
    IResolvable,
    IResolveContext,
    RemovalPolicy,
    Stack,
    Token,
)
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_pipes as pipes
from retrysafe import HomeRegions, names
from retrysafe import metrics as runtime_metrics

from constructs import Construct, IConstruct, IValidation

from ._props import refuse_ignored
from .alarms import AlarmOptions, add_alarm
from .horizon import RetryHorizon
from .targets import OutboxTarget

#: The outbox index's partition and sort keys (both strings).
_OUTBOX_INDEX_KEYS = (names.UNPUBLISHED_ATTRIBUTE, names.COMMITTED_AT_ATTRIBUTE)
#: Item-level actions a function needs for claims, commits and replays. DynamoDB has no
#: ``dynamodb:TransactWriteItems`` IAM action: a transaction is authorized per item by these.
RECORD_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                  "dynamodb:ConditionCheckItem")
STREAM_ACTIONS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator",
                  "dynamodb:ListStreams")
#: What reading and writing items of a table encrypted with a customer-managed key needs (no
#: ``kms:ReEncrypt*`` or ``kms:GenerateDataKey*`` wildcards, as ``Key.grant_encrypt_decrypt`` grants).
KEY_WRITE_ACTIONS = ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")
#: What reading a customer-managed-key table's items or stream needs.
KEY_READ_ACTIONS = ("kms:Decrypt",)
#: Stream views whose records carry the new item (the outbox filter matches ``dynamodb.NewImage.kind``).
_OUTBOX_STREAM_VIEWS = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")


def grant_key(grantee: iam.IGrantable, key: kms.IKey, actions: tuple[str, ...]) -> iam.Grant:
    """Exactly ``actions`` on ``key`` (in the grantee's policy)."""
    return iam.Grant.add_to_principal(grantee=grantee, actions=list(actions), resource_arns=[key.key_arn])


def _region(table: dynamodb.ITable) -> str | None:
    """The table's region when known at synthesis: from its ARN when imported by one, else its stack's."""
    region = table.env.region
    if not Token.is_unresolved(table.table_arn):  # Table.from_table_arn keeps its stack's env, not the ARN's
        region = Arn.split(table.table_arn, ArnFormat.SLASH_RESOURCE_NAME).region or region
    return None if Token.is_unresolved(region) else region


def check_same_region(scope: Construct, table: dynamodb.ITable, what: str, *, why: str | None = None) -> None:
    """Refuse a table in another region than ``scope``'s stack (the runtime reaches tables by name, in its region).

    ``why``: what would go wrong instead, when it is not the runtime's calls by table name (a stream's
    event source mapping, say).
    """
    table_region, own_region = _region(table), Stack.of(scope).region
    if table_region is None or Token.is_unresolved(own_region) or table_region == own_region:
        return
    why = why or (f"The runtime calls DynamoDB by table name in its own region, so it would get ResourceNotFound "
                  f"there (or write a same-named table of {own_region}).")
    raise ValueError(
        f"{scope.node.path}: {what} {table.node.path} is in {table_region}, the function in {own_region}. {why} "
        f"Fix: put the function in a stack of {table_region}, or give the table a replica in {own_region} "
        f"(dynamodb.TableV2(..., replicas=[ReplicaTableProps(region={own_region!r})])) and pass that region's "
        f"replica (TableV2.replica({own_region!r})).")


#: The most processes that may read one DynamoDB stream shard at the same time. The DynamoDB Streams API
#: (``LimitExceededException``): "More than 2 processes are reading from the same streams shard at the same
#: time. Exceeding this limit may result in request throttling." Each Lambda event source mapping and each
#: EventBridge Pipe on a stream is one such process, on every shard.
_MAX_STREAM_READERS = 2
#: Where the app's root keeps its stream readers (stream key -> reader paths), across stacks.
_STREAM_READERS = "_retrysafe_stream_readers"


def add_stream_reader(table: dynamodb.ITable, reader: Construct) -> None:
    """Record that ``reader`` (an outbox relay or a stream consumer) polls ``table``'s stream; refuse a third.

    Readers are counted per app, across stacks: by the stream's ARN when it is a literal (an
    imported table, however many times it is imported), else by the table construct.
    """
    registry: dict[str, list[Construct]] = vars(reader.node.root).setdefault(_STREAM_READERS, {})
    arn = table.table_stream_arn
    readers = registry.setdefault(arn if arn is not None and not Token.is_unresolved(arn) else table.node.path, [])
    if len(readers) >= _MAX_STREAM_READERS:
        raise ValueError(_too_many_readers(reader.node.path, table.node.path, [r.node.path for r in readers]))
    if not readers:  # checked once per stream, at synthesis: the app's other mappings may come later
        reader.node.add_validation(_StreamReaderCheck(table, readers))
    readers.append(reader)


def _too_many_readers(path: str, table: str, readers: Sequence[str]) -> str:
    return (f"{path}: the stream of the table {table} is already read by {' and '.join(readers)}, and DynamoDB "
            f"Streams serves at most {_MAX_STREAM_READERS} processes reading one shard at the same time: a third "
            "reader's GetRecords calls are throttled and every reader falls behind (a growing IteratorAge), with no "
            "error at deploy time. Fix: read the stream once and fan out from there: one consumer (or an "
            "EventBridge Pipe) publishing the changes to an EventBridge bus, with an IdempotentEventRule per "
            "service (for the outbox: publish it to a bus or topic the services subscribe to); or stream the "
            "table to Kinesis (Table(kinesis_stream=...)) and consume that with "
            "IdempotentStreamConsumer(existing_stream=...).")


def _stream_sources(scope: IConstruct) -> list[tuple[IConstruct, str]]:
    """Every event source mapping and EventBridge Pipe at or below ``scope``, with the ARN it reads."""
    found: list[tuple[IConstruct, str]] = []
    for child in scope.node.find_all():
        if isinstance(child, lambda_.CfnEventSourceMapping) and child.event_source_arn is not None:
            found.append((child, child.event_source_arn))
        elif isinstance(child, pipes.CfnPipe):
            found.append((child, child.source))
    return found


@jsii.implements(IValidation)
class _StreamReaderCheck:
    """The retrysafe readers of one stream plus the app's own mappings and pipes on it (a
    ``DynamoEventSource``, a ``CfnEventSourceMapping``, a Pipe): at synthesis, when all are there."""

    def __init__(self, table: dynamodb.ITable, readers: list[Construct]) -> None:
        self._table, self._readers = table, readers

    def validate(self) -> list[str]:
        readers = self._readers
        arns = {arn for reader in readers for _, arn in _stream_sources(reader)}
        if self._table.table_stream_arn is not None:
            arns.add(self._table.table_stream_arn)
        owned = {source.node.path for reader in readers for source, _ in _stream_sources(reader)}
        others = [source.node.path for source, arn in _stream_sources(readers[0].node.root)
                  if arn in arns and source.node.path not in owned]
        if len(readers) + len(others) <= _MAX_STREAM_READERS:
            return []
        return [_too_many_readers(readers[-1].node.path, self._table.node.path,
                                  [*(r.node.path for r in readers[:-1]), *others])]


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


def _existing_table_problems(table: dynamodb.ITable, relays: bool) -> list[str] | None:
    """What an existing ``Table``/``TableV2`` of this app lacks; ``None`` for an imported table (unknowable).

    ``relays``: an outbox relay reads the table's stream, which must then carry new images.
    """
    cfn = table.node.default_child
    if not isinstance(cfn, (dynamodb.CfnTable, dynamodb.CfnGlobalTable)):
        return None
    stack = Stack.of(table)
    keys = stack.resolve(cfn.key_schema) or []
    types = {a["attributeName"]: a["attributeType"] for a in stack.resolve(cfn.attribute_definitions) or []}
    ttl = stack.resolve(cfn.time_to_live_specification) or {}
    indexes = {i["indexName"]: i for i in stack.resolve(cfn.global_secondary_indexes) or []}
    problems = []
    if [(k["attributeName"], k["keyType"]) for k in keys] != [(names.PARTITION_KEY, "HASH")] or \
            types.get(names.PARTITION_KEY) != "S":
        problems.append(f"its key must be the partition key {names.PARTITION_KEY!r} (S) alone")
    if not (ttl.get("enabled") is True and ttl.get("attributeName") == names.TTL_ATTRIBUTE):
        problems.append(f"TTL must be enabled on {names.TTL_ATTRIBUTE!r} (time_to_live_attribute={names.TTL_ATTRIBUTE!r}); "
                        "without it records never expire")
    index = indexes.get(names.OUTBOX_INDEX)
    hash_key, range_key = _OUTBOX_INDEX_KEYS
    expected = [(hash_key, "HASH"), (range_key, "RANGE")]
    if index is None or [(k["attributeName"], k["keyType"]) for k in index["keySchema"]] != expected or \
            types.get(hash_key) != "S" or types.get(range_key) != "S" or \
            (index.get("projection") or {}).get("projectionType") != "ALL":
        problems.append(f"it needs the global secondary index {names.OUTBOX_INDEX!r} (partition key {hash_key!r} S, sort "
                        f"key {range_key!r} S, projection ALL), which the outbox sweeper queries: "
                        f"table.add_global_secondary_index(index_name={names.OUTBOX_INDEX!r}, partition_key=Attribute("
                        f"name={hash_key!r}, type=AttributeType.STRING), sort_key=Attribute(name={range_key!r}, "
                        "type=AttributeType.STRING))")
    view = _stream_view(cfn)
    if relays and view is not None and view not in _OUTBOX_STREAM_VIEWS:
        problems.append(f"its stream is {view}, and the outbox relay matches the new image of each record "
                        "(dynamodb.NewImage.kind), so no event would ever be published (the Outbox's sweeper "
                        "would send each one 15-20 minutes late; OutboxPipe never). Fix: create the table with "
                        "stream=StreamViewType.NEW_IMAGE (or NEW_AND_OLD_IMAGES)")
    return problems


def _stream_view(cfn: dynamodb.CfnTable | dynamodb.CfnGlobalTable) -> str | None:
    """The table's stream view type, or None without a stream.

    Read from the rendered properties: a TableV2 without a stream has a ``stream_specification``
    whose view type is undefined, which jsii cannot return.
    """
    rendered = Stack.of(cfn).resolve(cfn._cfn_properties).get("streamSpecification") or {}
    view = rendered.get("streamViewType")
    return str(view) if view is not None else None


def _global_table(table: dynamodb.ITable) -> IConstruct | None:
    """The ``TableV2`` of this app whose replica ``table`` is (``TableV2.replica(region)`` imports the replica
    below that table), else None."""
    scope = table.node.scope
    if table.node.default_child is None and scope is not None and \
            isinstance(scope.node.default_child, dynamodb.CfnGlobalTable):
        return scope
    return None


def replica_regions(table: dynamodb.ITable) -> tuple[list[str | None], str | None]:
    """The regions of ``table``'s replicas other than its own (``None`` for one unknown at synthesis) and its
    global table consistency mode (``EVENTUAL``/``STRONG``; ``None`` when not a TableV2). A replica of a
    ``TableV2`` (``TableV2.replica(region)``) has that table's other regions; an imported table has none
    that synthesis can see."""
    source = _global_table(table) or table
    stack = Stack.of(source)
    cfn = source.node.default_child
    if isinstance(cfn, dynamodb.CfnGlobalTable):
        own = stack.resolve(stack.region) if source is table else _region(table)
        regions = [replica.get("region") for replica in stack.resolve(cfn.replicas) or []]
        mode = stack.resolve(cfn.multi_region_consistency)
        return ([r if isinstance(r, str) else None for r in regions if r != own],
                str(mode) if mode is not None else None)
    found: list[str | None] = []
    for child in table.node.find_all():
        if isinstance(child, CfnResource) and child.cfn_resource_type == "Custom::DynamoDBReplica":
            region = stack.resolve(child._cfn_properties).get("Region")
            found.append(region if isinstance(region, str) else None)
    return found, None


def _missing_homes(homes: HomeRegions, table: dynamodb.ITable) -> tuple[list[str], list[str]] | None:
    """The home regions where ``table`` has no replica, and the regions it has; None when synthesis cannot
    know (an imported table, or an environment-agnostic stack)."""
    replicas, _ = replica_regions(table)
    known = {_region(table), *replicas}
    if (table.node.default_child is None and _global_table(table) is None) or None in known:
        return None
    regions = sorted(r for r in known if r is not None)
    return sorted(homes.regions - set(regions)), regions


#: Where the app's root keeps its IdempotencyTables by the DynamoDB table they use, across stacks.
_TABLES = "_retrysafe_idempotency_tables"


def _table_identity(table: dynamodb.ITable) -> str:
    """One key per DynamoDB table, all its replicas included: its name when literal (however often it is
    imported, in whichever region), with its account when the stack names one (account-agnostic stacks
    deploy to the one account of the deploying credentials); else the table construct (or its global table's)."""
    source = _global_table(table) or table
    cfn = source.node.default_child
    name = cfn.table_name if isinstance(cfn, (dynamodb.CfnTable, dynamodb.CfnGlobalTable)) else table.table_name
    if name is None or Token.is_unresolved(name):
        return source.node.path
    account = table.env.account
    return f"{'*' if Token.is_unresolved(account) else account}/{name}"


@jsii.implements(IValidation)
class BusinessTableCheck:
    """A business table that home regions send transactions to must have a replica in each home region
    (checked at synthesis, so replicas added later count)."""

    def __init__(self, scope: Construct, owner: IdempotencyTable, business: dynamodb.ITable) -> None:
        self._scope, self._owner, self._business = scope, owner, business

    def validate(self) -> list[str]:
        """The refusal, with the fix, when a home region lacks a replica of the business table."""
        homes, business = self._owner.home_regions, self._business
        found = _missing_homes(homes, business) if homes is not None else None
        if not found or not found[0]:
            return []
        missing, regions = found
        return [(f"{self._scope.node.path}: the business table {business.node.path} has no replica in "
                 f"{', '.join(missing)} (it is in {', '.join(regions)}), and the home_regions of "
                 f"{self._owner.node.path} send the transactions of the tenants homed there to that region, where "
                 "they would fail (ResourceNotFoundException) at run time. Fix: make it a global table with a "
                 "replica in each home region (dynamodb.TableV2(..., replicas=[dynamodb.ReplicaTableProps("
                 "region=...)]); in another region's stack pass its TableV2.replica(region)), or home those "
                 "tenants where the table is.")]


@jsii.implements(IValidation)
class _RegionCheck:
    """A table with replicas needs a stated strategy: checked at synthesis, so replicas added later count."""

    def __init__(self, owner: IdempotencyTable) -> None:
        self._owner = owner

    def validate(self) -> list[str]:
        owner = self._owner
        replicas, mode = replica_regions(owner.table)
        where = f"{owner.node.path}: the table {owner.table.node.path}"
        if mode == "STRONG":
            return [(f"{where} is a global table in multi-Region strong consistency (MRSC). MRSC does not support "
                    "transactions (TransactWriteItems), which both execution modes commit with (atomic: one "
                    "transaction; claim-first: a conditional PutItem, then one), nor TTL on exp. Fix: create it "
                    "in multi-Region eventual consistency (the default) with IdempotencyTable(home_regions="
                    "HomeRegions(...)), or without replicas.")]
        homes = owner.home_regions
        peers = [t for t in vars(owner.node.root).get(_TABLES, {}).get(_table_identity(owner.table), [])
                 if t is not owner]
        if replicas and homes is None:
            regions = ", ".join(r or "a region unknown at synthesis" for r in [_region(owner.table), *replicas])
            return [f"{where} has replicas ({regions}) and no stated multi-region strategy. {_LAST_WRITER_WINS}"]
        if homes is None:
            stated = [p.node.path for p in peers if p.home_regions is not None or replica_regions(p.table)[0]]
            if stated:  # the same table, with replicas or home regions there: this is one of its replicas
                return [(f"{where} is also the table of {' and '.join(stated)}, a global table (replicas or "
                         f"home_regions there), and has no stated multi-region strategy here. {_LAST_WRITER_WINS}")]
            return []
        problems = []
        others = [p.node.path for p in peers if p.home_regions is not None and p.home_regions != homes]
        if others:
            problems.append(
                f"{where} is also the table of {' and '.join(others)}, whose home_regions differ from these: a "
                "tenant would have one home in this stack's functions and another in theirs, and both regions "
                "would claim and commit its keys, each on its own replica. Fix: one mapping per global table: "
                "pass the same HomeRegions to every IdempotencyTable of it (one constant the stacks import, as "
                "on the multi-region page of the docs).")
        found = _missing_homes(homes, owner.table)
        if found and found[0]:
            missing, present = found
            problems.append(f"{owner.node.path}: home_regions names {', '.join(missing)}, where the table "
                            f"{owner.table.node.path} has no replica (it has {', '.join(present)}). "
                            "Fix: add a replica there or home those tenants in a region that has one.")
        return problems


#: Why a table with replicas needs a strategy, and the fix.
_LAST_WRITER_WINS = (
    "A global table in multi-Region eventual consistency evaluates each condition against the replica of the "
    "region that receives the write, keeps a transaction atomic in that region only, and resolves concurrent "
    "writes last-writer-wins: an invocation of one intent in each region would both win the claim and both "
    "commit their effect. Fix: pass home_regions=HomeRegions('<region>', tenants={...}) (every claim and commit "
    "of a tenant is then sent to its home region's replica: one more cross-region hop for functions elsewhere, "
    "no extra round trip), or remove the replicas. See the multi-region page of the docs.")


@jsii.implements(IValidation)
class _ExistingTableCheck:
    """Checked at synthesis, so that an index added after the construct still counts."""

    def __init__(self, owner: IdempotencyTable, table: dynamodb.ITable) -> None:
        self._owner, self._table = owner, table

    def validate(self) -> list[str]:
        problems = _existing_table_problems(self._table, bool(self._owner.relays)) or []
        return [f"{self._owner.node.path}: the existing table {self._table.node.path} cannot hold idempotency "
                f"records: {problem}." for problem in problems]


class IdempotencyTable(Construct):
    """The idempotency table: on-demand, point-in-time recovery, encrypted, TTL on ``exp``.

    Props (all optional):

    :param existing_table: a table to use instead of creating one. It must have the partition key
        ``pk`` (S), TTL on ``exp`` and the ``outbox-unpublished`` GSI (``obq`` S / ``at`` S,
        projection ALL); for an outbox, a NEW_IMAGE (or NEW_AND_OLD_IMAGES) stream and
        ``table_stream_arn``. A ``Table`` or ``TableV2`` of this app that lacks any of these fails
        synthesis with the fix; an imported table (``Table.from_table_attributes``) cannot be
        inspected and is assumed to have them. An L1 ``CfnTable`` is refused (wrap it with
        ``Table.from_table_attributes``). Its encryption key is its own. @default a new table.
    :param table_props: other ``dynamodb.Table`` props of the created table (e.g.
        ``deletion_protection``, ``contributor_insights_enabled``, ``table_name``), applied last.
        The key schema and the TTL attribute are the runtime's contract and are refused here.
        @default none. Refused with ``existing_table``, as are the other created-table props below.
    :param logical_id: the created table's CloudFormation logical id, pinned: moving or renaming this
        construct then keeps the table (see "Moving the stateful resources" in the constructs docs).
        @default derived from the construct path, as CDK does.
    :param horizon: the :class:`RetryHorizon` parts. @default 7 days before queues; queue consumers add
        their redelivery window to it.
    :param record_ttl: how long records live. @default the computed horizon. A value shorter than the
        horizon fails synthesis.
    :param removal_policy: @default ``RETAIN`` (records are the dedup memory).
    :param encryption_key: a customer-managed KMS key. @default the AWS-managed key.
    :param stream: create the table with a NEW_IMAGE stream. @default False (enabled once an outbox is attached).
    :param home_regions: the multi-region strategy, required once the table has replicas (a global
        table: an existing ``TableV2`` with ``replicas=``, or its ``TableV2.replica(region)``;
        ``table_props={"replication_regions": [...]}`` is refused, CDK's replica custom resource
        fails cdk-nag). A table with replicas and no strategy fails synthesis, as do one in
        multi-Region strong consistency and two different mappings for one table (by its name) in
        the app. Every claim and commit of a tenant is sent to its home region's replica;
        the functions get the mapping in their environment and a grant on the home regions' replicas;
        the outbox relay must run in the stack of ``home_regions.default``. @default none (one region).

    Attributes: ``table``, ``horizon``, ``retention_seconds``, ``stream_arn``,
    ``encryption_key``, ``relays`` (the outbox relay attached: :class:`Outbox` / :class:`OutboxPipe`),
    ``subscribers`` (the consumers' subscribers, see :meth:`claim_subscriber`), ``fencing_alarm``
    (once :meth:`add_fencing_alarm` ran).
    """

    def __init__(self, scope: Construct, construct_id: str, *, existing_table: dynamodb.ITable | None = None,
                 table_props: Mapping[str, Any] | None = None, logical_id: str | None = None,
                 horizon: RetryHorizon | None = None, record_ttl: Duration | None = None,
                 removal_policy: RemovalPolicy | None = None, encryption_key: kms.IKey | None = None,
                 stream: bool = False, home_regions: HomeRegions | None = None) -> None:
        super().__init__(scope, construct_id)
        self.home_regions = home_regions
        fixed = sorted(set(table_props or {}) & {"partition_key", "sort_key", "time_to_live_attribute"})
        if fixed:
            raise ValueError(f"{self.node.path}: table_props cannot set {', '.join(fixed)}: the runtime reads and "
                             f"writes items keyed by {names.PARTITION_KEY!r} alone and expires them through "
                             f"{names.TTL_ATTRIBUTE!r}.")
        if "replication_regions" in (table_props or {}):
            raise ValueError(
                f"{self.node.path}: table_props cannot set replication_regions: a Table's replicas are made by "
                "CDK's replica custom resource (a Lambda function and a provider framework), which cdk-nag "
                "flags and which creates the replicas one at a time. Fix: create a dynamodb.TableV2 with "
                f"replicas=[dynamodb.ReplicaTableProps(region=...)] (partition key {names.PARTITION_KEY!r} (S), "
                f"TTL on {names.TTL_ATTRIBUTE!r}, the {names.OUTBOX_INDEX!r} index, a NEW_IMAGE stream for an "
                "outbox) and pass existing_table=it, "
                "home_regions=HomeRegions(...); the multi-region page of the docs has it.")
        if isinstance(existing_table, CfnResource):
            raise TypeError(f"{self.node.path}: existing_table={existing_table.node.path} is an L1 CfnTable, which "
                            "has no table_arn or table_stream_arn to grant on. Fix: pass dynamodb.Table."
                            "from_table_attributes(scope, id, table_name=cfn.ref, table_stream_arn=cfn.attr_"
                            "stream_arn, encryption_key=...) (or the L2 Table itself).")
        if existing_table is not None:
            refuse_ignored(self, "existing_table", existing_table,
                           {"table_props": table_props, "logical_id": logical_id, "removal_policy": removal_policy,
                            "encryption_key": encryption_key, "stream": stream or None},
                           "set them on that table (a customer-managed key is read from the table: for an imported "
                           "one, Table.from_table_attributes(..., encryption_key=key); its stream: "
                           "stream=StreamViewType.NEW_IMAGE)")
        self.horizon = horizon or RetryHorizon()
        self.record_ttl_seconds = int(record_ttl.to_seconds()) if record_ttl is not None else None
        if self.record_ttl_seconds is not None and self.record_ttl_seconds < names.MIN_HORIZON_SECONDS:
            raise ValueError(f"{self.node.path}: record_ttl must be at least 24 hours (the runtime refuses less); "
                             f"got {self.record_ttl_seconds}s. Pass record_ttl=Duration.days(7) or leave it unset.")
        self.relays: list[Construct] = []
        self.subscribers: dict[str, str] = {}
        self.fencing_alarm: cloudwatch.Alarm | None = None
        self._relay_targets: list[OutboxTarget] = []
        self._stream_arn: str | None = None
        if existing_table is not None:
            self.table: dynamodb.ITable = existing_table
            self.encryption_key = existing_table.encryption_key
            self._cfn: dynamodb.CfnTable | None = None
            self._stream_arn = existing_table.table_stream_arn
            self.node.add_validation(_ExistingTableCheck(self, existing_table))
        else:
            self.encryption_key = encryption_key
            props: dict[str, Any] = {
                "partition_key": dynamodb.Attribute(name=names.PARTITION_KEY, type=dynamodb.AttributeType.STRING),
                "billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST,
                "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
                    point_in_time_recovery_enabled=True),
                "encryption": (dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key
                               else dynamodb.TableEncryption.AWS_MANAGED),
                "encryption_key": encryption_key, "time_to_live_attribute": names.TTL_ATTRIBUTE,
                "removal_policy": removal_policy or RemovalPolicy.RETAIN, **(table_props or {})}
            created = dynamodb.Table(self, "Table", **props)
            created.add_global_secondary_index(
                index_name=names.OUTBOX_INDEX,
                partition_key=dynamodb.Attribute(name=_OUTBOX_INDEX_KEYS[0], type=dynamodb.AttributeType.STRING),
                sort_key=dynamodb.Attribute(name=_OUTBOX_INDEX_KEYS[1], type=dynamodb.AttributeType.STRING),
                projection_type=dynamodb.ProjectionType.ALL,
            )
            self.table = created
            self._cfn = created.node.default_child  # type: ignore[assignment]
            if logical_id is not None:
                created.node.default_child.override_logical_id(logical_id)  # type: ignore[union-attr]
            if stream:
                self.enable_stream()
        vars(self.node.root).setdefault(_TABLES, {}).setdefault(_table_identity(self.table), []).append(self)
        self.node.add_validation(_RegionCheck(self))
        self._check_ttl()

    # -- regions ---------------------------------------------------------------------------------

    def home_environment(self) -> dict[str, str]:
        """The functions' environment naming the home regions (empty without ``home_regions``)."""
        homes = self.home_regions
        if homes is None:
            return {}
        environment = {names.HOME_REGION_ENV: homes.default}
        if homes.tenants:
            environment[names.TENANT_HOME_REGIONS_ENV] = json.dumps(dict(homes.tenants), sort_keys=True)
        return environment

    def home_arns(self, scope: Construct, table: dynamodb.ITable) -> list[str]:
        """``table``'s ARN in each home region other than ``scope``'s (where its transactions are sent)."""
        if self.home_regions is None:
            return []
        stack = Stack.of(scope)
        return [stack.format_arn(service="dynamodb", resource="table", resource_name=table.table_name, region=region)
                for region in sorted(self.home_regions.regions) if region != stack.region]

    def claim_subscriber(self, subscriber: str, consumer: Construct) -> None:
        """Record that ``consumer`` processes messages as ``subscriber``; refuse a second consumer with it.

        Processed-message records are scoped by (subscriber, operation, key): two consumers of this
        table with one subscriber (and the same handler, whose ``module.qualname`` is the operation)
        would acknowledge each other's messages as duplicates without running them.
        """
        owner = self.subscribers.get(subscriber)
        if owner is not None:
            raise ValueError(
                f"{consumer.node.path}: the subscriber {subscriber!r} is already used by {owner} on the idempotency "
                f"table {self.node.path}. With the same handler, each consumer would acknowledge the other's "
                "messages as duplicates without running them. Fix: pass a distinct subscriber=... to one of them "
                "(a stable name of what it does, e.g. subscriber=\"reserve-stock\").")
        self.subscribers[subscriber] = consumer.node.path

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

    def _grant(self, grantee: iam.IGrantable, actions: tuple[str, ...], resources: list[str],
               key_actions: tuple[str, ...] = KEY_WRITE_ACTIONS) -> iam.Grant:
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=list(actions), resource_arns=resources)
        if self.encryption_key is not None:
            grant = grant.combine(grant_key(grantee, self.encryption_key, key_actions))
        return grant

    def grant_records(self, grantee: iam.IGrantable, actions: Sequence[str] = RECORD_ACTIONS) -> iam.Grant:
        """Item-level ``actions`` on this table only (and its replicas in the home regions): by default what
        claims, commits, replays and releases need."""
        scope = grantee if isinstance(grantee, Construct) else self
        return self._grant(grantee, tuple(actions), [self.table.table_arn, *self.home_arns(scope, self.table)])

    def grant_sweep(self, grantee: iam.IGrantable) -> iam.Grant:
        """Query the ``outbox-unpublished`` index and mark events published (the sweeper: nothing else)."""
        query = self._grant(grantee, ("dynamodb:Query",), [f"{self.table.table_arn}/index/{names.OUTBOX_INDEX}"],
                            KEY_READ_ACTIONS)
        return query.combine(self._grant(grantee, ("dynamodb:UpdateItem",), [self.table.table_arn]))

    def grant_stream_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Read this table's stream (enables it if needed), scoped to the stream's ARN."""
        return self._grant(grantee, STREAM_ACTIONS, [self.enable_stream()], KEY_READ_ACTIONS)

    # -- outbox relays ---------------------------------------------------------------------------

    def add_relay(self, relay: Construct, target: OutboxTarget) -> None:
        """Record that ``relay`` publishes this table's outbox to ``target``; a second relay is refused.

        Events carry one published/parked marker, so a second relay's success would hide the first
        one's failures (and two relays take both stream readers DynamoDB allows per shard).
        """
        homes, region = self.home_regions, Stack.of(relay).region
        if homes is not None and region != homes.default:
            raise ValueError(
                f"{relay.node.path}: the outbox of {self.node.path} has home regions, so its relay runs in one "
                f"region only, the default home region {homes.default} (this stack's region is {region}). Every "
                "replica's stream carries every event (the ones written there and the replicated ones), so a "
                "relay per region would publish each event once per region. Fix: attach the relay in a stack of "
                f"{homes.default} (env=Environment(region={homes.default!r})), and none elsewhere.")
        if self.relays:
            raise ValueError(
                f"{relay.node.path}: the outbox of {self.node.path} is already published by {self.relays[0].node.path}. "
                "Events carry one published/parked marker, so one relay's success would hide the other's failures, "
                "and two relays use both stream readers DynamoDB allows per shard. Fix: publish to one target and "
                "fan out from there (an EventBridge rule with several targets, or an SNS topic with several "
                "subscriptions), or give the second service its own IdempotencyTable.")
        add_stream_reader(self.table, relay)
        self.relays.append(relay)
        self._relay_targets.append(target)

    @property
    def relay_targets(self) -> Sequence[OutboxTarget]:
        """The targets this table's outbox is published to (one per attached relay)."""
        return tuple(self._relay_targets)

    # -- metrics ---------------------------------------------------------------------------------

    def metric(self, metric_name: str, **options: Any) -> cloudwatch.Metric:
        """A metric the runtime emits (EMF): its namespace and dimensions come from ``retrysafe.metrics``.

        ``options`` are ``cloudwatch.MetricOptions`` fields (``period``, ``statistic``, ``label``,
        ``region``...); the default is the sum per 5 minutes.
        """
        cloudwatch.MetricOptions(**options)  # refuses unknown option names
        base = cloudwatch.Metric(namespace=runtime_metrics.DEFAULT_NAMESPACE, metric_name=metric_name,
                                 dimensions_map=dict(runtime_metrics.DIMENSIONS), statistic="Sum",
                                 period=Duration.minutes(5))
        return base.with_(**options) if options else base

    def metric_fencing_rejections(self, **options: Any) -> cloudwatch.Metric:
        """``FencingRejected``: a zombie invocation tried to write after its lease was taken over."""
        return self.metric(runtime_metrics.FENCING_REJECTED, **options)

    def metric_key_mismatches(self, **options: Any) -> cloudwatch.Metric:
        """``KeyMismatch``: a key was reused with a different payload (422)."""
        return self.metric(runtime_metrics.KEY_MISMATCH, **options)

    def metric_replays(self, **options: Any) -> cloudwatch.Metric:
        """``Replayed``: a retry answered from its record."""
        return self.metric(runtime_metrics.REPLAYED, **options)

    def metric_in_flight_conflicts(self, **options: Any) -> cloudwatch.Metric:
        """``InFlightConflict``: a retry arrived while the first request still ran (409)."""
        return self.metric(runtime_metrics.IN_FLIGHT, **options)

    def metric_replayed_from_powertools(self, **options: Any) -> cloudwatch.Metric:
        """``ReplayedFromPowertools``: a first request answered from a Powertools record (cut-over; it goes to zero
        as the old records expire, then the cut-over can be removed)."""
        return self.metric(runtime_metrics.LEGACY_REPLAYED, **options)

    def metric_parked_events(self, **options: Any) -> cloudwatch.Metric:
        """``OutboxEventParked``: outbox events their target refused permanently."""
        return self.metric(runtime_metrics.OUTBOX_EVENT_PARKED, **options)

    def add_fencing_alarm(self, threshold: int = 1, **alarm: Any) -> cloudwatch.Alarm:
        """Alarm when any fencing rejection happens in 5 minutes (``alarm``: :class:`AlarmOptions` fields)."""
        self.fencing_alarm = add_alarm(
            self, "FencingRejectedAlarm", self.metric_fencing_rejections(), threshold=threshold,
            description="retrysafe: a zombie invocation was fenced off (lease taken over)",
            options=AlarmOptions(**alarm))
        return self.fencing_alarm
