"""Lambda events and contexts for drills: API Gateway (REST v1, HTTP API v2), SQS, Step Functions payloads."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

REGION = "eu-west-1"
ACCOUNT = "123456789012"


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


def api_event(body: str | None, *, headers: dict[str, str] | None = None, tenant: str | None = "tenant-a",
              method: str = "POST", route: str = "/orders", version: str = "2.0",
              base64: bool = False) -> dict[str, Any]:
    """An API Gateway proxy event: HTTP API v2 (JWT ``sub`` = tenant) or REST v1 (Cognito ``sub`` = tenant)."""
    headers = dict(headers or {})
    if version == "2.0":
        event: dict[str, Any] = {
            "version": "2.0", "routeKey": f"{method} {route}", "rawPath": route, "rawQueryString": "",
            "headers": {k.lower(): v for k, v in headers.items()},
            "requestContext": {"http": {"method": method, "path": route, "sourceIp": "127.0.0.1"},
                               "routeKey": f"{method} {route}", "stage": "$default",
                               "requestId": str(uuid.uuid4())},
            "body": body, "isBase64Encoded": base64,
        }
        if tenant:
            event["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": tenant}, "scopes": []}}
        return event
    return {
        "resource": route, "path": route, "httpMethod": method, "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": None, "multiValueQueryStringParameters": None, "pathParameters": None,
        "requestContext": {"resourcePath": route, "httpMethod": method, "stage": "prod",
                           "requestId": str(uuid.uuid4()),
                           "authorizer": {"claims": {"sub": tenant}} if tenant else None,
                           "identity": {"sourceIp": "127.0.0.1", "userArn": None}},
        "body": body, "isBase64Encoded": base64,
    }


def sqs_record(body: Any, *, message_id: str | None = None, attributes: dict[str, str] | None = None,
               queue: str = "inbox", receive_count: int = 1) -> dict[str, Any]:
    """One SQS record of a Lambda event (string message attributes only)."""
    return {
        "messageId": message_id or str(uuid.uuid4()), "receiptHandle": uuid.uuid4().hex,
        "body": body if isinstance(body, str) else json.dumps(body),
        "attributes": {"ApproximateReceiveCount": str(receive_count),
                       "SentTimestamp": str(int(time.time() * 1000)), "SenderId": "AIDAEXAMPLE",
                       "ApproximateFirstReceiveTimestamp": str(int(time.time() * 1000))},
        "messageAttributes": {k: {"stringValue": v, "stringListValues": [], "binaryListValues": [],
                                  "dataType": "String"} for k, v in (attributes or {}).items()},
        "md5OfBody": "-", "eventSource": "aws:sqs", "eventSourceARN": f"arn:aws:sqs:{REGION}:{ACCOUNT}:{queue}",
        "awsRegion": REGION,
    }


def task_payload(task_input: Any, *, execution: str, state: str = "Task",
                 state_machine: str = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:Drill",
                 retry: int = 0) -> dict[str, Any]:
    """The ``LambdaInvoke`` payload a state machine builds from its context object."""
    return {"execution": execution, "state": state, "stateMachine": state_machine, "retryCount": retry,
            "input": task_input}
