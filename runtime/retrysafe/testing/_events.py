"""Lambda events and contexts for tests and drills.

API Gateway proxy events (REST API v1 and HTTP API v2), SQS records and events (built by hand or from
what ``ReceiveMessage`` returned), Step Functions task payloads, and a Lambda context whose remaining
time is fixed, so that leases are predictable. The failure drills use them; so can your own tests::

    from retrysafe.testing import DrillContext, http_event

    response = handler(http_event({"amount": 42}, key="order-1"), DrillContext())
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from .. import names
from ..names import IDEMPOTENCY_KEY_HEADER

REGION = "eu-west-1"
ACCOUNT = "123456789012"
#: The ``Content-Type`` the event builders send with a JSON body (``content_type=None``: no header).
JSON = "application/json"


class DrillContext:
    """The parts of the Lambda context retrysafe uses; the remaining time is fixed (leases are predictable)."""

    def __init__(self, remaining_ms: int = 30_000, request_id: str | None = None) -> None:
        self.remaining_ms = remaining_ms
        self.aws_request_id = request_id or str(uuid.uuid4())
        self.function_name = "drill-fn"
        self.memory_limit_in_mb = 256
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:drill-fn"

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds until the simulated timeout."""
        return self.remaining_ms


def _request_headers(body: Any, raw_body: str | None, key: str | None, header: str, content_type: str | None,
                     headers: Mapping[str, str] | None) -> tuple[dict[str, str], str | None]:
    """The request's headers (``Content-Type`` first, the caller's, then the key) and its body text."""
    all_headers = {"Content-Type": content_type} if content_type is not None else {}
    all_headers.update(headers or {})
    if key is not None:
        all_headers[header] = key
    text = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    return all_headers, text


def rest_event(body: Any = None, *, key: str | None = "key-1", tenant: str | None = "tenant-a",
               method: str = "POST", resource: str = "/orders", path: str | None = None,
               query: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None,
               raw_body: str | None = None, base64: bool = False, content_type: str | None = JSON,
               header: str = IDEMPOTENCY_KEY_HEADER) -> dict[str, Any]:
    """A REST API (v1) proxy event, the tenant in a Cognito user pool authorizer's ``sub`` claim.

    ``body`` is sent as JSON (``raw_body``: the body text as it is); ``key`` goes in the ``header``
    header (``None``: no key); ``resource`` is the route template and ``path`` the concrete path
    (default: the resource); ``tenant=None`` leaves the authorizer out.
    """
    all_headers, text = _request_headers(body, raw_body, key, header, content_type, headers)
    return {
        "resource": resource, "path": path or resource, "httpMethod": method, "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "queryStringParameters": dict(query) if query else None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": None,
        "requestContext": {"resourcePath": resource, "httpMethod": method, "stage": "prod",
                           "requestId": str(uuid.uuid4()),
                           "authorizer": {"claims": {"sub": tenant}} if tenant else None,
                           "identity": {"sourceIp": "127.0.0.1", "userArn": None}},
        "body": text, "isBase64Encoded": base64,
    }


def http_event(body: Any = None, *, key: str | None = "key-1", tenant: str | None = "tenant-a",
               method: str = "POST", route: str = "/orders", query: Mapping[str, str] | None = None,
               headers: Mapping[str, str] | None = None, raw_body: str | None = None, base64: bool = False,
               content_type: str | None = JSON, header: str = IDEMPOTENCY_KEY_HEADER) -> dict[str, Any]:
    """An HTTP API (v2) event, the tenant in a JWT authorizer's ``sub`` claim; header names in lower case.

    The arguments mean what they mean for :func:`rest_event`; ``query`` becomes ``rawQueryString``
    (as given, unencoded) and ``queryStringParameters``.
    """
    all_headers, text = _request_headers(body, raw_body, key, header, content_type, headers)
    event: dict[str, Any] = {
        "version": "2.0", "routeKey": f"{method} {route}", "rawPath": route,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": {k.lower(): v for k, v in all_headers.items()},
        "requestContext": {"http": {"method": method, "path": route, "sourceIp": "127.0.0.1"},
                           "routeKey": f"{method} {route}", "stage": "$default",
                           "requestId": str(uuid.uuid4())},
        "body": text, "isBase64Encoded": base64,
    }
    if query:
        event["queryStringParameters"] = dict(query)
    if tenant:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": tenant}, "scopes": []}}
    return event


def api_event(body: str | None, *, headers: dict[str, str] | None = None, tenant: str | None = "tenant-a",
              method: str = "POST", route: str = "/orders", version: str = "2.0",
              base64: bool = False) -> dict[str, Any]:
    """An API Gateway proxy event with exactly ``headers`` and the body text ``body``: HTTP API v2
    (:func:`http_event`) or REST v1 (:func:`rest_event`)."""
    if version == "2.0":
        return http_event(raw_body=body, key=None, tenant=tenant, method=method, route=route, headers=headers,
                          base64=base64, content_type=None)
    return rest_event(raw_body=body, key=None, tenant=tenant, method=method, resource=route, headers=headers,
                      base64=base64, content_type=None)


def alb_event(body: Any = None, *, key: str | None = "key-1", method: str = "POST", path: str = "/orders",
              query: Mapping[str, str | list[str]] | None = None, headers: Mapping[str, str | list[str]] | None = None,
              multi_value: bool = False, raw_body: str | None = None, content_type: str | None = JSON,
              header: str = IDEMPOTENCY_KEY_HEADER) -> dict[str, Any]:
    """An Application Load Balancer event, as a target group with multi-value headers off or on sends it.

    Header names in lower case; query names and values as the client sent them (still percent-encoded).
    A list value is a repeated header or parameter (``multi_value=True`` keeps every value; off, the
    load balancer passes the last one).
    """
    all_headers, text = _request_headers(body, raw_body, key, header, content_type, None)
    values: dict[str, list[str]] = {k.lower(): [v] for k, v in all_headers.items()}
    values["host"] = ["orders-alb-1234567890.eu-west-1.elb.amazonaws.com"]
    values["x-amzn-trace-id"] = [f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]}"]
    values["x-forwarded-for"] = ["203.0.113.7"]
    for name, value in (headers or {}).items():
        values[name.lower()] = list(value) if isinstance(value, list) else [value]
    params = {k: list(v) if isinstance(v, list) else [v] for k, v in (query or {}).items()}
    event: dict[str, Any] = {
        "requestContext": {"elb": {"targetGroupArn": f"arn:aws:elasticloadbalancing:{REGION}:{ACCOUNT}:"
                                                     "targetgroup/orders/49e9d65c45c6791a"}},
        "httpMethod": method, "path": path, "body": text or "", "isBase64Encoded": False,
    }
    if multi_value:
        event["multiValueHeaders"] = values
        event["multiValueQueryStringParameters"] = params
    else:
        event["headers"] = {k: v[-1] for k, v in values.items()}
        event["queryStringParameters"] = {k: v[-1] for k, v in params.items()}
    return event


def function_url_event(body: Any = None, *, key: str | None = "key-1", method: str = "POST", path: str = "/orders",
                       iam_caller: str | None = None, headers: Mapping[str, str] | None = None,
                       raw_body: str | None = None, content_type: str | None = JSON,
                       header: str = IDEMPOTENCY_KEY_HEADER) -> dict[str, Any]:
    """A Lambda function URL event (payload v2.0); ``iam_caller``: the signing IAM role ARN of an
    ``AuthType AWS_IAM`` URL (``None``: ``AuthType NONE``, no caller)."""
    event = http_event(body, key=key, tenant=None, method=method, route=path, headers=headers, raw_body=raw_body,
                       content_type=content_type, header=header)
    domain = "abcdefghij1234567890abcdefghij12.lambda-url.eu-west-1.on.aws"
    event["routeKey"] = "$default"
    event["headers"]["host"] = domain
    context = event["requestContext"]
    context.update(routeKey="$default", accountId="anonymous" if iam_caller is None else ACCOUNT,
                   apiId=domain.split(".")[0], domainName=domain, domainPrefix=domain.split(".")[0])
    if iam_caller is not None:
        context["authorizer"] = {"iam": {"accessKey": "ASIAEXAMPLE", "accountId": ACCOUNT,
                                         "callerId": "AROAEXAMPLE:session", "cognitoIdentity": None,
                                         "principalOrgId": None, "userArn": iam_caller, "userId": "AROAEXAMPLE"}}
    return event


def queue_arn(name: str) -> str:
    """The ARN of the queue ``name`` in the test account and region."""
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"


def sqs_record(body: Any, *, message_id: str | None = None, attributes: dict[str, str] | None = None,
               queue: str = "inbox", receive_count: int = 1, group: str | None = None) -> dict[str, Any]:
    """One SQS record of a Lambda event (string message attributes only); ``group``: a FIFO message group."""
    now = str(int(time.time() * 1000))
    system = {"ApproximateReceiveCount": str(receive_count), "SentTimestamp": now, "SenderId": "AIDAEXAMPLE",
              "ApproximateFirstReceiveTimestamp": now}
    if group is not None:
        system.update(MessageGroupId=group, SequenceNumber="1", MessageDeduplicationId=uuid.uuid4().hex)
    return {
        "messageId": message_id or str(uuid.uuid4()), "receiptHandle": uuid.uuid4().hex,
        "body": body if isinstance(body, str) else json.dumps(body), "attributes": system,
        "messageAttributes": {k: {"stringValue": v, "stringListValues": [], "binaryListValues": [],
                                  "dataType": "String"} for k, v in (attributes or {}).items()},
        "md5OfBody": "-", "eventSource": "aws:sqs", "eventSourceARN": queue_arn(queue), "awsRegion": REGION,
    }


def sqs_event(messages: Iterable[Mapping[str, Any]], queue: str) -> dict[str, Any]:
    """The Lambda event for messages ``ReceiveMessage`` returned (with ``AttributeNames``/``MessageAttributeNames``
    ``All`` to keep their receive count and attributes), as an SQS event source mapping delivers them."""
    return {"Records": [{
        "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
        "attributes": m.get("Attributes", {}),
        "messageAttributes": {k: {"stringValue": v.get("StringValue"), "stringListValues": [],
                                  "binaryListValues": [], "dataType": v["DataType"]}
                              for k, v in m.get("MessageAttributes", {}).items()},
        "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs", "eventSourceARN": queue_arn(queue),
        "awsRegion": REGION,
    } for m in messages]}


def kinesis_arn(stream: str) -> str:
    """The ARN of the Kinesis stream ``stream`` in the test account and region."""
    return f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/{stream}"


def kinesis_record(data: Any, *, sequence_number: str, partition_key: str = "pk-1",
                   shard: str = "shardId-000000000000", stream: str = "orders",
                   arrival: float | None = None) -> dict[str, Any]:
    """One record of a Lambda Kinesis event, as AWS's documentation shows it.

    ``data``: bytes as they are, text as UTF-8, anything else as JSON; delivered base64-encoded.
    """
    raw = data if isinstance(data, bytes) else (data if isinstance(data, str) else json.dumps(data)).encode()
    return {
        "kinesis": {"kinesisSchemaVersion": "1.0", "partitionKey": partition_key, "sequenceNumber": sequence_number,
                    "data": base64.b64encode(raw).decode("ascii"),
                    "approximateArrivalTimestamp": arrival if arrival is not None else time.time()},
        "eventSource": "aws:kinesis", "eventVersion": "1.0", "eventID": f"{shard}:{sequence_number}",
        "eventName": "aws:kinesis:record", "invokeIdentityArn": f"arn:aws:iam::{ACCOUNT}:role/drill-fn-role",
        "awsRegion": REGION, "eventSourceARN": kinesis_arn(stream),
    }


def kinesis_event(records: Iterable[Mapping[str, Any]], *, shard: str, stream: str) -> dict[str, Any]:
    """The Lambda event for records Kinesis ``GetRecords`` returned from ``shard`` of ``stream``."""
    return {"Records": [kinesis_record(r["Data"], sequence_number=r["SequenceNumber"],
                                       partition_key=r["PartitionKey"], shard=shard, stream=stream,
                                       arrival=r["ApproximateArrivalTimestamp"].timestamp())
                        for r in records]}


def dynamodb_stream_arn(table: str) -> str:
    """A stream ARN of the table ``table`` in the test account and region."""
    return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}/stream/2026-12-01T00:00:00.000"


def dynamodb_stream_record(event_name: str, keys: Mapping[str, Any], *, sequence_number: str,
                           new_image: Mapping[str, Any] | None = None, old_image: Mapping[str, Any] | None = None,
                           table: str = "orders", ttl: bool = False) -> dict[str, Any]:
    """One record of a Lambda DynamoDB Streams event (view type ``NEW_AND_OLD_IMAGES``), as AWS documents it.

    ``keys`` and the images are in DynamoDB JSON (``{"pk": {"S": "order#1"}}``). ``ttl``: a ``REMOVE``
    written by DynamoDB's TTL, whose ``userIdentity`` names the DynamoDB service.
    """
    change: dict[str, Any] = {"ApproximateCreationDateTime": int(time.time()), "Keys": dict(keys),
                              "SequenceNumber": sequence_number, "SizeBytes": 64,
                              "StreamViewType": "NEW_AND_OLD_IMAGES"}
    if new_image is not None:
        change["NewImage"] = dict(new_image)
    if old_image is not None:
        change["OldImage"] = dict(old_image)
    record: dict[str, Any] = {"eventID": uuid.uuid4().hex, "eventName": event_name, "eventVersion": "1.1",
                              "eventSource": "aws:dynamodb", "awsRegion": REGION, "dynamodb": change,
                              "eventSourceARN": dynamodb_stream_arn(table)}
    if ttl:
        record["userIdentity"] = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    return record


def task_payload(task_input: Any, *, execution: str, state: str = "Task",
                 state_machine: str = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:Drill",
                 retry: int = 0) -> dict[str, Any]:
    """The ``LambdaInvoke`` payload a state machine builds from its context object."""
    return {names.TASK_EXECUTION: execution, names.TASK_STATE: state, names.TASK_STATE_MACHINE: state_machine,
            names.TASK_RETRY_COUNT: retry, names.TASK_INPUT: task_input}



__all__ = ["ACCOUNT", "JSON", "REGION", "DrillContext", "alb_event", "api_event", "dynamodb_stream_arn",
           "dynamodb_stream_record", "function_url_event", "http_event", "kinesis_arn", "kinesis_event", "kinesis_record", "queue_arn", "rest_event", "sqs_event",
           "sqs_record", "task_payload"]
