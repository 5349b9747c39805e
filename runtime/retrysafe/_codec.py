"""DynamoDB's wire format: Python values to attribute values and back, and the action limit of a transaction.

The transaction (a handler's writes), the store (the engine's calls), order-aware
writes and the outbox all encode and decode through this module, so a value reads
back the same wherever it was written. Strings and integers, most of what handlers
write, take a direct path; everything else goes through boto3's ``TypeSerializer``
(floats become ``Decimal``, which DynamoDB numbers are when read back).
"""

from __future__ import annotations

import binascii
import json
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


#: The refusals whose replies carry items (``ALL_OLD``) that the store reads, as they appear in a reply body.
_ITEM_REFUSALS = (b"#TransactionCanceledException", b"#ConditionalCheckFailedException")
#: Their members that hold items: a cancelled transaction's reasons, a failed condition's old item.
_ITEM_MEMBERS = ("CancellationReasons", "Item")


def parse_item_refusal(response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any) -> None:
    """botocore ``before-parse`` handler for the store's own client: a refusal's items, decoded once.

    botocore reads an error reply twice (its generic error fields, then the error's modeled shape,
    each pass decoding the JSON again) and walks every attribute value of every cancellation reason
    through the service model. For a cancelled transaction or a failed condition this handler decodes
    the body once, hands the ``CancellationReasons`` or ``Item`` to botocore's result as botocore would
    have parsed them (blobs as bytes, everything else as sent), and leaves botocore a body without
    them to read for the code and the message. Other replies are left to botocore untouched.
    """
    if response_dict["status_code"] < 400:
        return
    body = response_dict["body"]
    if not isinstance(body, bytes) or not any(refusal in body for refusal in _ITEM_REFUSALS):
        return
    try:
        document = json.loads(body)
    except ValueError:
        return  # not JSON: botocore reports it as it does any unreadable reply
    if not isinstance(document, dict):
        return
    for member in _ITEM_MEMBERS:
        value = document.pop(member, None)
        if member == "Item" and isinstance(value, dict):
            customized_response_dict[member] = _parsed_item(value)
        elif member == "CancellationReasons" and isinstance(value, list):
            customized_response_dict[member] = [
                {**reason, "Item": _parsed_item(reason["Item"])}
                if isinstance(reason, dict) and isinstance(reason.get("Item"), dict) else reason
                for reason in value]  # one per action, in order: positions name the actions
    response_dict["body"] = json.dumps(document).encode()


def _parsed_item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _parsed_value(value) for name, value in item.items()}


def _parsed_value(value: dict[str, Any]) -> dict[str, Any]:
    """An attribute value as botocore parses it: ``B`` and ``BS`` base64-decoded, ``M`` and ``L`` walked."""
    if "B" in value:
        return {"B": binascii.a2b_base64(value["B"])}
    if "M" in value:
        return {"M": _parsed_item(value["M"])}
    if "L" in value:
        return {"L": [_parsed_value(each) for each in value["L"]]}
    if "BS" in value:
        return {"BS": [binascii.a2b_base64(each) for each in value["BS"]]}
    return value


def _decimalize(value: Any) -> Any:
    if isinstance(value, float):
        from decimal import Decimal

        return Decimal(repr(value))
    if isinstance(value, Mapping):
        return {k: _decimalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_decimalize(v) for v in value]
    return value
