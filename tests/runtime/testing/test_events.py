"""retrysafe.testing._events: the builders produce events Powertools' data classes read as Lambda's would."""

from __future__ import annotations

import pytest
from aws_lambda_powertools.utilities.data_classes import (
    APIGatewayProxyEvent,
    APIGatewayProxyEventV2,
    SQSEvent,
)
from retrysafe import names
from retrysafe.testing._events import (
    DrillContext,
    api_event,
    http_event,
    queue_arn,
    rest_event,
    sqs_event,
    sqs_record,
    task_payload,
)


def test_http_event_is_an_http_api_v2_event_with_key_json_body_query_and_tenant() -> None:
    event = APIGatewayProxyEventV2(http_event({"amount": 1}, key="k-1", tenant="acme", route="/orders/7",
                                              query={"dry_run": "true"}))
    assert event.request_context.http.method == "POST" and event.raw_path == "/orders/7"
    assert event.headers == {"content-type": "application/json", names.KEY_MESSAGE_ATTRIBUTE: "k-1"}
    assert event.json_body == {"amount": 1} and event.raw_query_string == "dry_run=true"
    assert event.query_string_parameters == {"dry_run": "true"}
    assert event.request_context.authorizer.jwt_claim == {"sub": "acme"}


def test_rest_event_is_a_rest_v1_event_with_resource_path_and_multi_value_query() -> None:
    event = APIGatewayProxyEvent(rest_event({"amount": 1}, resource="/orders/{id}", path="/orders/7",
                                            query={"a": "1"}, headers={"X-Trace": "t"}))
    assert event.resource == "/orders/{id}" and event.path == "/orders/7" and event.http_method == "POST"
    assert event.headers == {"Content-Type": "application/json", "X-Trace": "t", names.IDEMPOTENCY_KEY_HEADER: "key-1"}
    assert event.multi_value_query_string_parameters == {"a": ["1"]}
    assert event["requestContext"]["authorizer"] == {"claims": {"sub": "tenant-a"}}


def test_without_key_tenant_or_content_type() -> None:
    v2 = http_event(raw_body="x", key=None, tenant=None, content_type=None)
    assert v2["headers"] == {} and v2["body"] == "x" and "authorizer" not in v2["requestContext"]
    v1 = rest_event(key=None, tenant=None)
    assert v1["headers"] == {"Content-Type": "application/json"} and v1["body"] is None
    assert v1["requestContext"]["authorizer"] is None


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_api_event_sends_exactly_the_given_headers_and_text(version: str) -> None:
    event = api_event('{"a":1}', headers={"X-Signature": "s"}, version=version, route="/hooks")
    assert {k.lower(): v for k, v in event["headers"].items()} == {"x-signature": "s"}
    assert event["body"] == '{"a":1}'


def test_sqs_record_and_sqs_event_are_what_an_event_source_mapping_delivers() -> None:
    record = sqs_record({"n": 1}, message_id="m-1", attributes={names.KEY_MESSAGE_ATTRIBUTE: "e-1"}, group="g",
                        queue="work.fifo", receive_count=2)
    parsed = next(iter(SQSEvent({"Records": [record]}).records))
    assert parsed.message_id == "m-1" and parsed.json_body == {"n": 1}
    assert parsed.message_attributes[names.KEY_MESSAGE_ATTRIBUTE].string_value == "e-1"
    assert parsed.attributes.message_group_id == "g" and parsed.attributes.approximate_receive_count == "2"
    assert parsed.event_source_arn == queue_arn("work.fifo")
    received = {"MessageId": "m-2", "ReceiptHandle": "r", "Body": "{}", "MD5OfBody": "-",
                "Attributes": {"ApproximateReceiveCount": "3"},
                "MessageAttributes": {names.EVENT_TYPE_MESSAGE_ATTRIBUTE: {"StringValue": "OrderPlaced", "DataType": "String"}}}
    delivered = next(iter(SQSEvent(sqs_event([received], "inbox")).records))
    assert delivered.message_id == "m-2" and delivered.attributes.approximate_receive_count == "3"
    assert delivered.message_attributes[names.EVENT_TYPE_MESSAGE_ATTRIBUTE].string_value == "OrderPlaced"


def test_task_payload_and_context() -> None:
    assert task_payload({"a": 1}, execution="exec-1", state="Charge", retry=2) == {
        "execution": "exec-1", "state": "Charge", "retryCount": 2, "input": {"a": 1},
        "stateMachine": "arn:aws:states:eu-west-1:123456789012:stateMachine:Drill"}
    assert DrillContext(remaining_ms=5_000).get_remaining_time_in_millis() == 5_000
