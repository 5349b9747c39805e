"""DynamoDB's wire format: Python values to attribute values and back, and the action limit of a transaction.

The transaction (a handler's writes), the store (the engine's calls), order-aware
writes and the outbox all encode and decode through this module, so a value reads
back the same wherever it was written. Strings and integers, most of what handlers
write, take a direct path; everything else goes through boto3's ``TypeSerializer``
(floats become ``Decimal``, which DynamoDB numbers are when read back).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import TransactionTooLargeError

#: Actions DynamoDB accepts in one ``TransactWriteItems``.
MAX_ACTIONS = 100

_serializer: Any = None
_deserializer: Any = None


def serialize(value: Any) -> dict[str, Any]:
    """Encode a Python value as a DynamoDB attribute value (floats become ``Decimal``).

    Strings and integers, most of what handlers write, take a direct path;
    everything else goes through boto3's ``TypeSerializer``.
    """
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is int:
        return {"N": str(value)}
    global _serializer
    if _serializer is None:
        from boto3.dynamodb.types import TypeSerializer

        _serializer = TypeSerializer()
    result: dict[str, Any] = _serializer.serialize(_decimalize(value))
    return result


def serialize_item(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Encode every value of an item, a key or an expression's values (see :func:`serialize`)."""
    return {name: serialize(value) for name, value in values.items()}


def deserialize_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """Decode an attribute map as DynamoDB returns it (numbers come back as ``Decimal``)."""
    global _deserializer
    if _deserializer is None:
        from boto3.dynamodb.types import TypeDeserializer

        _deserializer = TypeDeserializer()
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


def check_limits(items: list[dict[str, Any]]) -> None:
    """Refuse a transaction over DynamoDB's action limit before anything is sent.

    Item (400 KB) and transaction (4 MB) sizes are left to DynamoDB, which
    refuses the whole transaction; the store maps that to
    :class:`~retrysafe.errors.TransactionTooLargeError`. The stored result's own
    size is checked when it is encoded (:func:`retrysafe._record.encode_result`).
    """
    if len(items) > MAX_ACTIONS:
        raise TransactionTooLargeError(
            f"the transaction has {len(items)} actions (record + writes + events); DynamoDB allows {MAX_ACTIONS}. "
            "Split the operation or move bulk work behind the outbox."
        )


def _decimalize(value: Any) -> Any:
    if isinstance(value, float):
        from decimal import Decimal

        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {k: _decimalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_decimalize(v) for v in value]
    return value
