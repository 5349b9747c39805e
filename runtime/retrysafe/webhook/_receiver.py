"""The webhook receiver: verify, dedupe, persist the receipt through the outbox, answer 202.

Order of work for each request:

1. the signature is verified before anything else; missing, malformed or
   wrong: 401 problem+json, nothing written;
2. the delivery's identity is what the provider signs: a digest of the body
   for GitHub and the generic HMAC provider (their delivery, hook and event
   headers are unsigned), the event id for Stripe, ``webhook-id`` for Standard
   Webhooks. It is scoped by the sender (``tenant=``) and, when the provider's hook is
   configuration rather than an unsigned header, by hook. A captured body resent
   with fresh unsigned ids is therefore a replay;
3. the receipt (body, event name, ids) goes to the outbox inline when its
   envelope fits the configured target, else the body goes to S3 (a claim
   check, ``RETRYSAFE_CLAIM_CHECK_BUCKET``) and the envelope carries the
   pointer; a body no configured path can carry is refused with 413 before
   anything is written;
4. the receipt is appended to the outbox in the engine's atomic transaction
   together with the processed-delivery record and any writes of
   ``on_receipt``: one ``TransactWriteItems``, before the 2xx. A claim-checked
   delivery runs claim-first instead: the claim (one conditional ``PutItem``)
   finds an accepted delivery before S3 is touched, so a resend is answered
   from its record (whether or not S3 is up) and only a new delivery writes
   the object, then commits (two round trips for a new large delivery, one for
   its resend);
5. the answer is 202; a redelivery replays it without a new effect. Heavy work
   runs downstream, from the outbox event (publisher -> queue -> consumer).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from .. import names
from .._adapter import SubscriberName, Wired, flushes_telemetry
from .._async import blocking
from .._claimcheck import ClaimCheck
from .._config import Mode, idempotency_disabled
from .._engine import Completion, Engine, Intent
from .._fingerprint import fingerprint, is_unicode
from .._invocation import Invocation
from .._keys import Scope
from .._observability import telemetry
from .._replay import ReplayHook, replayed
from .._store import DynamoStore
from .._tenant import Tenant, checked_tenant, tenant_of
from .._transaction import Transaction
from ..errors import (
    ConfigurationError,
    InvalidInputError,
    MalformedRequestError,
    PayloadTooLargeError,
    RetrysafeError,
    SignatureError,
    StoreUnavailableError,
    TenantRequiredError,
    TransactionTooLargeError,
)
from ..http._core import HttpAnswer, StoredResponse, refusal, to_proxy
from ..http._problem import Problem, problem_for
from ..http._request import HttpRequest, parse_event
from ._receipt import Receipt, metadata
from ._signatures import NO_HOOK, PROVIDERS, Provider, body_digest

#: Seconds a fetched secret is cached in the container (Powertools parameters cache).
SECRET_MAX_AGE = 300
#: The largest body accepted at all: Lambda's synchronous request payload limit (6 MB).
DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024

SecretSource = Callable[[], Sequence[bytes]]


def secret_from_env() -> SecretSource:
    """Secrets from Secrets Manager (``RETRYSAFE_WEBHOOK_SECRET_ARN``) or SSM (``RETRYSAFE_WEBHOOK_SECRET_PARAMETER``).

    Fetched through Powertools' parameters utility and cached per container for
    :data:`SECRET_MAX_AGE` seconds. A value that is a JSON list of strings holds
    several secrets (rotation).
    """
    arn, parameter = os.environ.get(names.WEBHOOK_SECRET_ARN_ENV), os.environ.get(names.WEBHOOK_SECRET_PARAMETER_ENV)
    if bool(arn) == bool(parameter):
        raise ConfigurationError(f"set exactly one of {names.WEBHOOK_SECRET_ARN_ENV} or {names.WEBHOOK_SECRET_PARAMETER_ENV}; webhook secrets "
                                 "are never read from plain environment variables")

    def load() -> Sequence[bytes]:
        from aws_lambda_powertools.utilities import parameters

        if arn:
            value = parameters.get_secret(arn, max_age=SECRET_MAX_AGE)
        else:
            value = parameters.get_parameter(str(parameter), decrypt=True, max_age=SECRET_MAX_AGE)
        return parse_secrets(value)

    return load


def parse_secrets(value: str | bytes) -> list[bytes]:
    """One secret, or a JSON list of secrets (newest first)."""
    text = value.decode("utf-8") if isinstance(value, bytes) else value
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, list) and doc and all(isinstance(s, str) and s for s in doc):
        return [s.encode("utf-8") for s in doc]
    if not text:
        raise ConfigurationError("the webhook secret is empty")
    return [text.encode("utf-8")]


class WebhookReceiver(Wired):
    """An API Gateway Lambda handler receiving one provider's webhooks.

    ``provider``: :class:`~retrysafe.webhook.GitHub`, :class:`~retrysafe.webhook.Stripe`,
    :class:`~retrysafe.webhook.StandardWebhooks`, :class:`~retrysafe.webhook.GenericHmac`
    or your own. ``tenant``: the sender the deliveries come from, the scope's tenant and the
    receipts' ``source``, a :data:`~retrysafe.Tenant` of the verified
    :class:`~retrysafe.http.HttpRequest`: ``None`` (default) for one sender, named by the
    provider's name; a fixed name (one per account when one provider sends from several); or a
    callable reading the sender from the signed delivery (a Stripe Connect event's ``account``),
    called after the signature is verified (finding none answers 401 ``tenant-required``).
    ``subscriber``: which consumer the records belong to (default the
    deployed function, as on every adapter).
    ``secrets``: where the signing secrets come from (default :func:`secret_from_env`).
    ``on_receipt(receipt, txn)``: optional light work committed in the receipt's
    transaction (keep it quick; heavy work belongs behind the outbox).
    ``claim_check``: where bodies too large for the outbox target go (default
    ``RETRYSAFE_CLAIM_CHECK_BUCKET``; without one such bodies are refused with 413).
    ``max_body_bytes``: refuse larger bodies outright (413).
    ``on_replay(response, info) -> response``: called when a redelivery is answered from its record
    (``202`` with ``Idempotent-Replayed: true``; never on a first delivery or a refusal) with the
    proxy response and the :class:`~retrysafe.ReplayInfo` (record id, expiry: never the delivery id);
    the sender gets what it returns. For metrics of redeliveries: senders ignore the headers.
    No DynamoDB call of its own; a hook that raises fails the invocation (the sender retries and
    is answered from the record again).
    """

    def __init__(self, provider: Provider, *, tenant: Tenant[HttpRequest] = None, subscriber: str | None = None,
                 secrets: SecretSource | None = None,
                 on_receipt: Callable[[Receipt, Transaction], Awaitable[None] | None] | None = None,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, horizon_seconds: int | None = None,
                 claim_check: ClaimCheck | None = None, on_replay: ReplayHook | None = None,
                 store: DynamoStore | None = None, engine: Engine | None = None) -> None:
        self.provider = provider
        self.tenant = checked_tenant(tenant)
        self.subscriber = SubscriberName(subscriber)
        self.secrets = secrets or secret_from_env()
        self.on_receipt = blocking(on_receipt) if on_receipt is not None else None
        self.claim_check = claim_check if claim_check is not None else ClaimCheck.from_env()
        self.max_body_bytes = max_body_bytes
        self.on_replay = on_replay
        self.wire(horizon_seconds, store, engine)

    @flushes_telemetry
    def __call__(self, event: Any, context: Any = None) -> dict[str, Any]:
        """Answer one delivery with a proxy response."""
        try:
            with Invocation(context):  # on_receipt's idempotent functions size their claims by it
                answer = self._receive(parse_event(event), getattr(context, "get_remaining_time_in_millis", None))
        except RetrysafeError as error:
            answer = refusal(error, _problem)
        return cast(dict[str, Any], replayed(self.on_replay, to_proxy(answer), answer.replay))

    def _receive(self, request: HttpRequest, remaining_ms: Callable[[], int] | None) -> HttpAnswer:
        self._verify(request)
        sender = self._sender(request)
        if len(request.body) > self.max_body_bytes:
            raise PayloadTooLargeError(f"the delivery is {len(request.body)} bytes; the limit is {self.max_body_bytes}")
        receipt = self._receipt(request, sender)
        payload = receipt.payload()
        pointer: dict[str, Any] | None = None
        inline, why = receipt.fits_inline(payload)
        if not inline:
            if self.claim_check is None:
                raise PayloadTooLargeError(f"{why}, and no claim-check bucket is configured for larger bodies")
            pointer = self.claim_check.pointer(receipt.object_key(), receipt.body)  # computed: nothing written yet
            payload = receipt.claim_check_payload()

        def work(txn: Transaction) -> Completion:
            if pointer is not None:  # claim-first: only a new delivery gets here, holding its claim
                self._store_body(receipt)
            txn.append_event(names.WEBHOOK_RECEIPT_EVENT, payload, aggregate_type=f"webhook:{receipt.source}",
                             aggregate_id=receipt.key, once_per_key=True, claim_check=pointer)
            if self.on_receipt is not None:
                self.on_receipt(receipt, txn)
            body = json.dumps({"status": "accepted", "delivery": receipt.delivery_id})
            return Completion(StoredResponse(202, {"Content-Type": "application/json"}, body).to_result())

        scope_hook = receipt.hook if "hook" not in receipt.unsigned else NO_HOOK
        scope = Scope(sender, f"webhook/{scope_hook}", receipt.key, adapter=names.WEBHOOK_ADAPTER,
                      subscriber=self.subscriber())
        if idempotency_disabled():  # the signature was checked; no record: the receipt commits as a new delivery
            outcome = self.engine.execute_unkeyed(scope, work, self.retention)
        else:
            intent = Intent(scope, fingerprint(["webhook/v1", request.body]),
                            Mode.ATOMIC if pointer is None else Mode.CLAIM_FIRST, self.retention)
            outcome = self.engine.execute(intent, work, remaining_ms)
        return HttpAnswer(StoredResponse.from_result(outcome.result), replayed=outcome.replayed, replay=outcome.replay)

    def _store_body(self, receipt: Receipt) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        assert self.claim_check is not None
        try:
            self.claim_check.put(receipt.object_key(), receipt.body)
        except (BotoCoreError, ClientError) as error:  # the claim is released: the sender's retry starts afresh
            telemetry.logger.warning("webhook body not stored", extra={"error": type(error).__name__})
            raise StoreUnavailableError("the webhook body could not be stored; retry the delivery", 5) from None

    def _verify(self, request: HttpRequest) -> None:
        try:
            self.provider.verify(request, self.secrets())
        except (ValueError, TypeError, UnicodeError) as error:  # a custom provider's parser choking on input
            telemetry.logger.warning("webhook signature check raised", extra={"error": type(error).__name__})
            raise SignatureError("the signature headers are malformed") from None

    def _sender(self, request: HttpRequest) -> str:
        """The delivery's sender (``tenant=``), read from the verified request."""
        sender = tenant_of(self.tenant, request, unnamed=self.provider.name)
        if sender is None:
            raise TenantRequiredError("the tenant= callable found no sender in this delivery")
        if not is_unicode(sender):
            raise InvalidInputError("the delivery's sender holds a lone surrogate; it is not Unicode text")
        return sender

    def _receipt(self, request: HttpRequest, sender: str) -> Receipt:
        unsigned = frozenset(getattr(self.provider, "unsigned", frozenset()))
        dedupe = getattr(self.provider, "dedupe_key", None)
        key = dedupe(request) if dedupe is not None else body_digest(request.body)
        if not key:
            raise MalformedRequestError("the delivery carries no id")
        delivery = metadata(self.provider.delivery_id(request), key)
        return Receipt(sender, metadata(self.provider.hook(request), NO_HOOK), delivery,
                       metadata(self.provider.event_name(request), "event"), request.body, key=key, unsigned=unsigned)


def _problem(error: Exception) -> Problem | None:
    if isinstance(error, SignatureError):
        return Problem(401, "signature-invalid", "Webhook signature missing or invalid", str(error))
    if isinstance(error, TransactionTooLargeError):
        return Problem(413, "payload-too-large", "Webhook payload too large", str(error))
    return problem_for(error)


_default: WebhookReceiver | None = None


def handler(event: Any, context: Any = None) -> dict[str, Any]:
    """Lambda entry point configured from the environment.

    ``RETRYSAFE_WEBHOOK_PROVIDER`` (``github`` (default), ``stripe``, ``standard`` or ``hmac``),
    ``RETRYSAFE_WEBHOOK_TENANT`` (default the provider's name), the secret
    variables of :func:`secret_from_env`, ``RETRYSAFE_TABLE``, and
    ``RETRYSAFE_CLAIM_CHECK_BUCKET`` / ``RETRYSAFE_OUTBOX_TARGET`` for large bodies.
    """
    global _default
    if _default is None:
        name = os.environ.get(names.WEBHOOK_PROVIDER_ENV) or "github"
        if name not in PROVIDERS:
            raise ConfigurationError(f"{names.WEBHOOK_PROVIDER_ENV}={name!r}: choose one of {', '.join(PROVIDERS)}")
        _default = WebhookReceiver(PROVIDERS[name](), tenant=os.environ.get(names.WEBHOOK_TENANT_ENV) or None)
    return _default(event, context)
