"""The canonical forms behind fingerprints (scheme 2): RFC 8785 JSON with exact numbers, raw query strings."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from retrysafe import _fingerprint
from retrysafe._fingerprint import canonical_json, canonical_value
from retrysafe.errors import InvalidInputError, TaskPayloadError
from retrysafe.http._request import parse_event, raw_query_parameters
from retrysafe.sqs import message_fingerprint
from retrysafe.stepfunctions import TaskRequest
from retrysafe.testing._events import http_event, rest_event

# --- RFC 8785 -------------------------------------------------------------------------------------------

#: RFC 8785 Appendix B: IEEE double (hex) -> its JCS text.
RFC_8785_NUMBERS = [
    ("0000000000000000", "0"), ("8000000000000000", "0"), ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"), ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"), ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"), ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"), ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"), ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"), ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"), ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"), ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"), ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"), ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize("bits, expected", RFC_8785_NUMBERS)
def test_numbers_are_written_as_rfc_8785_appendix_b(bits: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert canonical_value(value) == expected.encode()  # a double (Step Functions input)
    assert canonical_json(repr(value)) == expected.encode()  # its shortest text (a request body)


def test_rfc_8785_sorts_names_by_utf16_code_units() -> None:
    # RFC 8785 3.2.3: the sorting example (a name beyond the BMP sorts before U+FB33).
    doc = '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh",' \
          '"1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}'
    names = list(json.loads(canonical_json(doc) or b""))
    assert names == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_rfc_8785_example_with_exact_numbers() -> None:
    # RFC 8785 3.2.2 example. Identical output but for 333333333.33333329: a double cannot hold it, so
    # JCS would write 333333333.3333333 (another number); the scheme keeps the exact value.
    text = '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' \
           '"string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}'
    assert canonical_json(text) == ('{"literals":[null,true,false],"numbers":[333333333.33333329,1e+30,4.5,0.002,1e-27],'
                                    '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}').encode()


json_scalars = st.none() | st.booleans() | st.integers(-(2 ** 53) + 1, 2 ** 53 - 1) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text(st.characters(exclude_categories=("Cs",)))
json_documents = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=6), inner, max_size=4), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(doc=json_documents, indent=st.none() | st.integers(0, 3), ascii_only=st.booleans())
def test_agrees_with_the_rfc8785_reference_on_its_domain(doc: Any, indent: int | None, ascii_only: bool) -> None:
    # Any serialisation (spacing, key order, escaping) of a document JCS accepts gives JCS's output.
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only)
    assert canonical_json(text) == rfc8785.dumps(doc)
    assert canonical_value(doc) == rfc8785.dumps(doc)


@settings(max_examples=150, deadline=None)
@given(doc=json_documents)
def test_an_interpreter_without_the_c_encoder_writes_the_same_canonical_form(doc: Any) -> None:
    # The fast path reuses the C encoder; without it (another interpreter) JSONEncoder writes the same text.
    text = json.dumps(doc)
    expected = canonical_json(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_fingerprint, "_c_encoder", None)
        assert canonical_json(text) == expected == rfc8785.dumps(doc)


@pytest.mark.parametrize("a, b", [
    ("9007199254740993", "9007199254740992"),  # a double holds neither exactly...
    ("0.10000000000000001", "0.1"),  # ...nor this one: same double, different numbers
    ("1e400", "1e401"),  # infinity as a double
    ("123456789012345678901234567890", "123456789012345678901234567891"),
    ('{"a":1,"b":2}', '{"a":1,"b":2.0000000000000001}'),
    ('"\\u00e9"', '"e\\u0301"'),  # no Unicode normalisation: different code points
    ("1", '"1"'),
])
def test_different_numbers_and_texts_never_share_a_canonical_form(a: str, b: str) -> None:
    assert canonical_json(a) != canonical_json(b)


@pytest.mark.parametrize("a, b", [
    ("1", "1.0"), ("1", "1e0"), ("100", "1E2"), ("0.5", "5e-1"), ("-0", "0"), ("4.50", "4.5"),
    ('{"b":[1,2],"a":{"y":1,"x":2}}', '{ "a" : {"x":2, "y":1},\n "b":[ 1 , 2 ] }'),
    ('"\\u00e9"', '"\u00e9"'),  # an escape and the character it names
    ("9007199254740993", "9.007199254740993e15"),
])
def test_one_json_document_has_one_canonical_form(a: str, b: str) -> None:
    assert canonical_json(a) == canonical_json(b) is not None


@pytest.mark.parametrize("text, why", [
    ('{"a":1,"a":2}', "repeats an object member name"),
    ('[{"x":{"a":1,"a":1}}]', "repeats an object member name"),
    ('{"x":"\\ud800"}', "lone surrogate"),
    ('{"\\udfff":1}', "lone surrogate"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_documents_without_a_canonical_form_are_refused_by_name(text: str, why: str) -> None:
    with pytest.raises(InvalidInputError, match=why):
        canonical_json(text)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", "-Infinity", "{", "\u0661\u0662", "1e" + "9" * 5000, ""])
def test_texts_that_are_not_json_are_hashed_as_text(text: str) -> None:
    assert canonical_json(text) is None


def test_raw_query_parameters_keep_values_in_order_and_escapes_normalised() -> None:
    assert raw_query_parameters("a=1&b=%2c&a=%41&&c") == {"a": ("1", "A"), "b": ("%2C",), "c": ("",)}


# --- upgrade continuity -----------------------------------------------------------------------------------

def test_scheme_2_keeps_scheme_1_fingerprints_where_scheme_1_was_canonical() -> None:
    # Computed by scheme 1: a request without query parameters whose JSON numbers are integers or
    # positional floats keeps its fingerprint, so a retry across the upgrade still replays.
    body = {"amount": 10, "note": "caf\u00e9 \u2615", "items": [1, 2.5, -0.125, True, None]}
    assert parse_event(rest_event(body)).fingerprint() == "mEE01jSrz95FQauoeN-wF3yGwPxJNau2q-5UUTXtJfA"
    assert parse_event(http_event(body)).fingerprint() == "mEE01jSrz95FQauoeN-wF3yGwPxJNau2q-5UUTXtJfA"
    message = '{"event_id": "e-1", "payload": {"total": 12.5, "qty": 3, "name": "Zo\u00eb"}}'
    assert message_fingerprint(message) == "u6bDolCKIXqrxQEJDlIAS9kB3WpkUEk-NeXdfAdESp8"
    task = TaskRequest(execution="x", state="s", input={"order": {"id": "o-1", "amount": 12.5, "lines": [3, "\u00e9"]}})
    assert task.fingerprint() == "_7-wproUEhjnjmq2_jv8bfqcsq5TOpmLLkKCwnPgwG8"


# --- SQS and Step Functions -------------------------------------------------------------------------------

def test_sqs_content_keeps_exact_numbers_through_its_envelope() -> None:
    def bridge(detail: str) -> str:
        return '{"detail-type": "X", "source": "s", "id": "1", "detail": ' + detail + "}"

    def sns(message: str) -> str:
        return json.dumps({"Type": "Notification", "TopicArn": "arn:t", "MessageId": "1", "Message": message})

    assert message_fingerprint(bridge('{"n": 9007199254740993}')) != message_fingerprint(bridge('{"n": 9007199254740992}'))
    assert message_fingerprint(bridge('{"b": 1, "a": 2}')) == message_fingerprint('{"a":2,"b":1}')
    assert message_fingerprint(sns('{"n": 0.10000000000000001}')) != message_fingerprint(sns('{"n": 0.1}'))
    assert message_fingerprint(sns("not json")) == message_fingerprint("not json")
    with pytest.raises(InvalidInputError):
        message_fingerprint(sns('{"a": 1, "a": 2}'))


@pytest.mark.parametrize("task_input", [{"x": "\ud800"}, {"x": float("nan")}, {"\udc00": 1}])
def test_a_task_input_without_a_canonical_form_is_a_task_payload_error(task_input: Any) -> None:
    with pytest.raises(TaskPayloadError, match="cannot be fingerprinted"):
        TaskRequest(execution="x", state="s", input=task_input).fingerprint()
