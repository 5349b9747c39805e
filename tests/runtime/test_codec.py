"""The codec: Python values to DynamoDB attribute values and back, and the transaction's action limit."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retrysafe import _codec as codec
from retrysafe.errors import TransactionTooLargeError

from tests.helpers import TABLE, create_idempotency_table


def test_strings_and_integers_take_the_direct_path() -> None:
    assert codec.serialize("café") == {"S": "café"}
    assert codec.serialize(12) == {"N": "12"}
    assert codec.serialize(-(10**30)) == {"N": str(-(10**30))}


def test_a_bool_is_a_bool_not_an_integer() -> None:
    assert codec.serialize(True) == {"BOOL": True}


def test_floats_become_decimals_at_any_depth() -> None:
    assert codec.serialize(0.1) == {"N": "0.1"}
    assert codec.serialize({"a": [1.5, {"b": 2.25}], "t": (0.5,)}) == {"M": {
        "a": {"L": [{"N": "1.5"}, {"M": {"b": {"N": "2.25"}}}]}, "t": {"L": [{"N": "0.5"}]}}}


def test_other_types_go_through_boto3() -> None:
    assert codec.serialize(None) == {"NULL": True}
    assert codec.serialize(b"\x00\xff") == {"B": b"\x00\xff"}
    assert codec.serialize({"x", "y"}) in ({"SS": ["x", "y"]}, {"SS": ["y", "x"]})
    assert codec.serialize(Decimal("1.10")) == {"N": "1.10"}


def test_serialize_item_encodes_every_value() -> None:
    assert codec.serialize_item({"pk": "order#1", "n": 3, "f": 1.5}) == {
        "pk": {"S": "order#1"}, "n": {"N": "3"}, "f": {"N": "1.5"}}


def test_an_unsupported_value_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="object"):
        codec.serialize(object())


_scalars = st.one_of(st.text(), st.integers(-(10**37), 10**37), st.booleans(), st.none(), st.binary(min_size=1),
                     st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda f: f == 0 or abs(f) > 1e-30))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=5), inner, max_size=4)),
                       max_leaves=12)


def _as_read_back(value: Any) -> Any:
    """What DynamoDB gives back for ``value``: numbers as ``Decimal``, binary as ``Binary``, tuples as lists."""
    from boto3.dynamodb.types import Binary

    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if isinstance(value, bytes):
        return Binary(value)
    if isinstance(value, dict):
        return {k: _as_read_back(v) for k, v in value.items()}
    return [_as_read_back(v) for v in value]


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), _values, max_size=6))
def test_an_item_reads_back_as_written(item: dict[str, Any]) -> None:
    assert codec.deserialize_item(codec.serialize_item(item)) == _as_read_back(item)


@pytest.mark.usefixtures("aws")
def test_an_item_written_and_read_through_dynamodb_comes_back_the_same() -> None:
    client = boto3.client("dynamodb")
    create_idempotency_table(client)
    item = {"pk": "codec#1", "name": "Zoë", "qty": 3, "price": 19.99, "tags": ["a", "b"],
            "nested": {"ok": True, "none": None, "ratio": 0.25}, "raw": b"\x01\x02"}
    client.put_item(TableName=TABLE, Item=codec.serialize_item(item))
    stored = client.get_item(TableName=TABLE, Key=codec.serialize_item({"pk": "codec#1"}))["Item"]
    assert codec.deserialize_item(stored) == _as_read_back(item)


def test_a_transaction_at_the_action_limit_passes() -> None:
    codec.check_limits([{}] * codec.MAX_ACTIONS)


def test_a_transaction_over_the_action_limit_is_refused_before_sending() -> None:
    with pytest.raises(TransactionTooLargeError, match=r"101 actions .* DynamoDB allows 100"):
        codec.check_limits([{}] * (codec.MAX_ACTIONS + 1))


def test_the_transaction_and_the_store_use_the_codec() -> None:
    """One codec, no copies: the modules that encode do it through ``retrysafe._codec``."""
    from retrysafe import _ordering as ordering
    from retrysafe import _store as store
    from retrysafe import _transaction as transaction

    assert store.check_limits is codec.check_limits
    assert transaction.serialize_item is codec.serialize_item
    assert ordering.serialize is codec.serialize


@pytest.mark.parametrize("status, body", [
    (200, b'{"Item": {"pk": {"S": "x"}}, "__type": "x#ConditionalCheckFailedException"}'),  # not a refusal
    (400, b'{"__type": "com.amazonaws.dynamodb.v20120810#ValidationException", "message": "bad"}'),
    (400, b"<html>#TransactionCanceledException</html>"),  # not JSON: botocore reports it as it does
    (400, b'["#ConditionalCheckFailedException"]'),  # JSON, not an object
])
def test_other_replies_are_left_to_botocore(status: int, body: bytes) -> None:
    response = {"status_code": status, "body": body, "headers": {}}
    customized: dict[str, Any] = {}
    codec.parse_item_refusal(response_dict=response, customized_response_dict=customized)
    assert response["body"] is body and customized == {}


def test_a_refusal_with_reasons_of_odd_shapes_keeps_what_botocore_would_read() -> None:
    body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException", "Message": "m",
                       "CancellationReasons": [{"Code": "ConditionalCheckFailed", "Item": {"b": {"B": "AAE="}}},
                                               {"Code": "None"}, "garbage"]}).encode()
    response = {"status_code": 400, "body": body, "headers": {}}
    customized: dict[str, Any] = {}
    codec.parse_item_refusal(response_dict=response, customized_response_dict=customized)
    assert customized == {"CancellationReasons": [{"Code": "ConditionalCheckFailed", "Item": {"b": {"B": b"\x00\x01"}}},
                                                  {"Code": "None"}, "garbage"]}
    assert json.loads(response["body"]) == {"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                                            "Message": "m"}
