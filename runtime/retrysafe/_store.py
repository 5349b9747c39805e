"""DynamoDB persistence of idempotency records: every call the engine and the operator's command line make.

Each method is one DynamoDB round trip (a claim that takes over a lapsed lease: two).
Conditions compare the expiry attribute itself (TTL deletion lags by up to two days)
and every write after a claim is conditioned on the owner token (fencing).

Lost responses: botocore retries a call whose response was lost (timeout, reset)
with the same parameters, after DynamoDB may have applied it. Every record write is
therefore non-reentrant (its condition fails when it was already applied) and carries
the writer's token, so the record DynamoDB returns (``ALL_OLD``) shows the retry
its own write. Transactions also carry a ``ClientRequestToken``, which DynamoDB honours
for 10 minutes (a retried transaction then answers success without applying again).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._cache import RecordCache
from ._codec import check_limits, parse_item_refusal
from ._config import in_lambda, table_name_from_env
from ._keys import Scope
from ._record import PENDING, AttributeMap, Record, encode_checkpoints, from_item, to_item
from ._regions import HomeRegions
from ._transport import DynamoTransport, region_of
from ._value import Value, set_field
from .errors import (
    BusinessConditionFailedError,
    ConfigurationError,
    RecordConflict,
    StoreAccessError,
    StoreRejectedError,
    StoreUnavailableError,
    TransactionRaced,
    TransactionTooLargeError,
)
from .names import PARTITION_KEY, TRANSPORT_ENV, TTL_ATTRIBUTE, VERIFY_ENV

#: Operation error codes (after botocore's retries) and ``CancellationReasons`` codes that mean
#: "throttled or unavailable: retry later". The two vocabularies differ (``ThrottlingException``
#: vs ``ThrottlingError``). A transaction still in progress under our token has an unknown outcome.
_UNAVAILABLE = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "InternalServerError", "ServiceUnavailable", "InternalFailure", "LimitExceededException",
    "TransactionInProgressException", "ThrottlingError", "ProvisionedThroughputExceeded",
})
#: The error code of a cancelled transaction (its reasons are in the message).
_TRANSACTION_CANCELED = "TransactionCanceledException"
#: ``CancellationReasons`` codes of a transaction that DynamoDB refused as invalid.
_REJECTED_REASONS = frozenset({"ValidationError", "ItemCollectionSizeLimitExceeded"})

_ABSENT_CONDITION = f"attribute_not_exists({PARTITION_KEY}) OR #exp < :now"
_TAKEOVER_CONDITION = "#st = :pending AND #ow = :previous AND #fp = :fp AND #le < :now_ms AND #exp >= :now"
_OWNER_CONDITION = "#ow = :ow AND #st = :pending"
_CHECKPOINT_CONDITION = "#ow = :ow AND #st = :pending AND attribute_not_exists(#cp.#step)"


#: Set by Lambda during a function's init phase (``on-demand``, ``provisioned-concurrency``, ``snap-start``).
INIT_PHASE_ENV = "AWS_LAMBDA_INITIALIZATION_TYPE"

_SHARED: dict[str, DynamoStore] = {}


class ClaimResult(Value):
    """A successful claim: ``held`` is the record this owner now holds (with the checkpoints and
    instance of a lapsed claim it took over, named by ``previous``)."""

    __slots__ = ("held", "previous")

    held: Record
    previous: Record | None

    def __init__(self, held: Record, previous: Record | None = None) -> None:
        set_field(self, "held", held)
        set_field(self, "previous", previous)


def client_config() -> Any:
    """The botocore ``Config`` of the store's own client: standard retries (4 attempts), short timeouts."""
    from botocore.config import Config

    return Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2, read_timeout=10,
                  tcp_keepalive=True, parameter_validation=False)


def request_token(*parts: str) -> str:
    """A ``ClientRequestToken`` (at most 36 characters) naming one logical transaction."""
    import hashlib

    return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()[:32]


class DynamoStore:
    """The idempotency table. One instance per table, shared by every operation using it.

    Every DynamoDB call goes through ``client``, a :class:`~retrysafe._transport.DynamoTransport`:
    by default botocore's DynamoDB client, created on first use (not at import) with botocore's
    standard retry mode, or the fast transport on awscrt when ``RETRYSAFE_TRANSPORT=crt`` selects it;
    pass ``client`` to bring your own. ``cache`` keeps this
    container's completed records for replays with zero DynamoDB calls (engines
    built on this store use it unless given their own); the store :meth:`from_env`
    returns has one, a store constructed directly has none unless passed.
    """

    def __init__(self, table_name: str, *, client: DynamoTransport | None = None, region_name: str | None = None,
                 cache: RecordCache | None = None, home_regions: HomeRegions | None = None,
                 home_clients: Mapping[str, DynamoTransport] | None = None) -> None:
        if not table_name:
            raise ConfigurationError("DynamoStore needs a table name")
        self.table_name = table_name
        self.cache = cache
        #: Where each scope's record writes go when the table has replicas (:meth:`for_scope`).
        self.home_regions = home_regions
        self._client = client
        self._region = region_name
        self._home_clients = dict(home_clients or {})
        self._homes: dict[str, DynamoStore] = {}

    @classmethod
    def from_env(cls) -> DynamoStore:
        """The store named by ``RETRYSAFE_TABLE``, shared by every operation of this container.

        In Lambda's init phase its client is created at once and it is registered for SnapStart's
        runtime hooks (:mod:`retrysafe._snapstart`). In Lambda's execution environment
        (:func:`~retrysafe._config.in_lambda`) it keeps a :class:`~retrysafe._cache.RecordCache`
        (1024 records, 4 MiB of results) of the records this container completed or replayed: a replay
        that lands on the same warm container is answered from memory. Elsewhere (a test suite, where
        each test may create the table afresh under the same name) it has none: a cache would outlive
        the table and answer from a record the new table does not hold.
        """
        name = table_name_from_env()
        store = _SHARED.get(name)
        if store is None:
            store = cls(name, cache=RecordCache() if in_lambda() else None, home_regions=HomeRegions.from_env())
            if os.environ.get(VERIFY_ENV, "").lower() in ("1", "true", "yes"):
                store.verify()
            if INIT_PHASE_ENV in os.environ:  # Lambda's init phase: the client exists before the first request
                from . import _snapstart as snapstart

                for each in (store, *store.home_stores()):  # the home regions' clients too
                    each.client  # noqa: B018
                    snapstart.register_snapstart(each)  # and before a SnapStart snapshot, without connections
            _SHARED[name] = store
        return store

    def verify(self) -> None:
        """Check at cold start that the table exists and is keyed by ``pk`` (one ``DescribeTable`` call).

        Off by default (it costs a round trip and ``dynamodb:DescribeTable`` on every cold start);
        ``RETRYSAFE_VERIFY_TABLE=true`` turns it on for :meth:`from_env`. Without it, a missing
        table is a :class:`ConfigurationError` on the first request instead.
        """
        table = self._call("describe_table", TableName=self.table_name)["Table"]
        keys = [(k["AttributeName"], k["KeyType"]) for k in table.get("KeySchema", [])]
        if keys != [(PARTITION_KEY, "HASH")]:
            raise ConfigurationError(
                f"idempotency table {self.table_name!r} has key schema {keys}; retrysafe needs a table "
                f"whose only key is the partition key {PARTITION_KEY!r} (string), as IdempotencyTable deploys it"
            )

    @property
    def client(self) -> Any:
        """The :class:`~retrysafe._transport.DynamoTransport` every call of this store goes through: the
        low-level botocore DynamoDB client unless one was passed or ``RETRYSAFE_TRANSPORT=crt`` selects
        the awscrt transport (:mod:`retrysafe._crt`, which falls back to botocore where it does not apply);
        created on first use (in Lambda's init phase by :meth:`from_env`).

        The store's own client skips botocore's client-side parameter validation: every request
        the store and the engine send is built here, and the test suite checks each shape against
        botocore's service model (DynamoDB validates again). Its session skips botocore's data for other
        services (:mod:`retrysafe._botodata`: a cheaper cold start, the same client).
        A client you pass keeps its own config.
        """
        if self._client is None and os.environ.get(TRANSPORT_ENV):
            from ._crt import selected_transport

            self._client = selected_transport(self._region)
        if self._client is None:
            from ._botodata import dynamodb_client

            client = dynamodb_client(self._region, client_config())
            # A refusal's items (ALL_OLD: the record a replay answers with) decoded once, not twice.
            client.meta.events.register("before-parse.dynamodb", parse_item_refusal)
            self._client = client
        return self._client

    @property
    def region(self) -> str | None:
        """The region this store's requests go to (its client's, else the configured or the environment's)."""
        if self._client is not None:
            return region_of(self._client)
        return self._region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")

    def for_scope(self, scope: Scope) -> DynamoStore:
        """The store holding ``scope``'s records: this one, or (with :attr:`home_regions`) the home region's.

        No DynamoDB call: the home region is a rule on the scope's tenant. The home store has no
        routing of its own, shares this store's cache and table name, and uses ``home_clients[region]``
        when given, else a client of its own (created on first use, with this store's configuration).
        """
        routing = self.home_regions
        return self if routing is None else self._home(routing.region_for(scope))

    def home_stores(self) -> list[DynamoStore]:
        """The store of every home region other than this store's own (created now; none without routing)."""
        routing = self.home_regions
        if routing is None:
            return []
        return [self._home(region) for region in sorted(routing.regions) if region != self.region]

    def _home(self, region: str) -> DynamoStore:
        if region == self.region:
            return self
        home = self._homes.get(region)
        if home is None:
            home = DynamoStore(self.table_name, client=self._home_clients.get(region), region_name=region,
                               cache=self.cache)
            self._homes[region] = home
        return home

    # -- the record operations ---------------------------------------------
    def claim(self, record: Record, now: float) -> ClaimResult:
        """Claim-first mode: take the key with a lease, as ``record.owner``.

        A new or expired key is claimed with one conditional ``PutItem`` that replaces
        everything of a previous intent (its checkpoints included). A pending claim with
        the same fingerprint whose lease lapsed (a crashed invocation) is taken over with
        a second call that keeps its checkpoints and instance. A claim whose response was
        lost finds its own owner token and holds the key. Raises :class:`RecordConflict`
        with the current record when the key is taken.
        """
        try:
            self._put_absent(record, now)
            return ClaimResult(record)
        except _ConditionFailed as failed:
            current = failed.record
        if current is not None and current.owner == record.owner:
            return ClaimResult(current)  # our own claim: the response was lost and botocore retried
        if (current is None or current.state != PENDING or current.fingerprint != record.fingerprint
                or current.lease_remaining(now) > 0 or current.lease_until_ms is None):
            raise RecordConflict(current)
        return self._take_over(record, current, now)

    def put_absent(self, record: Record, now: float) -> None:
        """Atomic mode with nothing to write but the completed ``record``: one conditional ``PutItem``.

        The key must be absent or expired, as for :meth:`commit` without ``owner``, but without a
        transaction (transactional writes cost double). A ``PutItem`` carries no ``ClientRequestToken``:
        a retry whose first attempt was applied meets its own record, which the :class:`RecordConflict`
        carries (``ALL_OLD``) with ``record.owner``, the writer's token. Raises :class:`RecordConflict`,
        :class:`TransactionRaced` (a concurrent transaction held the item), :class:`StoreUnavailableError`
        or :class:`StoreRejectedError`.
        """
        try:
            self._put_absent(record, now)
        except _ConditionFailed as failed:
            raise RecordConflict(failed.record) from None

    def put_owned(self, record: Record, owner: str) -> None:
        """Claim-first mode with nothing to write but the completed ``record``: one conditional ``PutItem``.

        The record must still be pending under ``owner``, as for :meth:`commit` with ``owner``, but
        without a transaction (transactional writes cost double). The put replaces the claim (its
        checkpoints included) as the transaction's ``Put`` does. Without a ``ClientRequestToken`` a retry
        whose first attempt was applied meets the completed record, which the :class:`RecordConflict`
        carries (``ALL_OLD``) with ``record.owner``; a claim taken over or expired and replaced carries
        another owner (fenced off). Raises :class:`RecordConflict`, :class:`TransactionRaced`,
        :class:`StoreUnavailableError` or :class:`StoreRejectedError`.
        """
        try:
            self._call("put_item", TableName=self.table_name, Item=to_item(record),
                       ConditionExpression=_OWNER_CONDITION, ExpressionAttributeNames={"#ow": "ow", "#st": "st"},
                       ExpressionAttributeValues={":ow": {"S": owner}, ":pending": {"S": PENDING}},
                       ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except _ConditionFailed as failed:
            raise RecordConflict(failed.record) from None

    def _put_absent(self, record: Record, now: float) -> None:
        """``record`` where its key is absent or expired; raises :class:`_ConditionFailed` with the current item."""
        self._call("put_item", TableName=self.table_name, Item=to_item(record),
                   ConditionExpression=_ABSENT_CONDITION, ExpressionAttributeNames={"#exp": TTL_ATTRIBUTE},
                   ExpressionAttributeValues={":now": {"N": str(int(now))}},
                   ReturnValuesOnConditionCheckFailure="ALL_OLD")

    def _take_over(self, record: Record, previous: Record, now: float) -> ClaimResult:
        values: AttributeMap = {
            ":pending": {"S": PENDING}, ":previous": {"S": previous.owner or ""}, ":fp": {"S": record.fingerprint},
            ":ow": {"S": record.owner or ""}, ":le": {"N": str(record.lease_until_ms)},
            ":now": {"N": str(int(now))}, ":now_ms": {"N": str(int(now * 1000))},
        }
        try:
            response = self._call(
                "update_item", TableName=self.table_name, Key={PARTITION_KEY: {"S": record.record_id}},
                UpdateExpression="SET #ow = :ow, #le = :le", ConditionExpression=_TAKEOVER_CONDITION,
                ExpressionAttributeNames={"#st": "st", "#ow": "ow", "#fp": "fp", "#le": "le", "#exp": TTL_ATTRIBUTE},
                ExpressionAttributeValues=values, ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except _ConditionFailed as failed:
            if failed.record is not None and failed.record.owner == record.owner:
                return ClaimResult(failed.record, previous)  # our own takeover, response lost
            raise RecordConflict(failed.record) from None
        return ClaimResult(from_item(response["Attributes"]), previous)

    def commit(self, record: Record, actions: list[dict[str, Any]], now: float, owner: str | None = None,
               token: str | None = None) -> None:
        """Write the completed ``record`` together with ``actions`` in one ``TransactWriteItems``.

        Without ``owner`` (atomic mode) the record must be absent or expired; with
        it (claim-first) the record must still be pending under that owner.
        ``record.owner`` (the writer's token) stays on the completed record, so a retry
        whose first attempt was applied recognises its own write in the
        :class:`RecordConflict`. ``token`` is the ``ClientRequestToken``.
        Raises :class:`RecordConflict`, :class:`BusinessConditionFailedError`,
        :class:`TransactionRaced`, :class:`StoreUnavailableError` or :class:`StoreRejectedError`.
        """
        put: dict[str, Any] = {"TableName": self.table_name, "Item": to_item(record),
                               "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        if owner is None:
            put["ConditionExpression"] = _ABSENT_CONDITION
            put["ExpressionAttributeNames"] = {"#exp": TTL_ATTRIBUTE}
            put["ExpressionAttributeValues"] = {":now": {"N": str(int(now))}}
        else:
            put["ConditionExpression"] = _OWNER_CONDITION
            put["ExpressionAttributeNames"] = {"#ow": "ow", "#st": "st"}
            put["ExpressionAttributeValues"] = {":ow": {"S": owner}, ":pending": {"S": PENDING}}
        self.transact([{"Put": put}, *actions], record_first=True, token=token)

    def transact(self, items: list[dict[str, Any]], *, record_first: bool = False, token: str | None = None) -> None:
        """Run ``items`` as one ``TransactWriteItems`` (with ``token`` as its ``ClientRequestToken``).

        With ``record_first`` a failed condition on the first action raises
        :class:`RecordConflict`; a failed condition on any business action raises
        :class:`BusinessConditionFailedError` with its index among those actions.
        The other cancellation reasons: ``TransactionConflict`` raises
        :class:`TransactionRaced`; ``ThrottlingError`` and ``ProvisionedThroughputExceeded``
        :class:`StoreUnavailableError`; ``ValidationError`` and ``ItemCollectionSizeLimitExceeded``
        :class:`StoreRejectedError` (:class:`TransactionTooLargeError` for an item over 400 KB).
        """
        if not items:
            return
        check_limits(items)
        request: dict[str, Any] = {"TransactItems": items}
        if token is not None:
            request["ClientRequestToken"] = token
        try:
            self._call("transact_write_items", **request)
        except _Cancelled as cancelled:
            raise _cancellation(cancelled.reasons, record_first) from None

    def checkpoint(self, record_id: str, owner: str, step: str, checkpoints: dict[str, Any],
                   actions: list[dict[str, Any]], token: str | None = None) -> None:
        """Save a claim's ``checkpoints`` (``step`` is the new one) with ``actions`` in one ``TransactWriteItems``.

        The record must still be pending under ``owner`` and must not hold ``step`` yet:
        raises :class:`RecordConflict` when fenced off, or when this very checkpoint was
        already applied (the current record then holds ``step`` under ``owner``).
        """
        update = {"TableName": self.table_name, "Key": {PARTITION_KEY: {"S": record_id}}, "UpdateExpression": "SET #cp = :cp",
                  "ConditionExpression": _CHECKPOINT_CONDITION,
                  "ExpressionAttributeNames": {"#cp": "cp", "#ow": "ow", "#st": "st", "#step": step},
                  "ExpressionAttributeValues": {":cp": encode_checkpoints(checkpoints), ":ow": {"S": owner},
                                                ":pending": {"S": PENDING}},
                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        self.transact([{"Update": update}, *actions], record_first=True, token=token)

    def release(self, record_id: str, owner: str, *, keep_checkpoints: bool = False) -> tuple[bool, Record | None]:
        """Free a pending claim held by ``owner`` so a retry runs again.

        The claim is deleted; with ``keep_checkpoints`` (the claim holds, or may hold,
        committed checkpoints) its lease is ended instead, so the next attempt with
        the same fingerprint takes over at once and resumes after the last checkpoint.
        Returns ``(True, None)`` when released, including a retried delete whose first
        attempt was applied (nothing left); ``(False, current)`` when the record is no
        longer this owner's pending claim (fenced off, or completed).
        """
        condition: dict[str, Any] = {
            "ConditionExpression": _OWNER_CONDITION, "ExpressionAttributeNames": {"#ow": "ow", "#st": "st"},
            "ExpressionAttributeValues": {":ow": {"S": owner}, ":pending": {"S": PENDING}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        key = {PARTITION_KEY: {"S": record_id}}
        try:
            if keep_checkpoints:
                condition["ExpressionAttributeNames"]["#le"] = "le"
                condition["ExpressionAttributeValues"][":ended"] = {"N": "0"}
                self._call("update_item", TableName=self.table_name, Key=key, UpdateExpression="SET #le = :ended",
                           **condition)
            else:
                self._call("delete_item", TableName=self.table_name, Key=key, **condition)
        except _ConditionFailed as failed:
            return failed.record is None, failed.record
        return True, None

    def get(self, record_id: str) -> Record | None:
        """Read a record with a consistent read (used only when waiting for an in-flight duplicate)."""
        item = self.get_item(record_id)
        return from_item(item) if item else None

    def get_item(self, record_id: str) -> AttributeMap | None:
        """The record's item as stored (one consistent ``GetItem``): :meth:`get` and the command line's
        ``inspect``, which reports the stored sizes."""
        response = self._call("get_item", TableName=self.table_name, Key={PARTITION_KEY: {"S": record_id}},
                              ConsistentRead=True)
        item: AttributeMap | None = response.get("Item")
        return item or None

    # -- the operator's command line (retrysafe._cli) ----------------------
    def delete_as_read(self, record: Record) -> None:
        """Delete ``record`` only if it is still as it was read: one conditional ``DeleteItem``.

        The condition compares the state, the writer's token, the expiry and the lease end with
        ``record`` (an attribute absent when read must still be absent), so a record that changed in
        between is kept: a lapsed claim taken over or completed (another owner), an expired record
        claimed afresh. Raises :class:`RecordConflict` with the record as it is now (``None``: it is
        gone, deleted meanwhile or by a retry of this very request whose first attempt was applied).
        """
        condition = ["attribute_exists(#pk)", "#st = :st", "#exp = :exp"]
        values: AttributeMap = {":st": {"S": record.state}, ":exp": {"N": str(record.expires_at)}}
        if record.owner is None:
            condition.append("attribute_not_exists(#ow)")
        else:
            condition.append("#ow = :ow")
            values[":ow"] = {"S": record.owner}
        if record.lease_until_ms is None:
            condition.append("attribute_not_exists(#le)")
        else:
            condition.append("#le = :le")
            values[":le"] = {"N": str(record.lease_until_ms)}
        try:
            self._call("delete_item", TableName=self.table_name, Key={PARTITION_KEY: {"S": record.record_id}},
                       ConditionExpression=" AND ".join(condition),
                       ExpressionAttributeNames={"#pk": PARTITION_KEY, "#st": "st", "#exp": TTL_ATTRIBUTE,
                                                 "#ow": "ow", "#le": "le"},
                       ExpressionAttributeValues=values, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except _ConditionFailed as failed:
            raise RecordConflict(failed.record) from None

    def scan_page(self, filter_expression: str, attribute_names: dict[str, str], attribute_values: AttributeMap, *,
                  projection: str | None = None, page_size: int | None = None,
                  start: AttributeMap | None = None) -> tuple[list[AttributeMap], AttributeMap | None, int]:
        """One page of a ``Scan`` of the table (one round trip): the items ``filter_expression`` keeps,
        the key to start the next page from (``None`` after the last page) and how many items the page
        read before filtering. ``page_size`` caps the items read (DynamoDB's ``Limit``; else 1 MB)."""
        request: dict[str, Any] = {"TableName": self.table_name, "FilterExpression": filter_expression,
                                   "ExpressionAttributeNames": attribute_names,
                                   "ExpressionAttributeValues": attribute_values}
        if projection is not None:
            request["ProjectionExpression"] = projection
        if page_size is not None:
            request["Limit"] = page_size
        if start is not None:
            request["ExclusiveStartKey"] = start
        response = self._call("scan", **request)
        return list(response.get("Items", [])), response.get("LastEvaluatedKey"), int(response.get("ScannedCount", 0))

    # -- error mapping -------------------------------------------------------
    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        transport: DynamoTransport = self.client
        try:
            result: dict[str, Any] = getattr(transport, operation)(**kwargs)
            return result
        except Exception as error:
            raise self._translate(error) from error

    def _translate(self, error: Exception) -> Exception:
        response = getattr(error, "response", None)
        if not isinstance(response, dict):
            from botocore.exceptions import BotoCoreError

            if isinstance(error, BotoCoreError):  # connection errors, timeouts after retries
                return StoreUnavailableError(f"DynamoDB unreachable after retries ({type(error).__name__})",
                                             code=type(error).__name__)
            return error
        code = response.get("Error", {}).get("Code", "")
        if code == "ConditionalCheckFailedException":
            item = response.get("Item")
            return _ConditionFailed(from_item(item) if item else None)
        if code == "TransactionCanceledException":
            return _Cancelled(response.get("CancellationReasons") or [])
        if code == "TransactionConflictException":
            return TransactionRaced(str(error))
        if code == "ResourceNotFoundException":
            return StoreAccessError(
                f"idempotency table {self.table_name!r} (or a table in the transaction) does not exist in this "
                "account/region: check RETRYSAFE_TABLE and the function's region", code=code
            )
        if code in ("AccessDeniedException", "UnrecognizedClientException"):
            return StoreAccessError(f"no access to DynamoDB table {self.table_name!r}: "
                                    f"{response['Error'].get('Message')}", code=code)
        message = str(response.get("Error", {}).get("Message", ""))
        if code == "ValidationException" and "size" in message.lower():
            return TransactionTooLargeError(f"DynamoDB refused the transaction as too large: {message}")
        if code in _UNAVAILABLE or response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
            return StoreUnavailableError(f"DynamoDB unavailable after retries ({code})", code=code)
        return StoreRejectedError(f"DynamoDB rejected the request ({code}): {message}", code=code)


def _cancellation(reasons: list[dict[str, Any]], record_first: bool) -> Exception:
    """The error for a cancelled transaction, from its ``CancellationReasons`` (one per action, in order)."""
    business = reasons
    if record_first:
        first = reasons[0] if reasons else {}
        if first.get("Code") == "ConditionalCheckFailed":
            return RecordConflict(from_item(first["Item"]) if first.get("Item") else None)
        business = reasons[1:]
    for index, reason in enumerate(business):
        if reason.get("Code") == "ConditionalCheckFailed":
            return BusinessConditionFailedError(index, reason.get("Item"))
    codes = {str(r.get("Code")) for r in reasons} - {"None"}
    described = ", ".join(f"{r.get('Code')}: {r.get('Message', '')}" for r in reasons if r.get("Code") != "None")
    for reason in reasons:
        if reason.get("Code") == "ValidationError" and "size" in str(reason.get("Message", "")).lower():
            return TransactionTooLargeError(f"DynamoDB cancelled the transaction: {described}")
    if codes & _REJECTED_REASONS:
        return StoreRejectedError(f"DynamoDB cancelled the transaction: {described}", code=_TRANSACTION_CANCELED)
    if codes & _UNAVAILABLE:
        return StoreUnavailableError(f"DynamoDB cancelled the transaction: {described}", code=_TRANSACTION_CANCELED)
    if "TransactionConflict" in codes:
        return TransactionRaced("a concurrent transaction touched the same items")
    return StoreRejectedError(f"DynamoDB cancelled the transaction: {described or 'no reason given'}",
                              code=_TRANSACTION_CANCELED)


class _ConditionFailed(Exception):
    def __init__(self, record: Record | None) -> None:
        self.record = record


class _Cancelled(Exception):
    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        self.reasons = reasons

