"""Selectors for keys and fingerprints: JMESPath expressions compiled once, or callables."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, S3Event, SNSEvent
from retrysafe._select import FingerprintSelector, KeySelector, fingerprint_document
from retrysafe.errors import ConfigurationError, InvalidInputError, InvalidKeyError, KeyNotFoundError

#: AWS's example EventBridge event (Lambda developer guide, "Using Lambda with EventBridge").
EVENTBRIDGE = {
    "version": "0", "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa", "detail-type": "OrderPlaced",
    "source": "com.example.orders", "account": "123456789012", "time": "2026-12-01T18:43:48Z",
    "region": "us-east-1", "resources": [], "detail": {"order_id": "o-42", "total": 12.5, "lines": 3},
}


def test_an_expression_selects_a_string_key_and_powertools_data_classes_agree() -> None:
    select = KeySelector("detail.order_id")
    assert select(EVENTBRIDGE) == "o-42" == EventBridgeEvent(EVENTBRIDGE).detail["order_id"]


def test_an_integer_key_is_written_in_decimal_and_names_the_same_intent_as_its_text() -> None:
    select = KeySelector("detail.lines")
    assert select(EVENTBRIDGE) == "3" == KeySelector("n")({"n": "3"}) == KeySelector("n")({"n": Decimal("3.00")})


@pytest.mark.parametrize("value", [12.5, 3.0, True, Decimal("1.5"), Decimal("NaN"), {"a": 1}])
def test_a_key_that_is_not_a_string_or_an_integer_is_refused(value: Any) -> None:
    with pytest.raises(InvalidKeyError) as caught:
        KeySelector("k")({"k": value})
    assert not caught.value.missing
    assert not isinstance(caught.value, KeyNotFoundError)


def test_an_empty_or_non_unicode_key_is_refused() -> None:
    for value in ("", "\ud800"):
        with pytest.raises(InvalidKeyError) as caught:
            KeySelector("k")({"k": value})
        assert type(caught.value) is InvalidKeyError


def test_a_key_that_is_absent_raises_the_named_error_with_the_option_in_its_message() -> None:
    with pytest.raises(KeyNotFoundError, match=r"key='detail.orderId' found no key") as caught:
        KeySelector("detail.orderId")(EVENTBRIDGE)
    assert caught.value.missing


def test_a_composite_key_is_the_canonical_json_of_its_parts_so_parts_cannot_run_together() -> None:
    """S3's natural key: bucket + object key + sequencer (AWS's example S3 notification)."""
    event = {"Records": [{"eventSource": "aws:s3", "eventName": "ObjectCreated:Put", "s3": {
        "bucket": {"name": "amzn-s3-demo-bucket", "arn": "arn:aws:s3:::amzn-s3-demo-bucket"},
        "object": {"key": "test/key", "size": 1024, "eTag": "0123456789abcdef0123456789abcdef",
                   "sequencer": "0A1B2C3D4E5F678901"}}}]}
    select = KeySelector("[Records[0].s3.bucket.name, Records[0].s3.object.key, Records[0].s3.object.sequencer]")
    record = S3Event(event).record
    assert select(event) == json.dumps([record.s3.bucket.name, record.s3.get_object.key,
                                        record.s3.get_object.sequencer], separators=(",", ":"))
    assert KeySelector("[a, b]")({"a": "x,y", "b": "z"}) != KeySelector("[a, b]")({"a": "x", "b": "y,z"})
    with pytest.raises(KeyNotFoundError):
        KeySelector("[a, b]")({"a": "x"})
    with pytest.raises(KeyNotFoundError):
        KeySelector("a")({"a": []})


def test_a_callable_gets_the_value_itself_and_an_expression_its_json_document() -> None:
    class Order:
        id = "o-7"

    assert KeySelector(lambda order: order.id)(Order()) == "o-7"
    assert KeySelector("id")(Order(), lambda order: {"id": order.id}) == "o-7"


def test_powertools_jmespath_functions_look_inside_json_text() -> None:
    """AWS's example SNS event with a JSON message (``Records[0].Sns.Message`` is text)."""
    event = {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn":
                          "arn:aws:sns:us-east-1:123456789012:sns-lambda:21be56ed-a058-49f5-8c98-aedd2564c486",
                          "Sns": {"Type": "Notification", "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e",
                                  "TopicArn": "arn:aws:sns:us-east-1:123456789012:sns-lambda",
                                  "Message": json.dumps({"order_id": "o-9"}), "Timestamp": "2019-01-02T12:45:07.000Z",
                                  "MessageAttributes": {}}}]}
    assert KeySelector("powertools_json(Records[0].Sns.Message).order_id")(event) == "o-9"
    assert SNSEvent(event).sns_message == json.dumps({"order_id": "o-9"})
    packed = {"data": base64.b64encode(b'{"id": 5}').decode()}
    assert KeySelector("powertools_json(powertools_base64(data)).id")(packed) == "5"
    with pytest.raises(InvalidKeyError, match="cannot be evaluated"):
        KeySelector("powertools_json(k)")({"k": 1})


def test_a_bad_expression_or_selector_fails_at_decoration_time() -> None:
    with pytest.raises(ConfigurationError, match=r"key='detail\.\[' is not a JMESPath expression"):
        KeySelector("detail.[")
    with pytest.raises(ConfigurationError, match="fingerprint must be a JMESPath expression or a callable"):
        FingerprintSelector(42)  # type: ignore[arg-type]


def test_a_fingerprint_hashes_the_canonical_form_of_the_selected_part() -> None:
    select = FingerprintSelector("detail")
    reordered = dict(EVENTBRIDGE, id="another-id", time="2026-12-02T00:00:00Z",
                     detail={"lines": 3, "total": 12.5, "order_id": "o-42"})
    assert select(EVENTBRIDGE) == select(reordered) == fingerprint_document(EVENTBRIDGE["detail"])
    assert select(EVENTBRIDGE) != select(dict(EVENTBRIDGE, detail={"order_id": "o-42", "total": 13}))
    assert FingerprintSelector(lambda event: event["detail"])(EVENTBRIDGE) == select(EVENTBRIDGE)


def test_a_fingerprint_selector_that_selects_nothing_or_no_json_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="selected nothing"):
        FingerprintSelector("detail.missing")(EVENTBRIDGE)
    with pytest.raises(InvalidInputError):
        FingerprintSelector("k")({"k": float("nan")})


def test_the_selected_part_is_made_json_by_to_json_before_it_is_hashed() -> None:
    select = FingerprintSelector(lambda order: order, to_json=str)
    assert select(Decimal("12.50")) == fingerprint_document("12.50") != select(Decimal("12.5"))
