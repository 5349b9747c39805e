"""``WebhookReceiver``: signed webhooks in, receipts through the outbox, heavy work on a queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager

from constructs import Construct

from .api import IdempotentRestApi
from .function import IdempotentFunction
from .nag import acknowledge
from .queue import IdempotentQueueConsumer
from .table import IdempotencyTable
from .targets import OutboxTarget

PROVIDERS = ("github", "stripe", "hmac")
RECEIPT_EVENT = "WebhookReceived"


class WebhookReceiver(Construct):
    """A public API route that verifies, dedupes and records webhook deliveries, then hands them to a worker.

    The receiver (``retrysafe.webhook.handler``) checks the signature with the secret from
    Secrets Manager, records the delivery and a ``WebhookReceived`` outbox event in one
    transaction and answers 202. The table's :class:`Outbox` publishes the event to
    ``outbox_target``'s bus; a rule sends this hook's receipts to a queue consumed by ``worker``.

    Props:

    - ``table``, ``api``, ``worker`` (required): the table, the REST API to add the route to,
      and the :class:`IdempotentFunction` doing the heavy work (``retrysafe.sqs.idempotent_sqs``).
    - ``outbox_target`` (required): the table's outbox target; must be an event bus.
    - ``path``: default ``/webhooks/<provider>``. ``provider``: ``github`` (default), ``stripe``, ``hmac``.
    - ``source``: the sender's name, scoping delivery ids (default: the provider).
    - ``secret``: an existing secret holding the signing secret; default a new generated one
      (set the same value at the provider).

    Attributes: ``receiver``, ``secret``, ``rule``, ``consumer``, ``method``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, table: IdempotencyTable, api: IdempotentRestApi,
                 worker: IdempotentFunction, outbox_target: OutboxTarget, provider: str = "github",
                 path: str | None = None, source: str | None = None,
                 secret: secretsmanager.ISecret | None = None) -> None:
        super().__init__(scope, construct_id)
        if provider not in PROVIDERS:
            raise ValueError(f"{self.node.path}: provider must be one of {', '.join(PROVIDERS)}, got {provider!r}.")
        if outbox_target.bus is None:
            raise ValueError(f"{self.node.path}: outbox_target must be OutboxTarget.event_bus(...): receipts are "
                             "routed to the worker's queue by an EventBridge rule.")
        self.source = source or provider
        self.secret = secret or self._new_secret()
        self.receiver = IdempotentFunction(
            self, "Receiver", table=table,
            code=lambda_.Code.from_inline("# The handler is in the retrysafe runtime layer (/opt/python).\n"),
            handler="retrysafe.webhook.handler", timeout=Duration.seconds(10),
            environment={"RETRYSAFE_WEBHOOK_SECRET_ARN": self.secret.secret_arn,
                         "RETRYSAFE_WEBHOOK_PROVIDER": provider, "RETRYSAFE_WEBHOOK_SOURCE": self.source},
            description=f"retrysafe webhook receiver ({provider})")
        self.secret.grant_read(self.receiver.role)
        self.method = api.add_route("POST", path or f"/webhooks/{provider}", self.receiver, key_required=False,
                                    public=True)
        self.consumer = IdempotentQueueConsumer(self, "Work", function=worker)
        self.rule = events.Rule(
            self, "ReceiptRule", event_bus=outbox_target.bus,
            event_pattern=events.EventPattern(source=[outbox_target.event_source], detail_type=[RECEIPT_EVENT],
                                              detail={"aggregate_type": [f"webhook:{self.source}"]}),
            targets=[events_targets.SqsQueue(self.consumer.queue)])

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
