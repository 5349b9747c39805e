"""``WebhookReceiver``: signed webhooks in, receipts through the outbox, heavy work on a queue."""

from __future__ import annotations

import json
import math

import jsii
from aws_cdk import CfnElement, Duration, IResolvable, IResolveContext, RemovalPolicy, Stack, Token
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from retrysafe import names

from constructs import Construct, IValidation

from ._props import refuse_ignored, struct_values
from .api import IdempotentHttpApi, IdempotentRestApi
from .function import IdempotentFunction, with_defaults
from .nag import acknowledge
from .queue import IdempotentQueueConsumer, QueueConsumerProps
from .table import IdempotencyTable
from .targets import OutboxTarget


@jsii.implements(IValidation)
class _RelayCheck:
    """At synthesis: something must publish the table's outbox to the bus the receipt rule listens on."""

    def __init__(self, receiver: WebhookReceiver, table: IdempotencyTable, target: OutboxTarget) -> None:
        self._receiver, self._table, self._target = receiver, table, target

    def validate(self) -> list[str]:
        assert self._target.bus is not None
        stack = Stack.of(self._receiver)
        wanted = _bus_identity(stack, self._target.bus)
        if any(t.bus is not None and _bus_identity(stack, t.bus) & wanted for t in self._table.relay_targets):
            return []
        return [(f"{self._receiver.node.path}: nothing publishes the outbox of {self._table.node.path} to the bus "
                f"{self._target.bus.node.path}, so receipts would be answered 202 and never reach the worker. Fix: "
                "add Outbox(scope, 'Outbox', table=<that table>, target=<this outbox_target>) (or OutboxPipe) "
                "with the same bus.")]


def _bus_identity(stack: Stack, bus: events.IEventBus) -> set[str]:
    """What identifies a bus: its resolved ARN and, when known at synth, its name.

    The same bus can be the object of this app in one place and imported by name
    (``EventBus.from_event_bus_name``) in another: their ARNs resolve differently, their names do not.
    """
    identity = {json.dumps(stack.resolve(bus.event_bus_arn), sort_keys=True)}
    cfn = bus.node.default_child
    name = cfn.name if isinstance(cfn, events.CfnEventBus) else bus.event_bus_name
    if isinstance(name, str) and not Token.is_unresolved(name):
        identity.add(f"name:{name}")
    return identity


@jsii.implements(IResolvable)
class _ExpiryDays:
    """The bodies' expiry in days, resolved at synthesis from the table's final retry horizon.

    Consumers, sagas and queues wired after the receiver raise the horizon; the objects must outlive it.
    """

    def __init__(self, table: IdempotencyTable) -> None:
        self._table = table

    @property
    def creation_stack(self) -> list[str]:
        return []

    def resolve(self, _context: IResolveContext) -> int:
        return math.ceil(self._table.retention_seconds / 86_400) + 1

    def to_string(self) -> str:
        return Token.as_string(self)


class WebhookReceiver(Construct):
    """A public API route that verifies, dedupes and records webhook deliveries, then hands them to a worker.

    The receiver (``retrysafe.webhook.handler``) checks the signature with the secret from
    Secrets Manager, records the delivery and a ``WebhookReceived`` outbox event in one
    transaction and answers 202. The table's :class:`Outbox` publishes the event to
    ``outbox_target``'s bus; a rule sends this hook's receipts to a queue consumed by ``worker``.
    Bodies whose receipt would not fit one EventBridge event go to the ``bodies`` bucket (a
    claim check: SSE-S3, TLS only, no public access, objects expire after the retry horizon);
    the receiver may put objects, the worker may read them, and ``@idempotent_sqs`` hands the
    worker the body inline after checking its SHA-256.

    :param table: the :class:`IdempotencyTable` (required).
    :param api: the :class:`IdempotentRestApi` or :class:`IdempotentHttpApi` to add the public route to (required).
    :param worker: the :class:`IdempotentFunction` doing the heavy work (``retrysafe.sqs.idempotent_sqs``; required).
    :param outbox_target: the table's outbox target (required); an event bus, which an :class:`Outbox` or
        :class:`OutboxPipe` must publish the table to (checked at synthesis; the bus object and the same
        bus imported by name count as one).
    :param provider: ``github``, ``stripe``, ``standard`` (Standard Webhooks; the secret holds the
        ``whsec_...`` value) or ``hmac``. @default ``github``.
    :param path: @default ``/webhooks/<provider>``.
    :param source: the sender's name, scoping delivery ids. @default the provider.
    :param existing_secret: a secret holding the signing secret. @default a new generated one (set the same
        value at the provider).
    :param existing_bodies_bucket: a bucket for large bodies. @default a new one (SSE-S3, TLS only, no public
        access, ``RETAIN``; objects expire one day after the table's final retry horizon, whatever is
        wired after the receiver).
    :param bodies_bucket_props: other ``s3.BucketProps`` of the created bucket. @default none. Refused with
        ``existing_bodies_bucket``.
    :param bodies_logical_id: pin the created bucket's logical id. @default derived from the construct path.
        Refused with ``existing_bodies_bucket``.
    :param consumer_props: :class:`IdempotentQueueConsumer` props for the work queue (a :class:`QueueConsumerProps` (e.g. ``existing_queue``,
        ``max_concurrency``, ``alarms``, ``queue_logical_id``)). @default none.
    :param receiver_function_props: ``lambda_.FunctionOptions`` of the receiver (memory, VPC, tracing,
        reserved concurrency...). @default timeout 10 s, otherwise as :class:`IdempotentFunction`.
    :param receiver_log_group_props: the receiver's log group. @default one month, ``DESTROY``.
    :param snap_start: Lambda SnapStart for the receiver (see :class:`IdempotentFunction`); the route then
        invokes its alias. The worker's own setting is its own. @default False.

    Attributes: ``receiver``, ``secret``, ``rule``, ``consumer``, ``method`` (REST) / ``routes`` (HTTP),
    ``bodies``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable,
                 api: IdempotentRestApi | IdempotentHttpApi,
                 worker: IdempotentFunction, outbox_target: OutboxTarget, provider: str = "github",
                 path: str | None = None, source: str | None = None,
                 existing_secret: secretsmanager.ISecret | None = None,
                 existing_bodies_bucket: s3.IBucket | None = None, bodies_bucket_props: s3.BucketProps | None = None,
                 bodies_logical_id: str | None = None, consumer_props: QueueConsumerProps | None = None,
                 receiver_function_props: lambda_.FunctionOptions | None = None,
                 receiver_log_group_props: logs.LogGroupProps | None = None, snap_start: bool = False) -> None:
        super().__init__(scope, construct_id)
        if provider not in names.WEBHOOK_PROVIDERS:
            raise ValueError(f"{self.node.path}: provider must be one of {', '.join(names.WEBHOOK_PROVIDERS)}, got {provider!r}.")
        if outbox_target.bus is None:
            raise ValueError(f"{self.node.path}: outbox_target must be OutboxTarget.event_bus(...): receipts are "
                             "routed to the worker's queue by an EventBridge rule.")
        refuse_ignored(self, "existing_bodies_bucket", existing_bodies_bucket,
                       {"bodies_bucket_props": bodies_bucket_props, "bodies_logical_id": bodies_logical_id},
                       "set them on that bucket (and let its objects expire after the retry horizon)")
        self.source = source or provider
        self.secret = existing_secret or self._new_secret()
        self.receiver = IdempotentFunction(
            self, "Receiver", table=table,
            code=lambda_.Code.from_inline("# The handler is in the retrysafe runtime layer (/opt/python).\n"),
            handler=names.WEBHOOK_HANDLER, snap_start=snap_start, log_group_props=receiver_log_group_props,
            function_props=with_defaults({
                "timeout": Duration.seconds(10), "description": f"retrysafe webhook receiver ({provider})",
                "environment": {names.WEBHOOK_SECRET_ARN_ENV: self.secret.secret_arn,
                                names.WEBHOOK_PROVIDER_ENV: provider, names.WEBHOOK_TENANT_ENV: self.source,
                                **outbox_target.producer_environment()}}, receiver_function_props))
        self.secret.grant_read(self.receiver.role)
        route = path or f"/webhooks/{provider}"
        self.method: apigw.Method | None = None
        self.routes: list[apigwv2.HttpRoute] = []
        if isinstance(api, IdempotentRestApi):
            self.method = api.add_route("POST", route, self.receiver, key_required=False, public=True)
        else:
            self.routes = api.add_route("POST", route, self.receiver, public=True)
        self.consumer = IdempotentQueueConsumer(self, "Work", function=worker, **(consumer_props or {}))
        self.rule = events.Rule(
            self, "ReceiptRule", event_bus=outbox_target.bus,
            event_pattern=events.EventPattern(source=[outbox_target.event_source], detail_type=[names.WEBHOOK_RECEIPT_EVENT],
                                              detail={"aggregate_type": [f"webhook:{self.source}"]}),
            targets=[events_targets.SqsQueue(self.consumer.queue)])
        self.bodies = existing_bodies_bucket or self._new_bucket(table, bodies_bucket_props, bodies_logical_id)
        self.receiver.add_environment(names.CLAIM_CHECK_BUCKET_ENV, self.bodies.bucket_name)
        self.grant_put_bodies(self.receiver.role)
        self.grant_read_bodies(worker.role)
        worker.add_environment(names.CLAIM_CHECK_BUCKET_ENV, self.bodies.bucket_name)  # @idempotent_sqs fetches from it only
        self.node.add_validation(_RelayCheck(self, table, outbox_target))

    def grant_put_bodies(self, grantee: iam.IGrantable) -> iam.Grant:
        """``s3:PutObject`` on the claim-check objects (``webhooks/*``) only."""
        return self._grant_bodies(grantee, "s3:PutObject", "write")

    def grant_read_bodies(self, grantee: iam.IGrantable) -> iam.Grant:
        """``s3:GetObject`` on the claim-check objects (``webhooks/*``) only: what ``@idempotent_sqs`` fetches."""
        return self._grant_bodies(grantee, "s3:GetObject", "read")

    def _grant_bodies(self, grantee: iam.IGrantable, action: str, verb: str) -> iam.Grant:
        grant = iam.Grant.add_to_principal(grantee=grantee, actions=[action],
                                           resource_arns=[self.bodies.arn_for_objects(f"{names.CLAIM_CHECK_PREFIX}*")])
        bucket = self.bodies.node.default_child
        if isinstance(grantee, Construct) and isinstance(bucket, CfnElement):
            logical_id = Stack.of(self).get_logical_id(bucket)
            acknowledge(grantee, f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>/{names.CLAIM_CHECK_PREFIX}*]",
                        f"The role may {verb} the webhook bodies stored under {names.CLAIM_CHECK_PREFIX} (object keys are "
                        "made per delivery at run time); one action, that prefix only.")
        return grant

    def _new_bucket(self, table: IdempotencyTable, props: s3.BucketProps | None, logical_id: str | None) -> s3.Bucket:
        expiry = Duration.days(Token.as_number(_ExpiryDays(table)))
        bucket = s3.Bucket(self, "Bodies", **{
            "encryption": s3.BucketEncryption.S3_MANAGED, "enforce_ssl": True,
            "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
            "object_ownership": s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            "lifecycle_rules": [s3.LifecycleRule(expiration=expiry,
                                                 abort_incomplete_multipart_upload_after=Duration.days(1))],
            "removal_policy": RemovalPolicy.RETAIN, **struct_values(props)})
        if logical_id is not None:
            bucket.node.default_child.override_logical_id(logical_id)  # type: ignore[union-attr]
        acknowledge(bucket, "AwsSolutions-S1",
                    "Claim-check objects are written by one receiver role and read by one worker role and expire "
                    "after the retry horizon; their access is in CloudTrail data events where enabled.")
        return bucket

    def _new_secret(self) -> secretsmanager.Secret:
        secret = secretsmanager.Secret(
            self, "SigningSecret", description=f"{self.node.path}: webhook signing secret",
            generate_secret_string=secretsmanager.SecretStringGenerator(password_length=48, exclude_punctuation=True))
        acknowledge(secret, "AwsSolutions-SMG4",
                    "A webhook signing secret is shared with the sender; rotating it is a coordinated change at "
                    "the provider (the receiver accepts several secrets during the switch).")
        return secret

    def grant_read_secret(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` read the signing secret."""
        return self.secret.grant_read(grantee)
