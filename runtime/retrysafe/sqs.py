"""``@idempotent_sqs``: idempotent consumers for SQS-triggered Lambda functions (the inbox).

Each record runs through the engine scoped by its subscriber (default the deployed function),
operation (default the handler's ``module.qualname``) and message key, in the SQS record namespace. In
atomic mode the processed-message record, the handler's writes and its outbox events commit in ONE
``TransactWriteItems``; a redelivered message meets its record in that same
call and is acknowledged without a second effect (one round trip either way).

The message key is, in order: the ``idempotency-key`` message attribute; an
event id carried by the body (``detail.event_id`` of an EventBridge envelope,
the same inside an SNS notification's ``Message`` or its ``idempotency-key``
message attribute, a top-level ``event_id``); else the SQS message id. The
envelope ids that EventBridge and SNS assign (``id``, ``MessageId``) are not
used by default: they change when the same event is published twice.

An outbox event whose body retrysafe stored in S3 (a claim check: a webhook
receipt's large body, or ``append_event(..., claim_check=...)``) is handed to the
handler with the body fetched back inline, after its size and SHA-256 were
verified, from the consumer's own claim-check bucket and prefix only
(``claim_check=``, default ``RETRYSAFE_CLAIM_CHECK_BUCKET``); a missing or altered
object, or a pointer elsewhere, fails the record. Only the envelope the outbox
wrote carries such a pointer (:mod:`retrysafe._claimcheck`); every other message,
one whose payload says ``"body_encoding": "s3"`` included, reaches the handler
untouched.

The fingerprint hashes the message content without its transport envelope (the
EventBridge ``detail``, the SNS ``Message``, else the body), so a republished
event matches its first delivery while a different message reusing a key is
refused (reported failed, ending in the DLQ).

Failures are reported per record (``batchItemFailures``), as Powertools'
``BatchProcessor`` reports them; on FIFO queues a failure also fails the rest of
its message group in the batch (Powertools' ``SqsFifoPartialProcessor(skip_group_on_error=True)``),
so order within a group survives and other groups go on.

Retry hints: a message whose ``ApproximateReceiveCount`` is above 1 was received before
(a redelivery, most likely of a message already processed). In atomic mode such a
message claims first when the container's record cache cannot answer it: a processed
message is acknowledged after one conditional ``PutItem`` and the handler does not run;
a first delivery still costs one round trip. ``retry_hints=False`` turns this off.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from ._adapter import (
    SubscriberName,
    Wired,
    chosen_mode,
    flushes_telemetry,
    lambda_entry_point,
    qualified_name,
    takes_options,
    takes_transaction,
)
from ._async import blocking
from ._claimcheck import ClaimCheck, resolve
from ._config import Mode, env_float, idempotency_disabled
from ._cutover import PowertoolsCutover
from ._engine import Completion, Engine, Intent
from ._fingerprint import canonical_document, fingerprint, parse_json
from ._keys import Scope
from ._replay import ReplayHook, replayed
from ._select import FingerprintSelector, KeySelector, Selector
from ._store import DynamoStore
from ._transaction import Transaction
from ._value import Value, set_field
from .errors import ConfigurationError
from .names import KEY_MESSAGE_ATTRIBUTE, SQS_ADAPTER, VISIBILITY_TIMEOUT_ENV

#: Dotted paths into the (unwrapped) JSON content that may carry a propagated event id.
DEFAULT_KEY_PATHS: tuple[str, ...] = ("event_id",)


class Message(Value):
    """One SQS record as the handler sees it.

    - ``content``: the decoded message without its transport envelope: the
      EventBridge ``detail``, the SNS ``Message``, or the body (JSON-decoded when
      it is JSON, else the raw text);
    - ``key``: the message's idempotency key (``key=``, else :func:`default_key`'s; do not log it);
    - ``record``: Powertools' ``SQSRecord`` (``record.raw_event`` is the record as Lambda delivers it);
    - ``message_id``: the SQS message id.

    A ``key=`` or ``fingerprint=`` expression searches the record as Lambda delivers it
    with ``body`` replaced by ``content`` (``key="messageId"``, ``key="body.order_id"``);
    a callable is given the :class:`Message` (its ``key`` still empty).
    """

    __slots__ = ("_attributes", "content", "key", "record")

    content: Any
    key: str
    record: Any
    #: The envelope's attributes when the consumer already unwrapped the body (:func:`default_key` reads them).
    _attributes: dict[str, str] | None

    def __init__(self, record: Any, key: str, content: Any) -> None:
        set_field(self, "record", record)
        set_field(self, "key", key)
        set_field(self, "content", content)
        set_field(self, "_attributes", None)

    @property
    def message_id(self) -> str:
        """The SQS message id."""
        return str(self.record.message_id)


#: What ``@idempotent_sqs`` decorates: ``handler(message, txn)``, or ``handler(message)`` (claim-first).
RecordHandler = Callable[[Message, Transaction], Any] | Callable[[Message], Any]


def unwrap(body: str) -> tuple[Any, dict[str, str]]:
    """The content of a message body and the envelope's string attributes (SNS ``MessageAttributes``)."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return body, {}
    message, content, attributes = _envelope(doc)
    if message is not None:
        content, _ = unwrap(message)
    return content, attributes


def _envelope(doc: Any) -> tuple[str | None, Any, dict[str, str]]:
    """``(SNS Message text, None, its attributes)`` for a notification, else ``(None, content, {})``."""
    if not isinstance(doc, dict):
        return None, doc, {}
    if doc.get("Type") == "Notification" and "TopicArn" in doc and isinstance(doc.get("Message"), str):
        attributes = {k: str(v.get("Value")) for k, v in (doc.get("MessageAttributes") or {}).items()
                      if isinstance(v, dict)}
        return doc["Message"], None, attributes
    if "detail-type" in doc and "source" in doc and "detail" in doc:
        return None, doc["detail"], {}
    return None, doc, {}


def default_key(paths: Sequence[str] = DEFAULT_KEY_PATHS,
                attribute: str = KEY_MESSAGE_ATTRIBUTE) -> Callable[[Message], str]:
    """The default ``key=``: the ``attribute`` message attribute (SQS or SNS envelope), then ``paths`` in the
    content, else the SQS message id. Pass ``key=default_key(paths=("detail.order_id",))`` to look elsewhere."""

    def extract(message: Message) -> str:
        record, content = message.record, message.content
        attr = record.message_attributes[attribute]
        if attr is not None and attr.string_value:
            return str(attr.string_value)
        envelope_attributes = message._attributes
        if envelope_attributes is None:  # a message built elsewhere: its body is read here
            _, envelope_attributes = unwrap(record.body)
        if envelope_attributes.get(attribute):
            return envelope_attributes[attribute]
        for path in paths:
            value: Any = content
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, (str, int)) and str(value):
                return str(value)
        return str(record.message_id)

    return extract


def _document(message: Message) -> Any:
    """What ``key=`` / ``fingerprint=`` expressions search: the record as delivered, ``body`` its content."""
    return {**message.record.raw_event, "body": message.content}


def message_fingerprint(body: str) -> str:
    """Hash of the canonical message content (envelope excluded), read from the body's text.

    The content is canonicalised as :mod:`retrysafe._fingerprint` does (exact numbers, no
    duplicate member names); content that is not JSON is hashed as its text. Raises
    :class:`~retrysafe.errors.InvalidInputError` when the content has no canonical form.
    """
    content = _canonical_content(body)
    part = b"raw:" + content.encode("utf-8", "surrogatepass") if isinstance(content, str) else \
        b"json:" + canonical_document(content.document)
    return fingerprint(["sqs/v1", part])


class _Parsed:
    """A parsed JSON document (as opposed to the text of a body that is not JSON)."""

    __slots__ = ("document",)

    def __init__(self, document: Any) -> None:
        self.document = document


def _canonical_content(body: str) -> _Parsed | str:
    """What :func:`unwrap` finds, parsed by :func:`~retrysafe._fingerprint.parse_json` (exact numbers)."""
    is_json, doc = parse_json(body)
    if not is_json:
        return body
    message, content, _ = _envelope(doc)
    return _canonical_content(message) if message is not None else _Parsed(content)


def _unwrapped(record: Any, key: str, content: Any, attributes: dict[str, str]) -> Message:
    """A :class:`Message` that keeps its envelope's attributes: the default key reads them without decoding
    the body a second time (4 µs of a redelivery's own work)."""
    message = Message(record=record, key=key, content=content)
    set_field(message, "_attributes", attributes)
    return message


def _redelivered(record: Any) -> bool:
    """True when SQS says it delivered ``record`` before (``ApproximateReceiveCount`` above 1).

    A count that is missing or not a number (a hand-built event) is no hint.
    """
    count = (record.raw_event.get("attributes") or {}).get("ApproximateReceiveCount")
    return isinstance(count, str) and count.isdecimal() and int(count) > 1


class SqsConsumer(Wired):
    """Configuration and engine of one idempotent SQS consumer.

    Its options are those of :func:`idempotent_sqs`, documented there with their defaults.
    """

    def __init__(self, handler: RecordHandler, *, subscriber: str | None = None, operation: str | None = None,
                 mode: Mode | str | None = None, key: Selector | None = None,
                 fingerprint: Selector | None = None, fifo: bool | None = None,
                 lease_seconds: float | None = None, horizon_seconds: int | None = None,
                 retry_hints: bool = True, claim_check: ClaimCheck | None = None,
                 powertools_cutover: PowertoolsCutover | None = None, on_replay: ReplayHook | None = None,
                 store: DynamoStore | None = None, engine: Engine | None = None) -> None:
        self.takes_txn = takes_transaction(handler, 2)
        self.mode = chosen_mode(mode, self.takes_txn)
        self.handler: Callable[..., Any] = blocking(handler)
        self.subscriber = SubscriberName(subscriber)
        self.operation: str = operation or qualified_name(handler)
        self.key = KeySelector(key if key is not None else default_key())
        self.fingerprint = FingerprintSelector(fingerprint) if fingerprint is not None else None
        self.fifo = fifo
        self.lease_seconds = _lease(lease_seconds)
        self.retry_hints = retry_hints
        self.claim_check = claim_check if claim_check is not None else ClaimCheck.from_env()
        self.on_replay = on_replay
        self._processors = threading.local()  # per thread: "fifo"|"standard" -> idle batch processors
        self.wire(horizon_seconds, store, engine, powertools_cutover)

    def process(self, record: Any, context: Any = None) -> Any:
        """Process one record at most once; raises (the record is reported failed) when it must be redelivered."""
        content, attributes = unwrap(record.body)
        if idempotency_disabled():  # no key, no fingerprint, no record: the message is handled as a new one
            return self._unprotected(Message(record=record, key="", content=content))
        key = self.key(_unwrapped(record, "", content, attributes), _document)
        message = _unwrapped(record, key, content, attributes)
        part = message_fingerprint(record.body) if self.fingerprint is None else self.fingerprint(message, _document)
        intent = Intent(Scope("", self.operation, key, adapter=SQS_ADAPTER, subscriber=self.subscriber()), part,
                        self.mode, self.retention, lease_seconds=self.lease_seconds,
                        hinted=self.retry_hints and _redelivered(record))

        def work(txn: Transaction) -> Completion:
            # An outbox event whose body was claim-checked to S3 reaches the handler inline (verified),
            # fetched only when the handler runs (a replay found before it, in claim-first mode, skips it).
            resolved = resolve(content, self.claim_check)
            delivered = message if resolved is content else Message(record=record, key=key, content=resolved)
            return Completion(self.handler(delivered, txn) if self.takes_txn else self.handler(delivered))

        remaining = getattr(context, "get_remaining_time_in_millis", None)
        # Powertools' @idempotent_function(data_keyword_argument="record") hashed the record (its raw event)
        predecessor = self.cutover.predecessor(record) if self.cutover is not None else None
        outcome = self.engine.execute(intent, work, remaining, predecessor=predecessor)
        return replayed(self.on_replay, outcome.result, outcome.replay)

    def _unprotected(self, message: Message) -> Any:
        def work(txn: Transaction) -> Completion:
            resolved = resolve(message.content, self.claim_check)
            return Completion(self.handler(message if resolved is message.content else
                                           Message(record=message.record, key="", content=resolved), txn))

        return self.engine.execute_unkeyed(Scope("", self.operation, "", adapter=SQS_ADAPTER,
                                                 subscriber=self.subscriber()), work, self.retention,
                                           steps=self.mode is Mode.CLAIM_FIRST).result

    @flushes_telemetry
    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """The Lambda handler: process the batch and return the partial batch response."""
        records = event.get("Records") or []
        fifo = self.fifo if self.fifo is not None else any(
            str(r.get("eventSourceARN", "")).endswith(".fifo") for r in records)
        if not fifo and records and isinstance(records, list):
            return _partial_response(records, self.process, context)

        from aws_lambda_powertools.utilities.batch import process_partial_response

        def process(record: Any) -> Any:
            return self.process(record, context)

        # Idle processors of this thread, reused as Powertools documents (one processor for every batch; each
        # batch starts by clearing the last one's outcome): making one per batch took 11 µs of a redelivery's
        # own work. A processor in use (a handler that runs a batch of this consumer itself) is not shared.
        idle: list[Any] = self._processors.__dict__.setdefault("fifo" if fifo else "standard", [])
        processor = idle.pop() if idle else _batch_processor(fifo)
        try:
            # The context reaches process() through the closure, not through Powertools: given a context, the
            # processor inspects the record handler's signature on every batch (17 µs, a tenth of a
            # redelivery's own work) to decide whether to pass it on.
            return dict(process_partial_response(event, process, processor))
        finally:
            idle.append(processor)


#: Powertools' ``SQSRecord`` once a batch imported it (an import statement per batch was 1-2 µs of a redelivery's).
_sqs_record: Any = None


def _partial_response(records: list[Any], process: Callable[[Any, Any], Any], context: Any) -> dict[str, Any]:
    """The partial batch response of a standard queue's batch: each record (as Powertools' ``SQSRecord``)
    processed in turn, those whose processing raised listed as failed, as Powertools' ``BatchProcessor``
    reports them (``raise_on_entire_batch_failure=False``).

    Hand-written: the processor's own work around the records (its per-batch setup, outcome bookkeeping
    and report) was 18.5 µs of a redelivery's, 13% of retrysafe's own CPU there (measured in place). FIFO
    batches, whose failures also fail the rest of their message group, and events that are no batch, still
    go through Powertools.
    """
    global _sqs_record
    if _sqs_record is None:  # Powertools is loaded by the first batch, not on import (a cold start's share)
        from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

        _sqs_record = SQSRecord
    wrap = _sqs_record
    failures: list[dict[str, str]] = []
    for record in records:
        try:
            process(wrap(record), context)
        except Exception:  # noqa: BLE001 - a failure of one record is that record's, as Powertools catches it
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


def _batch_processor(fifo: bool) -> Any:
    """A Powertools batch processor reporting failures per message; on FIFO queues a failure also fails the
    rest of its message group in the batch."""
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
    from aws_lambda_powertools.utilities.batch.sqs_fifo_partial_processor import SqsFifoPartialProcessor

    if fifo:
        processor = SqsFifoPartialProcessor(skip_group_on_error=True)
        processor.raise_on_entire_batch_failure = False
        return processor
    return BatchProcessor(EventType.SQS, raise_on_entire_batch_failure=False)


class SqsLambdaHandler(Protocol):
    """What ``@idempotent_sqs`` returns: the Lambda handler, with its :class:`SqsConsumer` attached."""

    consumer: SqsConsumer

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]: ...


@takes_options
def idempotent_sqs(
    func: RecordHandler, /, *,
    subscriber: str | None = None,
    operation: str | None = None,
    mode: Mode | str | None = None,
    key: Selector | None = None,
    fingerprint: Selector | None = None,
    fifo: bool | None = None,
    lease_seconds: float | None = None,
    horizon_seconds: int | None = None,
    retry_hints: bool = True,
    claim_check: ClaimCheck | None = None,
    powertools_cutover: PowertoolsCutover | None = None,
    on_replay: ReplayHook | None = None,
    store: DynamoStore | None = None,
    engine: Engine | None = None,
) -> SqsLambdaHandler:
    """Make an SQS record handler idempotent and turn it into the Lambda handler of its queue.

    Used as ``@idempotent_sqs`` or ``@idempotent_sqs(option=...)``. The decorated function receives a :class:`Message`
    and the :class:`~retrysafe.Transaction` that commits its writes and outbox events with the
    processed-message record. Enable ``ReportBatchItemFailures`` on the event source mapping.
    The options (the same for :class:`SqsConsumer`):

    - ``subscriber`` (default: the deployed function, ``RETRYSAFE_SUBSCRIBER`` else
      ``AWS_LAMBDA_FUNCTION_NAME``, read at the first call): the consumer the processed-message
      records belong to, so two consumers of one event each process it once.
    - ``operation`` (default: the function's ``module.qualname``): the operation the records are scoped by.
    - ``mode`` (default: ``Mode.ATOMIC`` for ``handler(message, txn)``, ``Mode.CLAIM_FIRST`` for
      ``handler(message)``, whose effects are elsewhere): claim-first for foreign effects; its lease is the
      queue's visibility timeout.
    - ``key`` (default :func:`default_key`: the ``idempotency-key`` attribute, then an event id in
      the body, else the message id): a JMESPath expression searching the record with ``body``
      decoded (``"messageId"``, ``"body.order_id"``), or a callable given the :class:`Message`.
    - ``fingerprint`` (default: the whole content): the same kind of selector, selecting what must
      match between deliveries of a key.
    - ``fifo`` (default ``None``: detected from the queue ARN): FIFO batch semantics (a failure
      fails the rest of its message group in the batch).
    - ``lease_seconds`` (default ``RETRYSAFE_VISIBILITY_TIMEOUT_SECONDS``, the queue's visibility
      timeout, which the constructs set): the claim lease in claim-first mode.
    - ``horizon_seconds`` (default ``RETRYSAFE_RETRY_HORIZON_SECONDS``, else 7 days): record lifetime.
    - ``retry_hints`` (default ``True``): in atomic mode, a message received before
      (``ApproximateReceiveCount`` above 1) claims first when the record cache misses, so an
      already processed one is acknowledged after one ``PutItem`` without running the handler.
    - ``claim_check`` (default ``RETRYSAFE_CLAIM_CHECK_BUCKET``): the bucket claim-checked bodies are
      fetched from.
    - ``powertools_cutover`` (default ``None``): a :class:`~retrysafe.PowertoolsCutover` while switching
      from a Powertools record handler (``@idempotent_function(data_keyword_argument="record")``):
      a first delivery Powertools completed is acknowledged from its record (see the migration guide).
    - ``on_replay`` (default ``None``): ``hook(result, info) -> result``, called for each message that is
      acknowledged as a replay (never on a first delivery) with the handler's stored result and the
      :class:`~retrysafe.ReplayInfo` (record id, expiry: never the raw key): for metrics or logging of
      redeliveries. Its return value becomes the record's result (what :meth:`SqsConsumer.process`
      returns; the batch response lists failures only). No DynamoDB call of its own; a hook that raises
      fails that message: it is redelivered and replayed again, the handler does not run again.
    - ``store`` / ``engine`` (default ``DynamoStore.from_env()``): where records live.

    Example::

        @idempotent_sqs
        def handler(message, txn):
            order = message.content["payload"]
            txn.update({"pk": f"invoice#{order['id']}"}, "SET total = :t", values={":t": order["total"]},
                       table="invoices")
    """
    consumer = SqsConsumer(func, subscriber=subscriber, operation=operation, mode=mode, key=key, fingerprint=fingerprint, fifo=fifo,
                           lease_seconds=lease_seconds, horizon_seconds=horizon_seconds,
                           retry_hints=retry_hints, claim_check=claim_check, powertools_cutover=powertools_cutover,
                           on_replay=on_replay, store=store, engine=engine)

    def wrapper(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return consumer(event, context)

    return cast(SqsLambdaHandler, lambda_entry_point(func, wrapper, consumer=consumer))


def _lease(explicit: float | None) -> float | None:
    value = float(explicit) if explicit is not None else env_float(os.environ, VISIBILITY_TIMEOUT_ENV, None)
    if value is None:
        return None
    if value <= 0:
        raise ConfigurationError(f"lease_seconds (the queue's visibility timeout) must be positive, got {value}")
    return value

__all__ = ["DEFAULT_KEY_PATHS", "Message", "RecordHandler", "SqsConsumer", "SqsLambdaHandler",
           "default_key", "idempotent_sqs", "message_fingerprint", "unwrap"]
