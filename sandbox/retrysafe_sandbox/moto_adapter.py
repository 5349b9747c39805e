"""What the sandbox needs from moto beyond its API, in one place: a WSGI adapter in front of moto's server app.

The sandbox talks to moto only over HTTP, as the functions do, with one exception kept here.
:func:`adapted` wraps moto's WSGI app (``DomainDispatcherApplication(create_backend_app)``, what
``moto.server.ThreadedMotoServer`` serves) so that DynamoDB behaves as DynamoDB does for the
app's transactions. Nothing in moto is patched: the adapter only swaps table objects in the
backend's table dict for the length of one request it holds the DynamoDB lock for.

The moto behaviours it relies on, each with its own test in ``tests/sandbox/test_moto_adapter.py``
(a moto release that changes one fails that test by name; the sandbox's moto range in
``pyproject.toml`` has no upper bound below the next major version because of them):

1. **A cancelled transaction replaces the table object** (``TransactWriteItems`` deep-copies each
   table before applying, and on cancellation puts the copy back in ``backend.tables``). Two
   concurrent requests could then lose a committed write, and a shard iterator taken before the
   transaction keeps reading the discarded table's stream. So every DynamoDB *and* DynamoDB Streams
   request runs under one lock (DynamoDB transactions are serializable anyway); other services
   (SQS long polls) stay concurrent.
2. **A cancelled transaction's writes reach the stream shard it was applied to** (moto applies the
   actions to report every cancellation reason, then restores the copy). A stream reader holding an
   iterator on that shard would see a phantom ``INSERT`` (a cancelled duplicate's outbox event,
   published). So a ``TransactWriteItems`` is first tried on stream-less copies of its tables and
   sent again to the real tables only when that trial committed: a cancelled transaction leaves
   the real tables and their streams untouched, as in DynamoDB.
3. **The trial is possible**: ``dynamodb_backends[account][region].tables`` is the dict every
   request looks its tables up in; a ``copy.deepcopy`` of a table is independent of it; and a table
   whose ``stream_shard`` is ``None`` is written without stream records.
4. **Sending the same transaction twice applies it twice**: moto ignores ``ClientRequestToken``
   (DynamoDB would answer the second send from its idempotency window without applying it, which
   would turn the real send into a no-op after the trial).
5. **DynamoDB Streams fails on a table without a stream shard** (``DescribeStream`` and
   ``GetShardIterator`` raise ``AttributeError``: ``'NoneType' object has no attribute 'created_on'``
   / ``'id'``, a 500 and a traceback on the console). A trial table has none, which is one more
   reason Streams requests wait for the DynamoDB lock: they never see a trial table.
6. **Every access key is the default account** (``123456789012``, the sandbox's
   :data:`~.assembly.ACCOUNT`): keys moto did not issue map to it, so the functions' per-role keys
   and the sandbox's own key see the same tables.
7. **An update that creates its item streams two INSERTs** (``UpdateItem``, alone or in a transaction,
   puts the bare key first and then streams the updated item), where DynamoDB streams one. A stream
   consumer would get the key-only image first (a ``KeyError`` on any other attribute). So after every
   DynamoDB write request (still under the lock: no reader saw them) the key-only ``INSERT`` that is
   followed by another ``INSERT`` of the same key is dropped, and the request's later records are
   renumbered (moto's shard finds a record by its sequence number's offset).
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from .assembly import ACCOUNT, REGION

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
#: ``X-Amz-Target`` prefixes of the requests that share the DynamoDB lock (behaviours 1 and 5).
DYNAMODB_TARGETS = ("DynamoDB_20120810.", "DynamoDBStreams_20120810.")
TRANSACT_WRITE = "DynamoDB_20120810.TransactWriteItems"
#: Requests besides transactions whose updates may create items (behaviour 7).
CREATING_UPDATES = ("DynamoDB_20120810.UpdateItem",)


def moto_app() -> WsgiApp:
    """moto's WSGI app for every service (the one ``ThreadedMotoServer`` serves)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    return DomainDispatcherApplication(create_backend_app)


def dynamodb_tables() -> dict[str, Any]:
    """The table dict of moto's DynamoDB backend for the sandbox's account and region (behaviour 3)."""
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[ACCOUNT][REGION].tables


def serialized(environ: dict[str, Any]) -> bool:
    """Whether a request waits for the DynamoDB lock: every DynamoDB and DynamoDB Streams request."""
    return str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(DYNAMODB_TARGETS)


@contextmanager
def trial_tables(names: Iterable[str]) -> Iterator[None]:
    """Replace the named tables by stream-less deep copies for the block, then put the real ones back."""
    tables = dynamodb_tables()
    real = {name: tables[name] for name in names if name in tables}
    for name, table in real.items():
        # the memo puts None where the stream shard was: the copy has no stream, and the shard's records
        # (every record the table ever streamed) are not copied for each transaction
        tables[name] = copy.deepcopy(table, {id(table.stream_shard): None})
    try:
        yield
    finally:
        tables.update(real)


@contextmanager
def one_insert_per_item() -> Iterator[None]:
    """Drop the key-only ``INSERT`` moto streams before the item an update creates (behaviour 7)."""
    shards = [t.stream_shard for t in dynamodb_tables().values() if t.stream_shard is not None]
    before = [len(shard.items) for shard in shards]
    try:
        yield
    finally:
        for shard, start in zip(shards, before, strict=True):
            added = [r.record for r in shard.items[start:]]
            dropped = {i for i, (record, following) in enumerate(itertools.pairwise(added))
                       if record["eventName"] == following["eventName"] == "INSERT"
                       and record["dynamodb"]["Keys"] == following["dynamodb"]["Keys"]
                       and set(record["dynamodb"].get("NewImage", {})) <= set(record["dynamodb"]["Keys"])}
            if dropped:
                kept = [r for i, r in enumerate(shard.items[start:]) if i not in dropped]
                for offset, record in enumerate(kept):
                    record.record["dynamodb"]["SequenceNumber"] = str(shard.starting_sequence_number + start + offset)
                shard.items[start:] = kept


def _table_names(body: bytes) -> set[str]:
    try:
        items = json.loads(body or b"{}").get("TransactItems", [])
        return {str(next(iter(item.values())).get("TableName")) for item in items}
    except (ValueError, AttributeError, StopIteration):
        return set()  # not a transaction moto can read: it answers the validation error itself


def _call(app: WsgiApp, environ: dict[str, Any], body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
    answer: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        answer[:] = [status, headers]
        return lambda _: None

    chunks = b"".join(app({**environ, "wsgi.input": io.BytesIO(body)}, start_response))
    return answer[0], answer[1], chunks


def adapted(app: WsgiApp) -> WsgiApp:
    """moto's app with DynamoDB requests serialized and transactions applied all or nothing (module doc)."""
    lock = threading.Lock()

    def adapter(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not serialized(environ):
            return app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        with lock:
            if environ.get("HTTP_X_AMZ_TARGET") == TRANSACT_WRITE:
                with trial_tables(_table_names(body)):
                    status, headers, raw = _call(app, environ, body)
                if status.startswith("200"):
                    with one_insert_per_item():
                        status, headers, raw = _call(app, environ, body)
            elif environ.get("HTTP_X_AMZ_TARGET") in CREATING_UPDATES:
                with one_insert_per_item():
                    status, headers, raw = _call(app, environ, body)
            else:
                status, headers, raw = _call(app, environ, body)
        start_response(status, headers)
        return [raw]

    return adapter
