"""``@idempotent`` (a Lambda handler of any event) and ``@idempotent_function`` (a plain function).

Both run on the one engine: each call is an :class:`~retrysafe._engine.Intent` scoped
``Scope("", operation, key, adapter="event", subscriber=subscriber)`` (``"function"`` for plain
functions). The subscriber defaults to the deployed function and the operation to the
handler's or function's ``module.qualname`` (:mod:`retrysafe._adapter`): the records of two
consumers of one event, two deployed functions or two functions of one name never meet unless
they name one subscriber and one operation on purpose.

Natural keys and default fingerprints of ``@idempotent`` (``key=None``, ``fingerprint=None``),
by the shape of the event:

=================  ===========================================  ==================================================
source             key                                          fingerprint: the event without
=================  ===========================================  ==================================================
EventBridge        ``id``                                       ``id``, ``time``, ``replay-name``
SNS (direct)       ``Records[0].Sns.MessageId``                 per record: ``EventSubscriptionArn`` and ``Sns``'s
                                                                ``MessageId``, ``Timestamp``, ``Signature``,
                                                                ``SignatureVersion``, ``SigningCertUrl``,
                                                                ``UnsubscribeUrl``
S3 notification    ``[bucket, object key, sequencer]``          per record: ``eventTime``, ``requestParameters``,
                                                                ``responseElements``, ``userIdentity``
anything else      none: ``key=`` is required                   nothing (the whole event)
=================  ===========================================  ==================================================

A republished EventBridge event (``PutEvents`` again) has a new ``id``: ``key="detail.order_id"``
dedupes those, and the default fingerprint ignores the new ``id`` and ``time``. The
same goes for an SNS message published twice (new ``MessageId``). Events that have
their own adapter (API Gateway, ALB and function URLs: ``idempotent_http``; SQS
batches: ``idempotent_sqs``; Kinesis and DynamoDB Streams batches) are refused without
``key=``: a batch needs per-record results, an HTTP request an HTTP answer. An HTTP
request is refused with ``key=`` too unless ``fingerprint=`` says what must match
(:class:`~retrysafe.errors.ConfigurationError`, pointing at ``idempotent_http(key=...)``):
the whole event holds the request id, the time and the tracing headers, so a client's
retry would never match its first request.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, Protocol, TypeVar, cast, overload

from . import names
from ._adapter import (
    TXN,
    SubscriberName,
    Wired,
    chosen_mode,
    flushes_telemetry,
    lambda_entry_point,
    positive_lease,
    qualified_name,
    takes_transaction,
)
from ._async import awaited, blocking, is_async
from ._config import Mode, idempotency_disabled
from ._cutover import PowertoolsCutover
from ._engine import Completion, Engine, Intent
from ._invocation import remaining_time
from ._keys import Scope
from ._observability import UNKEYED, telemetry
from ._replay import ReplayHook, replayed
from ._results import ResultSerializer, serializer_for
from ._select import FingerprintSelector, KeySelector, Selector, fingerprint_document
from ._store import DynamoStore
from ._tagged import is_model, to_document
from ._transaction import Transaction
from .errors import ConfigurationError, KeyNotFoundError, UnstorableResultError

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: What ``@idempotent`` decorates: ``handler(event, context, txn)``, or ``handler(event, context)`` (claim-first).
EventHandler = Callable[[Any, Any, Transaction], R] | Callable[[Any, Any], R]
#: An ``async def`` handler ``@idempotent`` decorates: the Lambda handler returns what it returns, awaited.
AsyncEventHandler = (Callable[[Any, Any, Transaction], Coroutine[Any, Any, R]]
                     | Callable[[Any, Any], Coroutine[Any, Any, R]])


# -- event sources -----------------------------------------------------------------------------------------

_EVENTBRIDGE_VOLATILE = frozenset({"id", "time", "replay-name"})
_SNS_VOLATILE = frozenset({"MessageId", "Timestamp", "Signature", "SignatureVersion", "SigningCertUrl",
                           "UnsubscribeUrl"})
_S3_VOLATILE = frozenset({"eventTime", "requestParameters", "responseElements", "userIdentity"})

_EVENTBRIDGE_KEY = KeySelector("id", option="the EventBridge event's natural key")
_SNS_KEY = KeySelector("Records[0].Sns.MessageId", option="the SNS notification's natural key")
_S3_KEY = KeySelector("[Records[0].s3.bucket.name, Records[0].s3.object.key, Records[0].s3.object.sequencer]",
                      option="the S3 notification's natural key")


def _record_source(event: Mapping[str, Any]) -> str | None:
    records = event.get("Records")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        first = records[0]
        return str(first.get("eventSource") or first.get("EventSource") or "") or None
    return None


def _is_eventbridge(event: Mapping[str, Any]) -> bool:
    return "detail-type" in event and "source" in event and "detail" in event


def _other_adapter(event: Mapping[str, Any]) -> str | None:
    """The adapter an event of another source belongs to, when it has one."""
    if _is_http(event):
        return "an HTTP request: use idempotent_http"
    source = _record_source(event)
    if source == "aws:sqs":
        return "an SQS batch: use idempotent_sqs (per-message records and batch item failures)"
    if source in ("aws:kinesis", "aws:dynamodb"):
        return "a stream batch: use the stream consumers (per-record results, shard order)"
    return None


def _is_http(event: Mapping[str, Any]) -> bool:
    """An API Gateway (REST v1, HTTP API v2), function URL or load balancer request: they carry ``requestContext``."""
    return "requestContext" in event


#: Why ``@idempotent`` refuses an HTTP request without ``fingerprint=`` (no key, no body in it).
_HTTP_FINGERPRINT = ("@idempotent got an HTTP request (API Gateway, function URL or load balancer); its default "
                     "fingerprint, the whole event, holds the request id, the time and the tracing headers, so "
                     "every client retry would be refused as another request. Use idempotent_http(key=...) "
                     "with the same key expression (it fingerprints method, route, path, query and body, and "
                     "answers refusals with HTTP problems), or pass fingerprint= (e.g. fingerprint='body')")


def _has_sequencer(event: Mapping[str, Any]) -> bool:
    s3 = event["Records"][0].get("s3")
    obj = s3.get("object") if isinstance(s3, Mapping) else None
    return isinstance(obj, Mapping) and bool(obj.get("sequencer"))


def natural_key(event: Any) -> str:
    """The key of an event that has one (EventBridge, SNS, S3); else :class:`KeyNotFoundError`."""
    if isinstance(event, Mapping):
        if _is_eventbridge(event):
            return _EVENTBRIDGE_KEY(event)
        source = _record_source(event)
        if source == "aws:sns":
            return _SNS_KEY(event)
        if source == "aws:s3":
            if not _has_sequencer(event):
                # S3 sets the sequencer only for object creation and deletion: a restore, tagging or ACL
                # notification has no natural key that tells its redeliveries from a new notification.
                raise KeyNotFoundError("this S3 notification carries no sequencer (S3 sets it only on object "
                                       "creation and deletion), so it has no natural key: pass key=, e.g. "
                                       "bucket, object key, versionId, eventName and eventTime")
            return _S3_KEY(event)
        other = _other_adapter(event)
        if other is not None:
            raise ConfigurationError(f"@idempotent got {other}, or pass key= to treat it as a plain event")
    raise KeyNotFoundError("the event has no natural idempotency key (a direct Invoke?): pass key=")


def default_fingerprint(event: Any) -> str:
    """The fingerprint of the whole event without the transport fields that change when it is sent again."""
    document = event
    if isinstance(event, Mapping):
        source = _record_source(event)
        if _is_eventbridge(event):
            document = {name: value for name, value in event.items() if name not in _EVENTBRIDGE_VOLATILE}
        elif source == "aws:sns":
            document = {**event, "Records": [_sns_record(record) for record in event["Records"]]}
        elif source == "aws:s3":
            document = {**event, "Records": [_without(record, _S3_VOLATILE) for record in event["Records"]]}
    return fingerprint_document(document)


def _sns_record(record: Any) -> Any:
    if not isinstance(record, dict):
        return record
    stripped = _without(record, frozenset({"EventSubscriptionArn"}))
    if isinstance(record.get("Sns"), dict):
        stripped["Sns"] = _without(record["Sns"], _SNS_VOLATILE)
    return stripped


def _without(record: Any, names: frozenset[str]) -> Any:
    return {k: v for k, v in record.items() if k not in names} if isinstance(record, dict) else record


# -- the shared part ---------------------------------------------------------------------------------------


class _Idempotency(Wired):
    """What both decorators share: scope, selectors, serializer, mode and the engine."""

    #: The record namespace of the decorator's adapter (:data:`retrysafe.names.ADAPTERS`).
    adapter: str

    def __init__(self, *, subscriber: str | None, operation: str, key: Selector | None, fingerprint: Selector | None,
                 mode: Mode | str, key_required: bool, serializer: ResultSerializer[Any], lease_seconds: float | None,
                 horizon_seconds: int | None, powertools_cutover: PowertoolsCutover | None,
                 on_replay: ReplayHook | None, store: DynamoStore | None, engine: Engine | None,
                 to_json: Callable[[Any], Any] | None = None) -> None:
        self.subscriber = SubscriberName(subscriber)
        self.operation = operation
        self.mode = Mode.parse(mode)
        self.key = KeySelector(key) if key is not None else None
        self.fingerprint = FingerprintSelector(fingerprint, to_json=to_json) if fingerprint is not None else None
        self.key_required = key_required
        self.serializer = serializer
        self.lease_seconds = positive_lease(lease_seconds)
        self.on_replay = on_replay
        # Powertools stored the JSON of the result; decoded, it is what this adapter's serializer stores
        self.wire(horizon_seconds, store, engine, powertools_cutover)

    def scope(self, key: str) -> Scope:
        """The scope of one call (built here only)."""
        return Scope("", self.operation, key, adapter=self.adapter, subscriber=self.subscriber())

    def run(self, key: str | None, fingerprint: Callable[[], str], call: Callable[[Transaction], Any],
            remaining_ms: Callable[[], int] | None, data: Any) -> Any:
        """``call`` at most once for ``key`` (unprotected when ``key`` is ``None``); its result, or the replayed one.

        ``data``: what Powertools hashed for the same call (the event, the data argument), for the cut-over.
        """
        predecessor = self.cutover.predecessor(data) if self.cutover is not None else None
        if key is None:
            unkeyed = self.engine.execute_unkeyed(self.scope("unkeyed"), lambda txn: Completion(call(txn)),
                                                  self.retention, predecessor=predecessor)
            if not unkeyed.replayed:
                return unkeyed.result
            return replayed(self.on_replay, self.serializer.load(unkeyed.result), unkeyed.replay)
        produced: list[Any] = []

        def work(txn: Transaction) -> Completion:
            result = call(txn)
            produced.append(result)
            try:
                stored = self.serializer.dump(result)
            except UnstorableResultError:
                raise
            except Exception as error:  # the serializer's own refusal: refused like any unstorable result
                raise UnstorableResultError(f"the serializer refused the result: {error}") from error
            return Completion(stored)

        intent = Intent(self.scope(key), fingerprint(), self.mode, self.retention, self.lease_seconds)
        outcome = self.engine.execute(intent, work, remaining_ms, predecessor=predecessor)
        if not outcome.replayed:
            return produced[0]
        return replayed(self.on_replay, self.serializer.load(outcome.result), outcome.replay)

    def unprotected(self, call: Callable[[Transaction], Any]) -> Any:
        """``call`` with deduplication switched off (``RETRYSAFE_IDEMPOTENCY_DISABLED``): no key or fingerprint
        is selected and no record read or written; its writes and events still commit in one transaction."""
        return self.engine.execute_unkeyed(self.scope("unkeyed"), lambda txn: Completion(call(txn)), self.retention,
                                           steps=self.mode is Mode.CLAIM_FIRST).result

    def find_key(self, value: Any, select: Callable[[Any], str]) -> str | None:
        """The key, or ``None`` when there is none and keys are optional (an ``Unkeyed`` metric and log line)."""
        try:
            return select(value)
        except KeyNotFoundError as error:
            if self.key_required:
                raise
            telemetry.count(UNKEYED, self.operation, "unkeyed", subscriber=self.subscriber(), reason=str(error),
                            detail="no idempotency key: runs unprotected (key_required=False)")
            return None


# -- @idempotent -------------------------------------------------------------------------------------------


class EventIdempotency(_Idempotency):
    """Configuration and engine of one ``@idempotent`` Lambda handler (see :func:`idempotent`)."""

    adapter = names.EVENT_ADAPTER

    def __init__(self, handler: EventHandler[Any], *, takes_txn: bool, **options: Any) -> None:
        super().__init__(**options)
        self.handler: Callable[..., Any] = blocking(handler)
        self.takes_txn = takes_txn

    def event_key(self, event: Any) -> str:
        """The key of ``event``: ``key=``'s selection, else the event's natural key."""
        return self.key(event) if self.key is not None else natural_key(event)

    def event_fingerprint(self, event: Any) -> str:
        """The fingerprint of ``event``: ``fingerprint=``'s selection, else :func:`default_fingerprint`."""
        return self.fingerprint(event) if self.fingerprint is not None else default_fingerprint(event)

    @flushes_telemetry
    def __call__(self, event: Any, context: Any) -> Any:
        """The Lambda handler: run the handler at most once per key; replays return the stored result."""
        if idempotency_disabled():
            return self.unprotected(lambda txn: self.handler(event, context, txn) if self.takes_txn else self.handler(event, context))
        if self.fingerprint is None and isinstance(event, Mapping) and _is_http(event):
            raise ConfigurationError(_HTTP_FINGERPRINT)
        key = self.find_key(event, self.event_key)
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        return self.run(key, lambda: self.event_fingerprint(event),
                        lambda txn: self.handler(event, context, txn) if self.takes_txn else
                        self.handler(event, context), remaining, event)


class IdempotentHandler(Protocol[R_co]):
    """What ``@idempotent`` returns: the Lambda handler ``(event, context)``, with its configuration attached."""

    idempotency: EventIdempotency

    def __call__(self, event: Any, context: Any, /) -> R_co: ...


class EventDecorator(Protocol):
    """What ``@idempotent(...)`` returns: it turns a handler, sync or ``async def``, into the sync Lambda handler."""

    @overload
    def __call__(self, handler: AsyncEventHandler[R], /) -> IdempotentHandler[R]: ...

    @overload
    def __call__(self, handler: EventHandler[R], /) -> IdempotentHandler[R]: ...


def idempotent(*, subscriber: str | None = None, key: Selector | None = None, fingerprint: Selector | None = None,
               operation: str | None = None, mode: Mode | str | None = None, key_required: bool = True,
               serializer: ResultSerializer[Any] | None = None, lease_seconds: float | None = None,
               horizon_seconds: int | None = None, powertools_cutover: PowertoolsCutover | None = None,
               on_replay: ReplayHook | None = None, store: DynamoStore | None = None,
               engine: Engine | None = None) -> EventDecorator:
    """Make a Lambda handler of any event idempotent: ``handler(event, context, txn)``.

    The handler may be an ``async def``: the decorated handler is still the sync Lambda handler, and
    runs the coroutine on the execution environment's event loop (:mod:`retrysafe._async`).

    Options (keyword-only):

    - ``subscriber``: which consumer the records belong to; default the deployed function
      (``RETRYSAFE_SUBSCRIBER``, set by the constructs, else ``AWS_LAMBDA_FUNCTION_NAME``), read at
      the first call. Two functions share records only when they name one subscriber (and operation).
    - ``key``: a JMESPath expression (``"detail.order_id"``) or ``callable(event)``;
      default the event's natural key (see :mod:`retrysafe._generic`). A key that is not
      found raises :class:`~retrysafe.errors.KeyNotFoundError` and nothing runs.
    - ``fingerprint``: expression or callable selecting what must match between the first
      delivery and a replay; default the whole event without its transport fields. The
      same key with another fingerprint raises :class:`~retrysafe.errors.KeyReuseMismatchError`.
      An HTTP request without ``fingerprint=`` raises :class:`~retrysafe.errors.ConfigurationError`:
      use :func:`~retrysafe.http.idempotent_http` (``key=`` there takes the same expressions).
    - ``operation``: default the handler's ``module.qualname``. ``mode``: ``"atomic"`` (the handler's
      ``txn`` writes commit with the record, one round trip) or ``"claim_first"`` (foreign
      calls; ``txn.step`` and ``txn.derive_key``); default: atomic for ``handler(event, context, txn)``,
      claim-first for ``handler(event, context)``, whose effects are not in a transaction. ``key_required=False``: an event without
      a key runs unprotected (``Unkeyed`` metric and a warning log line).
    - ``serializer``: how the result is stored and replayed; default from the handler's
      return annotation (a dataclass or pydantic model class), else JSON with ``Decimal``,
      ``datetime``, ``set``, ``bytes``... (:class:`~retrysafe.ResultSerializer`).
    - ``lease_seconds`` (claim first; default the remaining time), ``horizon_seconds``,
      ``store``/``engine``.
    - ``powertools_cutover``: a :class:`~retrysafe.PowertoolsCutover` while switching from
      Powertools' ``@idempotent`` (see the migration guide): a first call whose event Powertools
      completed returns Powertools' stored result.
    - ``on_replay``: ``hook(result, info) -> result``, called on replays only (never on a first
      execution) with the replayed result, as the caller would get it, and its
      :class:`~retrysafe.ReplayInfo` (record id, expiry: never the raw key); its return value is
      what the caller gets (metrics, logging, a marker). No DynamoDB call of its own; if it raises,
      the caller gets that error and the record stays as it is (nothing runs again).

    Example::

        @idempotent(key="detail.order_id")
        def handler(event, context, txn):
            txn.put({"pk": f"shipment#{event['detail']['order_id']}"}, table="shipments")
            return {"shipped": event["detail"]["order_id"]}
    """

    def decorate(func: EventHandler[R]) -> IdempotentHandler[R]:
        takes_txn = takes_transaction(func, 3)
        idempotency = EventIdempotency(
            func, subscriber=subscriber, operation=operation or qualified_name(func), key=key,
            fingerprint=fingerprint, mode=chosen_mode(mode, takes_txn), takes_txn=takes_txn, key_required=key_required,
            serializer=serializer if serializer is not None else serializer_for(func), lease_seconds=lease_seconds,
            horizon_seconds=horizon_seconds, powertools_cutover=powertools_cutover, on_replay=on_replay, store=store,
            engine=engine)

        def entry(event: Any, context: Any) -> Any:
            return idempotency(event, context)

        return cast(IdempotentHandler[R], lambda_entry_point(func, entry, idempotency=idempotency))

    return cast(EventDecorator, decorate)


# -- @idempotent_function ----------------------------------------------------------------------------------


def plain_document(value: Any) -> Any:
    """``value`` with dataclasses and pydantic models turned into dicts (what an expression searches)."""
    import dataclasses

    if isinstance(value, dict):
        return {name: plain_document(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_document(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_document(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if is_model(value):
        return plain_document(value.model_dump(mode="python"))
    return value


def _returned(result: Any) -> Any:
    """What a sync function returned is its result."""
    return result


def _argument_fingerprint(value: Any) -> str:
    return fingerprint_document(to_document(_as_sent(value)))


#: The members of an SQS record that SQS changes when it delivers the same message again.
_SQS_REDELIVERY = frozenset({"receiptHandle"})
_SQS_REDELIVERY_ATTRIBUTES = frozenset({"ApproximateReceiveCount"})


def _as_sent(value: Any) -> Any:
    """``value`` without what its redelivery changes, when it is an SQS record (a dict or Powertools' ``SQSRecord``).

    A function called from a batch loop (Powertools' ``BatchProcessor``) gets each record as delivered: with a
    new receipt handle and a higher receive count on every redelivery. Hashed whole, a redelivery would be a
    new key (a second effect) or, under ``key="messageId"``, a changed payload. Other arguments are hashed whole.
    """
    if not isinstance(value, Mapping) or value.get("eventSource") != "aws:sqs":
        return value
    sent = {name: member for name, member in value.items() if name not in _SQS_REDELIVERY}
    attributes = sent.get("attributes")
    if isinstance(attributes, Mapping):
        sent["attributes"] = {name: member for name, member in attributes.items()
                              if name not in _SQS_REDELIVERY_ATTRIBUTES}
    return sent


class FunctionIdempotency(_Idempotency):
    """Configuration and engine of one ``@idempotent_function`` (see :func:`idempotent_function`)."""

    adapter = names.FUNCTION_ADAPTER

    def __init__(self, func: Callable[..., Any], *, data_keyword_argument: str, **options: Any) -> None:
        super().__init__(**options, to_json=to_document)  # the selected part is hashed as tagged JSON
        self.func = func
        self.signature = inspect.signature(func)
        if data_keyword_argument not in self.signature.parameters:
            raise ConfigurationError(f"{func.__qualname__} has no parameter {data_keyword_argument!r} "
                                     "(data_keyword_argument=)")
        self.argument = data_keyword_argument
        self.takes_txn = TXN in self.signature.parameters

    def argument_key(self, value: Any) -> str:
        """``key=``'s selection in the argument; default the hash of the whole argument."""
        if self.key is None:
            return _argument_fingerprint(value)
        return self.key(value, plain_document)

    def argument_fingerprint(self, value: Any) -> str:
        """``fingerprint=``'s selection in the argument; default the whole argument."""
        if self.fingerprint is None:
            return _argument_fingerprint(value)
        return self.fingerprint(value, plain_document)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function at most once per key; replays return the stored result as the same type."""
        return self.invoke(args, kwargs, _returned)

    @flushes_telemetry
    def invoke(self, args: tuple[Any, ...], kwargs: dict[str, Any], settle: Callable[[Any], Any]) -> Any:
        """One call through the engine; ``settle`` turns what the function returned into its result
        (an ``async def``'s coroutine awaited on the caller's loop: :func:`retrysafe._async.awaited`)."""
        if self.takes_txn and TXN in kwargs:
            raise TypeError(f"{self.func.__qualname__}: do not pass txn=; @idempotent_function passes its own")

        def call(txn: Transaction) -> Any:
            return settle(self.func(*args, **kwargs, txn=txn) if self.takes_txn else self.func(*args, **kwargs))

        if idempotency_disabled():
            return self.unprotected(call)
        bound = self.signature.bind_partial(*args, **kwargs)
        if self.argument not in bound.arguments:
            raise TypeError(f"{self.func.__qualname__}() needs its {self.argument!r} argument: it names the intent")
        value = bound.arguments[self.argument]
        key = self.find_key(value, self.argument_key)
        return self.run(key, lambda: self.argument_fingerprint(value), call, remaining_time(), value)


def idempotent_function(*, data_keyword_argument: str, subscriber: str | None = None, key: Selector | None = None,
                        fingerprint: Selector | None = None, operation: str | None = None,
                        mode: Mode | str | None = None, key_required: bool = True,
                        serializer: ResultSerializer[Any] | None = None, lease_seconds: float | None = None,
                        horizon_seconds: int | None = None, powertools_cutover: PowertoolsCutover | None = None,
                        on_replay: ReplayHook | None = None, store: DynamoStore | None = None,
                        engine: Engine | None = None) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Make a plain function idempotent, keyed by one of its arguments; called inside any handler.

    ``data_keyword_argument`` names the argument that carries the intent (passed by
    keyword or position). ``key``/``fingerprint`` select from it (a JMESPath expression,
    searched in its JSON form, dataclasses and pydantic models as dicts, or a callable given
    the argument itself); default both: the whole argument, hashed (then another
    argument is another intent), an SQS record without what SQS changes on a redelivery (the
    receipt handle and receive count), so a batch loop's redelivered record replays. ``operation`` defaults to the function's ``module.qualname``
    (``payments.apply`` and ``refunds.apply`` never share records). The other options are those of
    :func:`idempotent`.

    A function with a ``txn`` parameter gets the :class:`~retrysafe.Transaction` there and
    runs in atomic mode (its writes commit with its record, one round trip; callers never
    pass ``txn``); any other function runs claim-first (claim, call, complete: two round
    trips on a first call), the mode for foreign calls. ``mode=`` overrides either. Its result
    is stored and a replay returns it as the same type: annotate the return with a dataclass
    or pydantic model class (or pass ``serializer=``); ``Decimal``, ``datetime``, ``set``,
    ``bytes``, ``tuple``... round-trip anyway.

    On an ``async def`` the decorated function is an ``async def`` too, awaited on the caller's loop;
    the engine's DynamoDB calls run in a worker thread, and a cancelled caller never commits
    (:mod:`retrysafe._async`).

    Example::

        @idempotent_function(data_keyword_argument="order", key="order_id")
        def charge(order: Order) -> Receipt:
            return provider.charge(order.total, idempotency_key=order.order_id)
    """

    def decorate(func: Callable[..., R]) -> Callable[..., R]:
        takes_txn = TXN in inspect.signature(func).parameters
        chosen = chosen_mode(mode, takes_txn)
        idempotency = FunctionIdempotency(
            func, data_keyword_argument=data_keyword_argument, subscriber=subscriber,
            operation=operation or qualified_name(func), key=key, fingerprint=fingerprint,
            mode=chosen, key_required=key_required,
            serializer=serializer if serializer is not None else serializer_for(func), lease_seconds=lease_seconds,
            horizon_seconds=horizon_seconds, powertools_cutover=powertools_cutover, on_replay=on_replay, store=store,
            engine=engine)

        if is_async(func):
            @functools.wraps(func)
            async def awaiting(*args: Any, **kwargs: Any) -> Any:
                return await awaited(lambda wait: idempotency.invoke(args, kwargs, wait))

            awaiting.idempotency = idempotency  # type: ignore[attr-defined]
            return cast(Callable[..., R], awaiting)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> R:
            return cast(R, idempotency(*args, **kwargs))

        wrapper.idempotency = idempotency  # type: ignore[attr-defined]
        return wrapper

    return decorate
