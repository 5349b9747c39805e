"""DynamoDB persistence of idempotency records: every call the engine makes, and nothing else.

Each method is exactly one DynamoDB round trip. Conditions compare the expiry
attribute itself (TTL deletion lags by up to two days) and every write after a
claim is conditioned on the owner token (fencing).
"""

from __future__ import annotations

import os
from typing import Any

from ._value import Value
from .config import VERIFY_ENV, table_name_from_env
from .errors import (
    BusinessConditionFailedError,
    ConfigurationError,
    RetrysafeError,
    StoreUnavailableError,
    TransactionTooLargeError,
)
from .record import PENDING, AttributeMap, Record, encode_checkpoints, from_item, to_item
from .transaction import check_limits

_UNAVAILABLE = frozenset({
    "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
    "InternalServerError", "ServiceUnavailable", "InternalFailure", "LimitExceededException",
})

_ATOMIC_CONDITION = "attribute_not_exists(pk) OR #exp < :now"
_CLAIM_CONDITION = ("attribute_not_exists(pk) OR #exp < :now "
                    "OR (#st = :pending AND #le < :now_ms AND #fp = :fp)")
_OWNER_CONDITION = "#ow = :ow AND #st = :pending"


#: Set by Lambda during a function's init phase (``on-demand``, ``provisioned-concurrency``, ``snap-start``).
INIT_PHASE_ENV = "AWS_LAMBDA_INITIALIZATION_TYPE"

_SHARED: dict[str, DynamoStore] = {}


class RecordConflict(RetrysafeError):
    """The record's condition failed; ``current`` is the record DynamoDB returned (ALL_OLD)."""

    def __init__(self, current: Record | None) -> None:
        super().__init__("idempotency record condition failed")
        self.current = current


class TransactionRaced(RetrysafeError):
    """DynamoDB cancelled the transaction because another one touched the same items concurrently."""


class ClaimResult(Value):
    """A successful claim; ``previous`` is the record it replaced (a takeover or an expired record)."""

    __slots__ = ("previous",)

    def __init__(self, previous: Record | None) -> None:
        self.previous = previous


class DynamoStore:
    """The idempotency table. One instance per table, shared by every operation using it.

    The boto3 client is created on first use (not at import) with botocore's
    standard retry mode; pass ``client`` to bring your own.
    """

    def __init__(self, table_name: str, *, client: Any = None, region_name: str | None = None) -> None:
        if not table_name:
            raise ConfigurationError("DynamoStore needs a table name")
        self.table_name = table_name
        self._client = client
        self._region = region_name

    @classmethod
    def from_env(cls) -> DynamoStore:
        """The store named by ``RETRYSAFE_TABLE``, shared by every operation of this container."""
        name = table_name_from_env()
        store = _SHARED.get(name)
        if store is None:
            store = cls(name)
            if os.environ.get(VERIFY_ENV, "").lower() in ("1", "true", "yes"):
                store.verify()
            elif INIT_PHASE_ENV in os.environ:  # Lambda's init phase: create the client before the first request
                store.client  # noqa: B018
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
        if keys != [("pk", "HASH")]:
            raise ConfigurationError(
                f"idempotency table {self.table_name!r} has key schema {keys}; retrysafe needs a table "
                "whose only key is the partition key 'pk' (string), as IdempotencyTable deploys it"
            )

    @property
    def client(self) -> Any:
        """The low-level DynamoDB client (created on first use; in Lambda's init phase by :meth:`from_env`).

        The store's own client skips botocore's client-side parameter validation: every request
        the store and the engine send is built here, and the test suite checks each shape against
        botocore's service model (DynamoDB validates again). A client you pass keeps its own config.
        """
        if self._client is None:
            import botocore.session
            from botocore.config import Config

            config = Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2, read_timeout=10,
                            tcp_keepalive=True, parameter_validation=False)
            self._client = botocore.session.Session().create_client("dynamodb", region_name=self._region,
                                                                    config=config)
        return self._client

    # -- the record operations ---------------------------------------------
    def claim(self, record: Record, now: float) -> ClaimResult:
        """Claim-first mode: take the key with a lease (new, expired, or a lapsed lease with the same fingerprint).

        Raises :class:`RecordConflict` with the current record when the key is taken.
        Checkpoints of a lapsed claim survive the takeover.
        """
        values: AttributeMap = {
            ":pending": {"S": PENDING}, ":fp": {"S": record.fingerprint}, ":ow": {"S": record.owner or ""},
            ":le": {"N": str(record.lease_until_ms)}, ":exp": {"N": str(record.expires_at)},
            ":op": {"S": record.operation}, ":ca": {"N": str(record.created_at_ms)},
            ":now": {"N": str(int(now))}, ":now_ms": {"N": str(int(now * 1000))},
        }
        try:
            response = self._call(
                "update_item", TableName=self.table_name, Key={"pk": {"S": record.record_id}},
                UpdateExpression="SET #st = :pending, #fp = :fp, #ow = :ow, #le = :le, #exp = :exp, #op = :op, "
                                 "#ca = :ca REMOVE #r, #rz, #rs",
                ConditionExpression=_CLAIM_CONDITION,
                ExpressionAttributeNames={"#st": "st", "#fp": "fp", "#ow": "ow", "#le": "le", "#exp": "exp",
                                          "#op": "op", "#ca": "ca", "#r": "r", "#rz": "rz", "#rs": "rs"},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_OLD", ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except _ConditionFailed as failed:
            raise RecordConflict(failed.record) from None
        old = response.get("Attributes")
        return ClaimResult(previous=from_item(old) if old else None)

    def commit(self, record: Record, actions: list[dict[str, Any]], now: float, owner: str | None = None) -> None:
        """Write the completed ``record`` together with ``actions`` in one ``TransactWriteItems``.

        Without ``owner`` (atomic mode) the record must be absent or expired; with
        it (claim-first) the record must still be pending under that owner.
        Raises :class:`RecordConflict`, :class:`BusinessConditionFailedError` or
        :class:`TransactionRaced`.
        """
        put: dict[str, Any] = {"TableName": self.table_name, "Item": to_item(record),
                               "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        if owner is None:
            put["ConditionExpression"] = _ATOMIC_CONDITION
            put["ExpressionAttributeNames"] = {"#exp": "exp"}
            put["ExpressionAttributeValues"] = {":now": {"N": str(int(now))}}
        else:
            put["ConditionExpression"] = _OWNER_CONDITION
            put["ExpressionAttributeNames"] = {"#ow": "ow", "#st": "st"}
            put["ExpressionAttributeValues"] = {":ow": {"S": owner}, ":pending": {"S": PENDING}}
        self.transact([{"Put": put}, *actions], record_first=True)

    def transact(self, items: list[dict[str, Any]], *, record_first: bool = False) -> None:
        """Run ``items`` as one ``TransactWriteItems``.

        With ``record_first`` a failed condition on the first action raises
        :class:`RecordConflict`; a failed condition on any business action raises
        :class:`BusinessConditionFailedError` with its index among those actions.
        """
        if not items:
            return
        check_limits(items)
        try:
            self._call("transact_write_items", TransactItems=items)
        except _Cancelled as cancelled:
            reasons = cancelled.reasons
            business = reasons
            if record_first:
                first = reasons[0] if reasons else {}
                if first.get("Code") == "ConditionalCheckFailed":
                    raise RecordConflict(from_item(first["Item"]) if first.get("Item") else None) from None
                business = reasons[1:]
            for index, reason in enumerate(business):
                if reason.get("Code") == "ConditionalCheckFailed":
                    raise BusinessConditionFailedError(index, reason.get("Item")) from None
            if any(r.get("Code") == "TransactionConflict" for r in reasons):
                raise TransactionRaced("concurrent transaction on the same items") from None
            codes = ", ".join(str(r.get("Code")) for r in reasons)
            if any(r.get("Code") in _UNAVAILABLE for r in reasons):
                raise StoreUnavailableError(f"DynamoDB cancelled the transaction: {codes}") from None
            raise RetrysafeError(f"DynamoDB cancelled the transaction: {codes}") from None

    def checkpoint(self, record_id: str, owner: str, checkpoints: dict[str, Any],
                   actions: list[dict[str, Any]]) -> None:
        """Save a claim's ``checkpoints`` together with ``actions`` in one ``TransactWriteItems``.

        The record must still be pending under ``owner``: raises :class:`RecordConflict`
        when fenced off, like :meth:`commit`.
        """
        update = {"TableName": self.table_name, "Key": {"pk": {"S": record_id}}, "UpdateExpression": "SET #cp = :cp",
                  "ConditionExpression": _OWNER_CONDITION,
                  "ExpressionAttributeNames": {"#cp": "cp", "#ow": "ow", "#st": "st"},
                  "ExpressionAttributeValues": {":cp": encode_checkpoints(checkpoints), ":ow": {"S": owner},
                                                ":pending": {"S": PENDING}},
                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        self.transact([{"Update": update}, *actions], record_first=True)

    def release(self, record_id: str, owner: str, *, keep_checkpoints: bool = False) -> bool:
        """Free a pending claim held by ``owner`` so a retry runs again. False when fenced off.

        The claim is deleted; with ``keep_checkpoints`` its lease is ended instead, so
        the next attempt with the same fingerprint takes over at once and resumes
        after the last checkpoint (whose writes are already committed).
        """
        condition: dict[str, Any] = {
            "ConditionExpression": _OWNER_CONDITION, "ExpressionAttributeNames": {"#ow": "ow", "#st": "st"},
            "ExpressionAttributeValues": {":ow": {"S": owner}, ":pending": {"S": PENDING}},
        }
        key = {"pk": {"S": record_id}}
        try:
            if keep_checkpoints:
                condition["ExpressionAttributeNames"]["#le"] = "le"
                condition["ExpressionAttributeValues"][":ended"] = {"N": "0"}
                self._call("update_item", TableName=self.table_name, Key=key, UpdateExpression="SET #le = :ended",
                           **condition)
            else:
                self._call("delete_item", TableName=self.table_name, Key=key, **condition)
        except _ConditionFailed:
            return False
        return True

    def get(self, record_id: str) -> Record | None:
        """Read a record with a consistent read (used only when waiting for an in-flight duplicate)."""
        response = self._call("get_item", TableName=self.table_name, Key={"pk": {"S": record_id}}, ConsistentRead=True)
        item = response.get("Item")
        return from_item(item) if item else None

    # -- error mapping -------------------------------------------------------
    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = getattr(self.client, operation)(**kwargs)
            return result
        except Exception as error:
            raise self._translate(error) from error

    def _translate(self, error: Exception) -> Exception:
        response = getattr(error, "response", None)
        if not isinstance(response, dict):
            from botocore.exceptions import BotoCoreError

            if isinstance(error, BotoCoreError):  # connection errors, timeouts after retries
                return StoreUnavailableError(f"DynamoDB unreachable after retries ({type(error).__name__})")
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
            return ConfigurationError(
                f"idempotency table {self.table_name!r} (or a table in the transaction) does not exist in this "
                "account/region: check RETRYSAFE_TABLE and the function's region"
            )
        if code in ("AccessDeniedException", "UnrecognizedClientException"):
            return ConfigurationError(f"no access to DynamoDB table {self.table_name!r}: {response['Error'].get('Message')}")
        message = str(response.get("Error", {}).get("Message", ""))
        if code == "ValidationException" and "size" in message.lower():
            return TransactionTooLargeError(f"DynamoDB refused the transaction as too large: {message}")
        if code in _UNAVAILABLE or response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
            return StoreUnavailableError(f"DynamoDB unavailable after retries ({code})")
        return RetrysafeError(f"DynamoDB rejected {code}: {response.get('Error', {}).get('Message')}")


class _ConditionFailed(Exception):
    def __init__(self, record: Record | None) -> None:
        self.record = record


class _Cancelled(Exception):
    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        self.reasons = reasons

