"""A DynamoDB client stand-in that answers instantly with canned responses, for measuring library overhead."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


class InstantDynamoDB:
    """Succeeds every write, or fails the first write of a request the way DynamoDB does for an existing key.

    ``existing`` is a real record item captured from moto: with it, ``put_item``/``update_item``
    raise ``ConditionalCheckFailedException`` and ``transact_write_items`` raises
    ``TransactionCanceledException``, both carrying the item (ALL_OLD), as DynamoDB would.
    """

    def __init__(self, existing: dict[str, Any] | None = None) -> None:
        self.existing = existing
        self.calls = 0

    def _conditional(self, operation: str) -> dict[str, Any]:
        self.calls += 1
        if self.existing is None:
            return {}
        raise ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "exists"},
                           "Item": self.existing}, operation)

    def put_item(self, **_: Any) -> dict[str, Any]:
        return self._conditional("PutItem")

    def update_item(self, **_: Any) -> dict[str, Any]:
        return self._conditional("UpdateItem")

    def transact_write_items(self, TransactItems: list[Any], **_: Any) -> dict[str, Any]:  # noqa: N803
        self.calls += 1
        if self.existing is None:
            return {}
        reasons = [{"Code": "ConditionalCheckFailed", "Item": self.existing}] + [{"Code": "None"}] * (len(TransactItems) - 1)
        raise ClientError({"Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                           "CancellationReasons": reasons}, "TransactWriteItems")

    def delete_item(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {}

    def get_item(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        return {"Item": self.existing} if self.existing else {}
