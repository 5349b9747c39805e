"""DynamoDB's documented semantics in front of moto, for tests whose outcome depends on them.

moto is the embedded DynamoDB and does almost everything right (expressions,
types, conditions, ``ReturnValuesOnConditionCheckFailure``, streams), but it
differs from DynamoDB exactly where idempotency lives:

* its ``UpdateItem`` is not atomic under threads (the condition is evaluated,
  then a bare item holding only the key is stored, then the update applied);
* a cancelled ``TransactWriteItems`` restores a copy of the tables taken before
  it started, losing a write another thread committed meanwhile;
* it ignores ``ClientRequestToken``.

:class:`DynamoSemantics` sits in front of it on a client (as the server of the
client's attempt seam, :class:`retrysafe._transport.Attempts`, under the
client's retries) and gives what DynamoDB documents:

* **each request atomic**: one lock (per process, shared by every installed
  client) around every request, so requests interleave only between calls.
  This works for in-process ``mock_aws`` and for moto's server on 127.0.0.1
  when that server is only used through installed clients of this process;
* **transactions all-or-nothing, no lost concurrent writes**: moto's rollback
  is correct once nothing runs concurrently with it;
* **ClientRequestToken idempotency** for :data:`TOKEN_WINDOW_SECONDS` after the
  first successful request completed, by a controllable ``clock``: the same
  token with the same parameters answers the first success again without
  applying anything; with other parameters it is
  ``IdempotentParameterMismatchException``. A request whose first attempt
  failed (cancelled, throttled) is not remembered: the retry runs as new.
  botocore generates a token for every ``TransactWriteItems`` that has none and
  resends the same token when it retries, exactly as against DynamoDB.

Faults (crashes, lost responses, throttling, cancellation reasons) are the
business of :class:`~retrysafe.testing._boundary.Boundary`; they sit between
the caller and this layer, as the network does.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self

from .._transport import Reply, region_of
from ..names import PARTITION_KEY, TTL_ATTRIBUTE
from ._boundary import attempts_of, error_reply, release_if_idle

#: How long DynamoDB remembers a successful ``ClientRequestToken``, after that request completed.
TOKEN_WINDOW_SECONDS = 600.0

#: One lock for the embedded DynamoDB of this process: requests are applied one at a time.
_BACKEND_LOCK = threading.RLock()


@dataclass(frozen=True)
class _Token:
    digest: str
    completed_at: float
    body: bytes


class DynamoSemantics:
    """The DynamoDB guarantees moto lacks, installed on one or more clients of one embedded DynamoDB.

    ``clock`` decides the token window (give it the clock your engine uses).
    """

    def __init__(self, clock: Callable[[], float] = time.time, *,
                 token_window_seconds: float = TOKEN_WINDOW_SECONDS) -> None:
        self.clock = clock
        self.token_window_seconds = token_window_seconds
        self._tokens: dict[str, _Token] = {}
        #: Requests answered from a remembered token (nothing applied), for assertions.
        self.token_replays = 0

    # -- installation ---------------------------------------------------------
    def install(self, client: Any) -> Self:
        """Serve every request of ``client`` through this layer (replaces another layer installed there)."""
        attempts_of(client).server = self
        return self

    def uninstall(self, client: Any) -> None:
        """Send ``client``'s requests straight to moto again."""
        attempts = attempts_of(client)
        if attempts.server is self:
            attempts.server = None
        release_if_idle(client)

    @staticmethod
    def of(client: Any) -> DynamoSemantics | None:
        """The layer installed on ``client``, if any."""
        server = attempts_of(client).server
        return server if isinstance(server, DynamoSemantics) else None

    @staticmethod
    @contextmanager
    def exclusive() -> Iterator[None]:
        """Hold the embedded DynamoDB: no request is applied meanwhile (a scheduler's or a TTL sweeper's step)."""
        with _BACKEND_LOCK:
            yield

    # -- serving ----------------------------------------------------------------
    def serve(self, operation: str, params: Mapping[str, Any], send: Callable[[], Reply]) -> tuple[Reply, bool]:
        """Apply one request atomically; returns the reply and whether it applied anything new."""
        with _BACKEND_LOCK:
            token = params.get("ClientRequestToken") if operation == "TransactWriteItems" else None
            if not token:
                reply = send()
                return reply, reply.ok
            digest = _digest({k: v for k, v in params.items() if k != "ClientRequestToken"})
            now = self.clock()
            known = self._tokens.get(str(token))
            if known is not None and now - known.completed_at <= self.token_window_seconds:
                if known.digest != digest:
                    return error_reply(400, "IdempotentParameterMismatchException",
                                          "DynamoDB rejected the request because you retried a request with a "
                                          "different payload but with an idempotent token that was already used."), False
                self.token_replays += 1
                return Reply(200, known.body), False
            reply = send()
            if reply.ok:
                self._tokens[str(token)] = _Token(digest, now, reply.body)
            return reply, reply.ok

    def forget_tokens(self) -> None:
        """Forget every remembered token (a new embedded DynamoDB)."""
        self._tokens.clear()


#: The requests that write items: what replication carries to the other regions.
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


@dataclass(frozen=True)
class _Change:
    sequence: int
    region: str
    table: str
    key: str
    item: dict[str, Any] | None  # None: deleted


class _Replica(DynamoSemantics):
    """One region's :class:`DynamoSemantics`, noting every item its own requests change."""

    def __init__(self, tables: GlobalTables, region: str, clock: Callable[[], float]) -> None:
        super().__init__(clock)
        self.region = region
        self._tables = tables

    def serve(self, operation: str, params: Mapping[str, Any], send: Callable[[], Reply]) -> tuple[Reply, bool]:
        if operation not in _WRITES:
            return super().serve(operation, params, send)
        with _BACKEND_LOCK:
            before = self._tables.snapshot(self.region)
            reply, applied = super().serve(operation, params, send)
            if applied:
                self._tables.changed(self.region, before)
            return reply, applied


class GlobalTables:
    """Replicas of ``tables`` in ``regions`` with multi-Region eventual consistency (MREC), on moto's backends.

    Install it on clients of several regions (:meth:`install`): each request is served by its
    client's region only, through that region's :class:`DynamoSemantics` (atomic requests,
    transactions, request tokens), so conditions are evaluated against the local replica and a
    transaction is atomic in its own region only, as DynamoDB documents for MREC global tables.
    Every item a region's own request changes is queued for the other regions and reaches them
    when :meth:`replicate` runs: the time between is the replication lag, any moment of which a
    test (or the exploration) may choose. Items replicate one by one, and a write of one item in
    two regions within the lag resolves last-writer-wins in every region, by the order the writes
    were applied (DynamoDB's per-item timestamps). Tables keyed by a partition key alone.
    """

    def __init__(self, regions: Sequence[str], tables: Sequence[str], clock: Callable[[], float] = time.time) -> None:
        self.regions = tuple(regions)
        self.tables = tuple(tables)
        self._replicas = {region: _Replica(self, region, clock) for region in self.regions}
        self._queue: list[_Change] = []
        self._stamps: dict[tuple[str, str, str], int] = {}
        self._sequence = 0
        #: ``(table, key) -> how many of the regions' own requests changed that item`` (replicated writes
        #: not counted): a business effect committed in two regions counts 2 even after last writer wins.
        self.local_writes: Counter[tuple[str, str]] = Counter()

    def install(self, client: Any) -> Self:
        """Serve ``client``'s requests by the replica of its region."""
        self._replicas[str(region_of(client))].install(client)
        return self

    @property
    def pending(self) -> int:
        """Item changes not yet replicated."""
        return len(self._queue)

    def replicate(self) -> int:
        """Deliver every queued change to the other regions (last writer wins); returns how many items changed."""
        delivered = 0
        with _BACKEND_LOCK:
            queue, self._queue = self._queue, []
            for change in queue:
                for region in self.regions:
                    if region == change.region or self._stamps.get((region, change.table, change.key), 0) > \
                            change.sequence:
                        continue  # the region wrote this item later: its write wins, and replicates in turn
                    backend = _backend(region)
                    if change.item is None:
                        backend.delete_item(change.table, json.loads(change.key))
                    else:
                        backend.put_item(change.table, change.item)
                    self._stamps[(region, change.table, change.key)] = change.sequence
                    delivered += 1
        return delivered

    def forget(self) -> None:
        """Drop queued changes, write counts and remembered tokens (empty tables, a new run)."""
        self._queue.clear()
        self._stamps.clear()
        self.local_writes.clear()
        for replica in self._replicas.values():
            replica.forget_tokens()

    def items(self, region: str, table: str) -> dict[str, dict[str, Any]]:
        """``key -> item`` of ``table`` in ``region``, as DynamoDB returns items (read from moto's backend)."""
        found = {}
        for item in list(_backend(region).get_table(table).items.values()):
            attributes = item.to_json()["Attributes"]
            found[_key(_backend(region).get_table(table), attributes)] = attributes
        return found

    # -- the replicas' side --------------------------------------------------------------
    def snapshot(self, region: str) -> dict[str, dict[str, str]]:
        """Every table of ``region``, each item as canonical JSON, by key."""
        return {table: {key: json.dumps(item, sort_keys=True) for key, item in self.items(region, table).items()}
                for table in self.tables}

    def changed(self, region: str, before: Mapping[str, Mapping[str, str]]) -> None:
        """Queue what ``region``'s last request changed (compared with ``before``)."""
        after = self.snapshot(region)
        for table in self.tables:
            old, new = before.get(table, {}), after[table]
            for key in sorted(set(old) | set(new)):
                if old.get(key) == new.get(key):
                    continue
                self._sequence += 1
                self._stamps[(region, table, key)] = self._sequence
                self.local_writes[(table, _key_value(key))] += 1
                item = json.loads(new[key]) if key in new else None
                self._queue.append(_Change(self._sequence, region, table, key, item))


def _backend(region: str) -> Any:
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][region]


def _key(table: Any, attributes: Mapping[str, Any]) -> str:
    if table.range_key_attr:
        raise TypeError(f"GlobalTables models tables keyed by a partition key alone; {table.name} has a sort key")
    return json.dumps({table.hash_key_attr: attributes[table.hash_key_attr]}, sort_keys=True)


def _key_value(key: str) -> str:
    """The partition key's value of a key made by :func:`_key` (``{"pk": {"S": "x"}}`` -> ``x``)."""
    attribute = next(iter(json.loads(key).values()))
    return str(next(iter(attribute.values())))


def ttl_sweep(client: Any, table: str, now: float, *, attribute: str = TTL_ATTRIBUTE) -> list[str]:
    """Delete what DynamoDB's TTL may delete at ``now``: items whose ``attribute`` is an epoch before it.

    DynamoDB deletes expired items at some moment after their expiry (typically
    within days), never before; calling this at any chosen moment is one
    possible timing. Returns the ``pk`` of each deleted item. Each delete is
    conditioned on the item still being expired (a concurrent rewrite wins).
    """
    from botocore.exceptions import ClientError

    deleted: list[str] = []
    expired = {"ExpressionAttributeNames": {"#a": attribute},
               "ExpressionAttributeValues": {":now": {"N": str(int(now))}}}
    with DynamoSemantics.exclusive():
        request: dict[str, Any] = {"TableName": table, "ConsistentRead": True, "FilterExpression": "#a < :now",
                                   **expired}
        while True:  # the scan's pages (any transport: no botocore paginator)
            page = client.scan(**request)
            for item in page.get("Items", []):
                key = {PARTITION_KEY: item[PARTITION_KEY]}
                try:
                    client.delete_item(TableName=table, Key=key, ConditionExpression="#a < :now", **expired)
                except ClientError as error:
                    if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                        continue  # rewritten meanwhile: no longer expired
                    raise
                deleted.append(str(item[PARTITION_KEY].get("S")))
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return deleted


def instant_retries(client: Any) -> None:
    """Keep botocore's own retry decisions for ``client`` (standard mode; or the fast transport's, which are
    the same) but without sleeping or a retry quota.

    botocore backs off up to seconds between attempts (randomly) and stops
    retrying once a per-client quota is spent: both make a fault test slow and
    dependent on history. What is retried, and how many times, is unchanged.
    Raises ``TypeError`` when the client does not use the standard retry mode.
    """
    from botocore.retries import quota

    from .._crt import CrtTransport

    if isinstance(client, CrtTransport):  # the fast transport: the same retries, its own backoff and quota
        client._sleep = lambda _: None
        client._capacity = client._quota = 2**62
        return
    handler = _standard_retry_handler(client)
    handler._retry_policy._retry_backoff._random = lambda: 0.0  # no public knob for it
    handler._retry_quota._quota = quota.RetryQuota(initial_capacity=2**62)


def _refill_retry_quota(client: Any) -> None:
    """Give ``client``'s standard-mode retry quota back its full capacity (other retry modes have none).

    A client outlives a test (the store from the environment is shared): the timeouts and throttles an
    earlier drill simulated would otherwise have spent the quota, and botocore would stop retrying in
    a later, unrelated drill.
    """
    from botocore.retries import quota

    from .._crt import CrtTransport

    if isinstance(client, CrtTransport):
        client._quota = client._capacity
        return
    try:
        handler = _standard_retry_handler(client)
    except TypeError:
        return
    spent = handler._retry_quota._quota
    handler._retry_quota._quota = quota.RetryQuota(initial_capacity=spent._max_capacity)


def _standard_retry_handler(client: Any) -> Any:
    meta = getattr(client, "meta", None)
    if meta is None or not hasattr(meta, "events"):
        raise TypeError("instant_retries needs botocore's client (a transport of another kind retries its own way)")
    service = meta.service_model.service_id.hyphenize()
    emitter = getattr(meta.events, "_emitter", None)
    entry = getattr(emitter, "_unique_id_handlers", {}).get(f"retry-config-{service}")
    handler = getattr(entry.get("handler") if entry else None, "__self__", None)
    if handler is None or not hasattr(handler, "_retry_policy"):
        raise TypeError("instant_retries needs a client in botocore's standard retry mode "
                        "(Config(retries={'mode': 'standard', ...}))")
    return handler


def _digest(params: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=repr).encode()).hexdigest()


__all__ = ["TOKEN_WINDOW_SECONDS", "DynamoSemantics", "GlobalTables", "instant_retries", "ttl_sweep"]
