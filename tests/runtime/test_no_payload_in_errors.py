"""No exception, log record or response of any adapter's error path carries a selected value or payload.

docs/configuration.md: raw keys are never logged or stored. Every event below carries ``SECRET``
(a card number) where a ``key=``/``fingerprint=`` expression fails on it, where a Powertools JMESPath
function meets malformed text, or where the key itself is bad; the test collects the exception's
text (str, repr, args, the whole ``__cause__``/``__context__`` chain and its formatted traceback,
as Lambda logs an unhandled error), every log record (DEBUG up) and stdout/stderr (Powertools
Logger), and the response, and asserts the secret is in none of them.
"""

from __future__ import annotations

import base64
import json
import logging
import traceback
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import idempotent, idempotent_function, idempotent_sqs
from retrysafe.errors import ConfigurationError, InvalidInputError, InvalidKeyError
from retrysafe.http._decorator import idempotent_http
from retrysafe.stepfunctions import idempotent_task
from retrysafe.streams import idempotent_kinesis
from retrysafe.testing._events import (
    DrillContext,
    alb_event,
    function_url_event,
    http_event,
    kinesis_record,
    rest_event,
    sqs_record,
    task_payload,
)

SECRET = "4111111111111111-SENTINEL"
TRUNCATED = '{"card": "' + SECRET  # powertools_json over this: JSONDecodeError
NOT_BASE64 = SECRET + "!!"  # powertools_base64 over this: binascii.Error


def _texts(error: BaseException) -> list[str]:
    texts = ["".join(traceback.format_exception(error))]
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:  # both links, suppressed or not
        seen.add(id(current))
        texts += [str(current), repr(current), *map(repr, current.args)]
        texts += [repr(getattr(current, name, None)) for name in ("doc", "object", "current_value")]
        current = current.__cause__ or current.__context__
    return texts


def _run(call: Callable[[], Any], caplog: pytest.LogCaptureFixture,
         capsys: pytest.CaptureFixture[str]) -> tuple[Any, BaseException | None, list[str]]:
    caplog.set_level(logging.DEBUG)
    result: Any = None
    error: BaseException | None = None
    try:
        result = call()
    except Exception as raised:  # noqa: BLE001 -- every error path is under test
        error = raised
    texts = [json.dumps(result, default=repr)] + (_texts(error) if error is not None else [])
    texts += [record.getMessage() for record in caplog.records]
    texts += [repr(record.__dict__) for record in caplog.records]
    texts += [record.exc_text or "" for record in caplog.records]
    texts += ["".join(traceback.format_exception(*record.exc_info)) for record in caplog.records if record.exc_info]
    captured = capsys.readouterr()
    return result, error, [*texts, captured.out, captured.err]


def _clean(texts: list[str]) -> None:
    leaks = [text for text in texts if SECRET in text or "4111111111111111" in text]
    assert not leaks, leaks[0][:2000]


def _ok(event: Any, context: Any, txn: Any) -> dict[str, Any]:
    return {"statusCode": 200, "body": "{}"}


# -- HTTP: every source, every refusal the input can cause (400s) -------------------------------------------

HTTP_EVENTS = {"v1": rest_event, "v2": http_event, "alb": alb_event, "function-url": function_url_event}

HTTP_CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (decorator options, event options)
    "fingerprint wrong type": ({"fingerprint": "abs(card)"}, {"raw_body": json.dumps({"card": SECRET})}),
    "fingerprint on truncated JSON": ({"fingerprint": "powertools_json(blob)"},
                                      {"raw_body": json.dumps({"blob": TRUNCATED})}),
    "fingerprint on non-base64": ({"fingerprint": "powertools_base64(blob)"},
                                  {"raw_body": json.dumps({"blob": NOT_BASE64})}),
    "fingerprint on non-gzip": ({"fingerprint": "powertools_base64_gzip(blob)"},
                                {"raw_body": json.dumps({"blob": base64.b64encode(SECRET.encode()).decode()})}),
    "fingerprint callable raises": ({"fingerprint": lambda body: int(body["card"])},
                                    {"raw_body": json.dumps({"card": SECRET})}),
    "duplicate member name": ({}, {"raw_body": '{"' + SECRET + '": 1, "' + SECRET + '": 2}'}),
    "body not JSON with fingerprint=": ({"fingerprint": "card"}, {"raw_body": SECRET}),
    "key with bad characters": ({}, {"key": SECRET + " \u00e9"}),
    "key too long": ({}, {"key": SECRET * 20}),
    "key with a bad escape": ({}, {"key": '"' + SECRET + '\\x"'}),
    "key= of a wrong type": ({"key": "abs(powertools_json(body).card)"}, {"raw_body": json.dumps({"card": SECRET})}),
    "key= on a body not JSON": ({"key": "powertools_json(body).card"}, {"raw_body": SECRET}),
    "key= on truncated JSON": ({"key": "powertools_json(powertools_json(body).blob)"},
                               {"raw_body": json.dumps({"blob": TRUNCATED})}),
    "key= selects a float": ({"key": "powertools_json(body).[card, n]"},
                             {"raw_body": json.dumps({"card": SECRET, "n": 1.5})}),
    "key= object with NaN": ({"key": "powertools_json(body)"}, {"raw_body": '{"card": "' + SECRET + '", "n": NaN}'}),
    "key= callable raises": ({"key": lambda event: int(json.loads(event["body"])["card"])},
                             {"raw_body": json.dumps({"card": SECRET})}),
    "key= found nothing": ({"key": "powertools_json(body).id"}, {"raw_body": json.dumps({"card": SECRET})}),
}


@pytest.mark.parametrize("case", list(HTTP_CASES))
@pytest.mark.parametrize("source", list(HTTP_EVENTS))
def test_http_refusals_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                        capsys: pytest.CaptureFixture[str], source: str, case: str) -> None:
    options, event_options = HTTP_CASES[case]
    handler = idempotent_http(operation="Pay", tenant=None, store=store, **options)(_ok)
    event = HTTP_EVENTS[source](**event_options)
    response, error, texts = _run(lambda: handler(event, DrillContext()), caplog, capsys)
    assert error is None and response["statusCode"] == 400  # a 400 problem, not an escaped 500
    _clean(texts)


@pytest.mark.parametrize("options", [{}, {"key": "powertools_json(body).card"}], ids=["header", "key="])
def test_http_mismatch_and_in_flight_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                                      capsys: pytest.CaptureFixture[str],
                                                      options: dict[str, Any]) -> None:
    handler = idempotent_http(operation="Pay", tenant=None, store=store, **options)(_ok)
    key = "k-" + SECRET[:16]
    handler(http_event({"card": SECRET}, key=key), DrillContext())
    capsys.readouterr()
    response, error, texts = _run(lambda: handler(http_event({"card": SECRET, "n": 2}, key=key), DrillContext()),
                                  caplog, capsys)
    assert error is None and response["statusCode"] == 422
    _clean(texts)


# -- @idempotent, @idempotent_function: the error propagates (Lambda logs it) ---------------------------------

def _eventbridge(detail: dict[str, Any]) -> dict[str, Any]:
    return {"version": "0", "id": "e-1", "detail-type": "OrderPlaced", "source": "shop", "account": "123456789012",
            "time": "2026-01-01T00:00:00Z", "region": "us-east-1", "resources": [], "detail": detail}


def _sns(message: str) -> dict[str, Any]:
    return {"Records": [{"EventSource": "aws:sns", "EventVersion": "1.0", "EventSubscriptionArn": "arn:x",
                         "Sns": {"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:aws:sns:x",
                                 "Message": message, "Timestamp": "2026-01-01T00:00:00.000Z",
                                 "MessageAttributes": {}}}]}


def _s3(key: Any) -> dict[str, Any]:
    return {"Records": [{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
                         "eventTime": "2026-01-01T00:00:00.000Z", "eventName": "ObjectCreated:Put",
                         "s3": {"bucket": {"name": "b"}, "object": {"key": key, "size": 1, "sequencer": "0A"}}}]}


EVENT_CASES: dict[str, tuple[dict[str, Any], Any, type[Exception]]] = {
    "EventBridge key wrong type": ({"key": "abs(detail.card)"}, _eventbridge({"card": SECRET}), InvalidKeyError),
    "EventBridge key an object": ({"key": "detail"}, _eventbridge({"card": SECRET}), InvalidKeyError),
    "EventBridge fingerprint wrong type": ({"fingerprint": "abs(detail.card)"}, _eventbridge({"card": SECRET}),
                                           InvalidInputError),
    "SNS key on truncated JSON": ({"key": "powertools_json(Records[0].Sns.Message).card"}, _sns(TRUNCATED),
                                  InvalidKeyError),
    "SNS key on non-base64": ({"key": "powertools_base64(Records[0].Sns.Message)"}, _sns(NOT_BASE64),
                              InvalidKeyError),
    "S3 natural key of a wrong type": ({}, _s3({"card": SECRET}), InvalidKeyError),
    "direct key missing": ({}, {"card": SECRET}, InvalidKeyError),
    "direct key wrong type": ({"key": "abs(card)"}, {"card": SECRET}, InvalidKeyError),
    "direct key callable raises": ({"key": lambda event: int(event["card"])}, {"card": SECRET}, InvalidKeyError),
    "direct key with a lone surrogate": ({"key": "card"}, {"card": SECRET + "\ud800"}, InvalidKeyError),
    "HTTP request with key=": ({"key": "powertools_json(body).card"}, http_event({"card": SECRET}),
                               ConfigurationError),
    "direct fingerprint NaN": ({"key": "id", "fingerprint": "card"}, {"id": "i", "card": float("nan")},
                               InvalidInputError),
}


@pytest.mark.parametrize("case", list(EVENT_CASES))
def test_idempotent_errors_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                            capsys: pytest.CaptureFixture[str], case: str) -> None:
    options, event, expected = EVENT_CASES[case]
    handler = idempotent(subscriber="payments", store=store, **options)(_ok)
    _, error, texts = _run(lambda: handler(event, DrillContext()), caplog, capsys)
    assert isinstance(error, expected)
    _clean(texts)


@pytest.mark.parametrize("key, value", [("abs(card)", {"card": SECRET}), ("card", {"card": [SECRET, 1.5]}),
                                        ("powertools_json(card)", {"card": TRUNCATED})])
def test_idempotent_function_errors_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                                     capsys: pytest.CaptureFixture[str], key: str,
                                                     value: Any) -> None:
    @idempotent_function(data_keyword_argument="order", subscriber="payments", key=key, store=store)
    def charge(order: Any) -> str:
        return "charged"

    _, error, texts = _run(lambda: charge(order=value), caplog, capsys)
    assert isinstance(error, InvalidKeyError)
    _clean(texts)


def test_idempotent_mismatch_carries_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    handler = idempotent(subscriber="payments", key="id", store=store)(_ok)
    handler({"id": "i-1", "card": SECRET}, DrillContext())
    _, error, texts = _run(lambda: handler({"id": "i-1", "card": SECRET + "2"}, DrillContext()), caplog, capsys)
    assert error is not None
    _clean(texts)


# -- batches (per-record failures) and Step Functions tasks ---------------------------------------------------

@pytest.mark.parametrize("options, body", [({"key": "abs(card)"}, {"card": SECRET}),
                                           ({"key": "powertools_json(card)"}, {"card": TRUNCATED}),
                                           ({"fingerprint": "abs(card)"}, {"card": SECRET}),
                                           ({}, '{"' + SECRET + '": 1, "' + SECRET + '": 2}')])
def test_sqs_failures_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                       capsys: pytest.CaptureFixture[str], options: dict[str, Any],
                                       body: Any) -> None:
    @idempotent_sqs(subscriber="billing", store=store, **options)
    def consume(message: Any, txn: Any) -> None:
        return None

    event = {"Records": [sqs_record(body, message_id="m-1")]}
    response, error, texts = _run(lambda: consume(event, DrillContext()), caplog, capsys)
    assert error is None and response["batchItemFailures"] == [{"itemIdentifier": "m-1"}]
    _clean(texts)


@pytest.mark.parametrize("options", [{"key": "abs(card)"}, {"fingerprint": "abs(card)"},
                                     {"key": "powertools_base64(card)"}])
def test_kinesis_failures_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                           capsys: pytest.CaptureFixture[str], options: dict[str, Any]) -> None:
    @idempotent_kinesis(subscriber="billing", store=store, **options)
    def consume(message: Any, txn: Any) -> None:
        return None

    event = {"Records": [kinesis_record({"card": SECRET}, sequence_number="1")]}
    response, error, texts = _run(lambda: consume(event, DrillContext()), caplog, capsys)
    assert error is None and len(response["batchItemFailures"]) == 1
    _clean(texts)


def test_task_failures_carry_no_payload(store: Any, caplog: pytest.LogCaptureFixture,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    @idempotent_task(store=store)
    def task(task_input: Any, context: Any, txn: Any) -> str:
        return "done"

    task(task_payload({"card": SECRET}, execution="arn:aws:states:us-east-1:123456789012:execution:sm:e1"),
         DrillContext())
    again = task_payload({"card": SECRET, "nan": float("nan")},
                         execution="arn:aws:states:us-east-1:123456789012:execution:sm:e2")
    _, error, texts = _run(lambda: task(again, DrillContext()), caplog, capsys)
    assert error is not None
    _clean(texts)
