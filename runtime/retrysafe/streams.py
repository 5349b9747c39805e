"""``@idempotent_kinesis`` and ``@idempotent_dynamodb_stream``: idempotent consumers of Kinesis Data Streams
and DynamoDB Streams.

Each record runs through the engine scoped by its subscriber (default the deployed function),
operation (default the handler's ``module.qualname``) and record key, as an SQS message is: in atomic
mode the processed-record record, the handler's writes and its outbox events
commit in ONE ``TransactWriteItems``, and a redelivered record meets its record
in that same call (one round trip either way); claim-first mode claims first
(two round trips for a first delivery).

Order: Lambda reads each batch from one shard, and a stream's records are
ordered within their shard. After a record fails, the rest of its shard's batch
is reported failed without running (Powertools' ``BatchProcessor`` extended the
way its ``SqsFifoPartialProcessor`` is), so Lambda restarts the shard at the
failed record and no later change overtakes it. The shard of a Kinesis record
is named in its ``eventID`` (``shardId-...:<sequence number>``); a DynamoDB
Streams record does not name its shard, so its whole batch (one stream) is one
ordered unit.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from . import names
from ._adapter import (
    SubscriberName,
    Wired,
    chosen_mode,
    flushes_telemetry,
    lambda_entry_point,
    qualified_name,
    takes_transaction,
)
from ._async import blocking
from ._config import Mode, idempotency_disabled
from ._engine import Completion, Engine, Intent
from ._fingerprint import canonical_json, canonical_value, fingerprint
from ._keys import Scope
from ._replay import ReplayHook, replayed
from ._select import FingerprintSelector, KeySelector, Selector
from ._store import DynamoStore
from ._transaction import Transaction
from ._value import Value, set_field
from .errors import ConfigurationError, InvalidInputError, ShardHaltedError

__all__ = [
    "DYNAMODB_DEFAULT_KEY", "KINESIS_DEFAULT_KEY", "TTL_IDENTITY", "DynamoDBChange", "DynamoDBStreamHandler",
    "DynamoDBStreamLambdaHandler", "KinesisHandler", "KinesisLambdaHandler", "KinesisMessage", "StreamConsumer",
    "idempotent_dynamodb_stream", "idempotent_kinesis",
]

#: What DynamoDB's TTL writes in ``userIdentity`` of the ``REMOVE`` records of the items it deleted.
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
#: The default keys, as the JMESPath expressions a ``key=`` option would spell them.
KINESIS_DEFAULT_KEY = "[kinesis.partitionKey, kinesis.sequenceNumber]"
DYNAMODB_DEFAULT_KEY = "dynamodb.SequenceNumber"


class KinesisMessage(Value):
    """One Kinesis record as the handler sees it.

    ``content`` is the record's data decoded: the JSON value when the data is
    JSON, else the text when it is UTF-8, else the bytes. ``data`` is the raw
    bytes, ``key`` the idempotency key, ``record`` Powertools' ``KinesisStreamRecord``.
    """

    __slots__ = ("content", "data", "key", "record")

    content: Any
    data: bytes
    key: str
    record: Any

    def __init__(self, record: Any, key: str, data: bytes, content: Any) -> None:
        set_field(self, "record", record)
        set_field(self, "key", key)
        set_field(self, "data", data)
        set_field(self, "content", content)

    @property
    def partition_key(self) -> str:
        """The producer's partition key."""
        return str(self.record.kinesis.partition_key)

    @property
    def sequence_number(self) -> str:
        """The record's sequence number in its shard (what ``batchItemFailures`` reports)."""
        return str(self.record.kinesis.sequence_number)

    @property
    def shard_id(self) -> str:
        """The shard the record was read from (from its ``eventID``)."""
        return _kinesis_shard(self.record.raw_event)


class DynamoDBChange(Value):
    """One DynamoDB Streams record (a change of one item) as the handler sees it.

    ``keys``, ``new_image`` and ``old_image`` are deserialized by Powertools'
    data class (boto3's ``TypeDeserializer``: numbers as ``Decimal``, sets as
    ``set``, binary as ``Binary``); an image the stream view type does not
    carry is ``{}``. ``record`` is Powertools' ``DynamoDBRecord``.
    """

    __slots__ = ("key", "record")

    key: str
    record: Any

    def __init__(self, record: Any, key: str) -> None:
        set_field(self, "record", record)
        set_field(self, "key", key)

    @property
    def event_name(self) -> str:
        """``INSERT``, ``MODIFY`` or ``REMOVE``."""
        return str(self.record.raw_event.get("eventName"))

    @property
    def keys(self) -> dict[str, Any]:
        """The item's primary key attributes."""
        return dict(self.record.dynamodb.keys)

    @property
    def new_image(self) -> dict[str, Any]:
        """The item after the change (``{}`` for a ``REMOVE`` or a view type without new images)."""
        return dict(self.record.dynamodb.new_image)

    @property
    def old_image(self) -> dict[str, Any]:
        """The item before the change (``{}`` for an ``INSERT`` or a view type without old images)."""
        return dict(self.record.dynamodb.old_image)

    @property
    def sequence_number(self) -> str:
        """The record's sequence number (what ``batchItemFailures`` reports)."""
        return str(self.record.dynamodb.sequence_number)

    @property
    def is_ttl_removal(self) -> bool:
        """True for a ``REMOVE`` written by DynamoDB's TTL (the item expired), not by an application's delete."""
        return _is_ttl_removal(self.record.raw_event)


M = TypeVar("M", KinesisMessage, DynamoDBChange)
#: What ``@idempotent_kinesis`` decorates: ``handler(message, txn)``, or ``handler(message)`` (claim-first).
KinesisHandler = Callable[[KinesisMessage, Transaction], Any] | Callable[[KinesisMessage], Any]
#: What ``@idempotent_dynamodb_stream`` decorates: ``handler(change, txn)``, or ``handler(change)`` (claim-first).
DynamoDBStreamHandler = Callable[[DynamoDBChange, Transaction], Any] | Callable[[DynamoDBChange], Any]


class _Source(ABC, Generic[M]):
    """What differs between the two streams: reading a record, its shard, its document and its default parts."""

    name: ClassVar[str]
    default_key: ClassVar[str]
    #: The record namespace of the stream's adapter (:data:`retrysafe.names.ADAPTERS`).
    adapter: ClassVar[str]
    #: Where the record's sequence number is (what ``batchItemFailures`` reports).
    sequence_path: ClassVar[tuple[str, str]]

    def sequence_number(self, raw: Any) -> str | None:
        """The sequence number of a raw record; ``None`` when it has none (not a record Lambda sends)."""
        outer, inner = self.sequence_path
        part = raw.get(outer) if isinstance(raw, dict) else None
        value = part.get(inner) if isinstance(part, dict) else None
        return value if isinstance(value, str) else None

    @property
    @abstractmethod
    def event_type(self) -> Any:
        """Powertools' ``EventType`` of the stream."""

    @abstractmethod
    def message(self, record: Any, key: Callable[[Any], str]) -> M:
        """The handler's view of ``record`` (Powertools' data class), keyed by ``key``."""

    @abstractmethod
    def shard(self, raw: dict[str, Any]) -> str:
        """The ordered unit ``raw`` belongs to."""

    @abstractmethod
    def document(self, message: M) -> Any:
        """The JSON document JMESPath selectors search."""

    @abstractmethod
    def fingerprint(self, message: M) -> str:
        """The default fingerprint: the record's content, without what changes on redelivery."""


class _Kinesis(_Source[KinesisMessage]):
    name = "idempotent_kinesis"
    adapter = names.KINESIS_ADAPTER
    default_key = KINESIS_DEFAULT_KEY
    sequence_path = ("kinesis", "sequenceNumber")

    @property
    def event_type(self) -> Any:
        from aws_lambda_powertools.utilities.batch import EventType

        return EventType.KinesisDataStreams

    def message(self, record: Any, key: Callable[[Any], str]) -> KinesisMessage:
        try:
            data = base64.b64decode(record.kinesis.data, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise InvalidInputError("the Kinesis record's data is not base64") from None
        probe = KinesisMessage(record, "", data, _decoded(data))
        return KinesisMessage(record, key(probe), data, probe.content)

    def shard(self, raw: dict[str, Any]) -> str:
        return f"{raw.get('eventSourceARN')}/{_kinesis_shard(raw)}"

    def document(self, message: KinesisMessage) -> Any:
        raw = message.record.raw_event
        content = message.content
        kinesis = dict(raw.get("kinesis") or {})
        if not isinstance(content, bytes):  # data that is neither JSON nor text stays base64, as delivered
            kinesis["data"] = content
        return {**raw, "kinesis": kinesis}

    def fingerprint(self, message: KinesisMessage) -> str:
        canonical = canonical_json(message.data)
        part = b"json:" + canonical if canonical is not None else b"raw:" + message.data
        return fingerprint(["kinesis/v1", part])


class _DynamoDB(_Source[DynamoDBChange]):
    name = "idempotent_dynamodb_stream"
    adapter = names.DYNAMODB_STREAM_ADAPTER
    default_key = DYNAMODB_DEFAULT_KEY
    sequence_path = ("dynamodb", "SequenceNumber")

    @property
    def event_type(self) -> Any:
        from aws_lambda_powertools.utilities.batch import EventType

        return EventType.DynamoDBStreams

    def message(self, record: Any, key: Callable[[Any], str]) -> DynamoDBChange:
        if record.dynamodb is None:
            raise InvalidInputError("the DynamoDB Streams record has no 'dynamodb' member")
        probe = DynamoDBChange(record, "")
        return DynamoDBChange(record, key(probe))

    def shard(self, raw: dict[str, Any]) -> str:
        # A DynamoDB Streams record does not name its shard; Lambda reads each batch from one shard.
        return str(raw.get("eventSourceARN"))

    def document(self, message: DynamoDBChange) -> Any:
        return message.record.raw_event  # DynamoDB JSON as delivered: exact numbers, every type tagged

    def fingerprint(self, message: DynamoDBChange) -> str:
        raw = message.record.raw_event
        change = raw.get("dynamodb") or {}
        part = {"eventName": raw.get("eventName"),
                **{name: change[name] for name in ("Keys", "NewImage", "OldImage") if name in change}}
        return fingerprint(["dynamodb-stream/v1", canonical_value(part)])


def _decoded(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _kinesis_shard(raw: dict[str, Any]) -> str:
    shard, separator, _ = str(raw.get("eventID") or "").partition(":")
    return shard if separator else ""


def _is_ttl_removal(raw: dict[str, Any]) -> bool:
    identity = raw.get("userIdentity")
    return raw.get("eventName") == "REMOVE" and isinstance(identity, dict) and \
        identity.get("type") == TTL_IDENTITY["type"] and identity.get("principalId") == TTL_IDENTITY["principalId"]


class StreamConsumer(Wired, Generic[M]):
    """Configuration and engine of one idempotent stream consumer (see :func:`idempotent_kinesis`)."""

    def __init__(self, handler: Callable[..., Any], source: _Source[M], *, subscriber: str | None,
                 operation: str | None, mode: Mode | str | None, key: Selector | None, fingerprint: Selector | None,
                 skip_ttl_removals: bool, lease_seconds: float | None, horizon_seconds: int | None,
                 on_replay: ReplayHook | None, store: DynamoStore | None, engine: Engine | None) -> None:
        if lease_seconds is not None and lease_seconds <= 0:
            raise ConfigurationError(f"lease_seconds must be positive, got {lease_seconds}")
        self.source: _Source[M] = source
        self.handler: Callable[..., Any] = blocking(handler)
        self.subscriber = SubscriberName(subscriber)
        self.operation: str = operation or qualified_name(handler)
        self.lease_seconds = lease_seconds
        self.takes_txn = takes_transaction(handler, 2)
        self.mode = chosen_mode(mode, self.takes_txn)
        self.key = KeySelector(key if key is not None else source.default_key)
        self.fingerprint = FingerprintSelector(fingerprint) if fingerprint is not None else None
        self.skip_ttl_removals = skip_ttl_removals
        self.on_replay = on_replay
        self.wire(horizon_seconds, store, engine)

    def process(self, record: Any, context: Any = None) -> Any:
        """Process one record at most once; raises (the record is reported failed) when it must be redelivered.

        ``record`` is Powertools' data class of the record; ``context`` (the Lambda context) gives a
        claim its lease, the invocation's remaining time. A TTL removal with ``skip_ttl_removals`` is
        acknowledged without running and without a DynamoDB call.
        """
        if self.skip_ttl_removals and _is_ttl_removal(record.raw_event):
            return None
        source = self.source
        if idempotency_disabled():  # no key, no fingerprint, no record: the record is handled as a new one
            unkeyed = source.message(record, lambda probe: "")
            return self.engine.execute_unkeyed(
                Scope("", self.operation, "", adapter=source.adapter, subscriber=self.subscriber()),
                lambda txn: Completion(self.handler(unkeyed, txn)), self.retention,
                steps=self.mode is Mode.CLAIM_FIRST).result
        message = source.message(record, lambda probe: self.key(probe, source.document))
        part = self.fingerprint(message, source.document) if self.fingerprint is not None else \
            source.fingerprint(message)
        intent = Intent(Scope("", self.operation, message.key, adapter=source.adapter, subscriber=self.subscriber()),
                        part, self.mode, self.retention, lease_seconds=self.lease_seconds)

        def work(txn: Transaction) -> Completion:
            return Completion(self.handler(message, txn) if self.takes_txn else self.handler(message))

        remaining = getattr(context, "get_remaining_time_in_millis", None)
        outcome = self.engine.execute(intent, work, remaining)
        return replayed(self.on_replay, outcome.result, outcome.replay)

    def run(self, event: dict[str, Any], context: Any) -> Any:
        """Process the batch in order; returns Powertools' batch processor (its ``response()`` is the
        partial batch response, its ``exceptions`` what each failed record raised, in order)."""
        from aws_lambda_powertools.utilities.batch import process_partial_response

        processor = _shard_ordered(self.source)

        def process(record: Any) -> Any:
            return self.process(record, context)

        # The context reaches process() through this closure, not through Powertools: given a context, the
        # processor inspects the record handler's signature on every batch (about 24 µs, measured) to decide
        # whether to pass it on.
        process_partial_response(event, process, processor)
        return processor

    @flushes_telemetry
    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        """The Lambda handler: process the batch in order and return the partial batch response."""
        return dict(self.run(event, context).response())


def _shard_ordered(source: _Source[Any]) -> Any:
    """A Powertools ``BatchProcessor`` that, after a failure, fails the rest of that shard's records unrun."""
    return _processor_class()(source)


@functools.cache
def _processor_class() -> Any:
    # Built on first use: importing Powertools' batch utilities is paid by stream consumers only.
    from aws_lambda_powertools.utilities.batch import BatchProcessor

    halted = (ShardHaltedError, ShardHaltedError("an earlier record of this shard failed in this batch; not run, "
                                                 "so that the shard's order holds"), None)

    class ShardOrderedProcessor(BatchProcessor):
        def __init__(self, source: _Source[Any]) -> None:
            super().__init__(source.event_type, raise_on_entire_batch_failure=False)
            self.source = source
            self.failed_shards: set[str] = set()

        def _get_messages_to_report(self) -> Any:
            # Read from the raw record: Powertools' collectors raise on a record without its
            # 'kinesis'/'dynamodb' member. Such a record has no sequence number: reported as null, which
            # Lambda takes as a failure of the whole batch (retried from its start): nothing is skipped.
            return [{"itemIdentifier": self.source.sequence_number(getattr(failed, "raw_event", None))}
                    for failed in self.fail_messages]

        def _process_record(self, record: dict[str, Any]) -> Any:
            shard = self.source.shard(record)
            if shard in self.failed_shards:
                return self.failure_handler(self._to_batch_type(record, self.event_type), halted)
            outcome = super()._process_record(record)
            if outcome[0] == "fail":
                self.failed_shards.add(shard)
            return outcome

    return ShardOrderedProcessor


class KinesisLambdaHandler(Protocol):
    """What ``@idempotent_kinesis`` returns: the Lambda handler, with its :class:`StreamConsumer` attached."""

    consumer: StreamConsumer[KinesisMessage]

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]: ...


class DynamoDBStreamLambdaHandler(Protocol):
    """What ``@idempotent_dynamodb_stream`` returns: the Lambda handler, with its :class:`StreamConsumer` attached."""

    consumer: StreamConsumer[DynamoDBChange]

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]: ...


def idempotent_kinesis(*, subscriber: str | None = None, operation: str | None = None,
                       mode: Mode | str | None = None, key: Selector | None = None, fingerprint: Selector | None = None,
                       lease_seconds: float | None = None, horizon_seconds: int | None = None,
                       on_replay: ReplayHook | None = None, store: DynamoStore | None = None,
                       engine: Engine | None = None) -> Callable[[KinesisHandler], KinesisLambdaHandler]:
    """Make a Kinesis record handler idempotent and turn it into the Lambda handler of its stream.

    The decorated function receives a :class:`KinesisMessage` and the
    :class:`~retrysafe.Transaction` that commits its writes and outbox events
    with the processed-record record. Enable ``ReportBatchItemFailures`` on the
    event source mapping: failures come back as ``batchItemFailures`` (sequence
    numbers), and after a failure the rest of its shard's batch is reported
    failed without running.

    ``subscriber``: which consumer the records belong to (two consumers of one stream
    each process a record once); default the deployed function (``RETRYSAFE_SUBSCRIBER``,
    else ``AWS_LAMBDA_FUNCTION_NAME``). ``operation``: default the function's ``module.qualname``.
    ``mode``: ``"atomic"`` or ``"claim_first"`` (foreign effects); default atomic for
    ``handler(message, txn)``, claim-first for ``handler(message)``. ``lease_seconds``: a claim's
    lease (default the Lambda's remaining time plus a margin). ``key``: a JMESPath expression or a callable
    selecting the record's key; expressions search the record as Lambda
    delivers it with ``kinesis.data`` decoded (JSON or text), callables get the
    :class:`KinesisMessage`; default ``[kinesis.partitionKey, kinesis.sequenceNumber]``.
    ``fingerprint``: a selector of what must match between deliveries of a key
    (default: the data). ``horizon_seconds``: record lifetime (cover the
    stream's retention). ``on_replay``: ``hook(result, info) -> result``, called for each record
    acknowledged as a replay (never on a first delivery) with the handler's stored result and the
    :class:`~retrysafe.ReplayInfo` (record id, expiry: never the raw key), for metrics or logging;
    its return value becomes the record's result (:meth:`StreamConsumer.process`); no DynamoDB
    call of its own; a hook that raises fails that record (and, as any failure, the rest of its
    shard's batch), which is then replayed again, never re-run. ``store``/``engine``: where records live.

    Example::

        @idempotent_kinesis()
        def handler(message, txn):
            txn.update({"pk": f"account#{message.content['account']}"}, "ADD balance :a",
                       values={":a": message.content["amount"]}, table="accounts")
    """
    def decorate(func: KinesisHandler) -> KinesisLambdaHandler:
        consumer = StreamConsumer(func, _Kinesis(), subscriber=subscriber, operation=operation, mode=mode, key=key,
                                  fingerprint=fingerprint, skip_ttl_removals=False, lease_seconds=lease_seconds,
                                  horizon_seconds=horizon_seconds, on_replay=on_replay, store=store, engine=engine)
        return cast(KinesisLambdaHandler, _entry(func, consumer))

    return decorate


def idempotent_dynamodb_stream(*, subscriber: str | None = None, operation: str | None = None,
                               mode: Mode | str | None = None, key: Selector | None = None,
                               fingerprint: Selector | None = None, skip_ttl_removals: bool = False,
                               lease_seconds: float | None = None, horizon_seconds: int | None = None,
                               on_replay: ReplayHook | None = None, store: DynamoStore | None = None,
                               engine: Engine | None = None) -> Callable[[DynamoDBStreamHandler], DynamoDBStreamLambdaHandler]:
    """Make a DynamoDB Streams record handler idempotent and turn it into the Lambda handler of its stream.

    The decorated function receives a :class:`DynamoDBChange` and the
    :class:`~retrysafe.Transaction`. Options are those of
    :func:`idempotent_kinesis`, except: expressions of ``key``/``fingerprint``
    search the record exactly as Lambda delivers it (images in DynamoDB JSON,
    e.g. ``dynamodb.NewImage.order_id.S``); the default key is
    ``dynamodb.SequenceNumber``; the default fingerprint is the change
    (``eventName``, ``Keys``, ``NewImage``, ``OldImage``). ``skip_ttl_removals``:
    acknowledge the ``REMOVE`` records DynamoDB's TTL writes (``userIdentity``
    ``{"type": "Service", "principalId": "dynamodb.amazonaws.com"}``) without
    running the handler or calling DynamoDB; by default they are delivered and
    :attr:`DynamoDBChange.is_ttl_removal` tells them apart.

    Example::

        @idempotent_dynamodb_stream(subscriber="search-index")  # or () for the deployed function
        def handler(change, txn):
            if change.event_name != "REMOVE":
                txn.put({"pk": f"doc#{change.keys['pk']}", **change.new_image}, table="documents")
    """
    def decorate(func: DynamoDBStreamHandler) -> DynamoDBStreamLambdaHandler:
        consumer = StreamConsumer(func, _DynamoDB(), subscriber=subscriber, operation=operation, mode=mode, key=key,
                                  fingerprint=fingerprint, skip_ttl_removals=skip_ttl_removals,
                                  lease_seconds=lease_seconds, horizon_seconds=horizon_seconds,
                                  on_replay=on_replay, store=store, engine=engine)
        return cast(DynamoDBStreamLambdaHandler, _entry(func, consumer))

    return decorate


def _entry(func: Callable[..., Any], consumer: StreamConsumer[Any]) -> Any:
    def wrapper(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return consumer(event, context)

    return lambda_entry_point(func, wrapper, consumer=consumer)
