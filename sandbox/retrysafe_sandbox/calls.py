"""What IAM checks for one API call: the actions and resource ARNs of a request as the service authorizes it.

A call is read from its wire form (JSON protocol ``X-Amz-Target`` + body, query protocol
``Action`` + form fields, or S3's REST method + path, path-style as boto3 addresses an IP endpoint). Batch operations are authorized as their single-item actions
(``sqs:SendMessageBatch`` needs ``sqs:SendMessage``, ``sns:PublishBatch`` needs ``sns:Publish``);
``TransactWriteItems`` is expanded into ``PutItem``/``UpdateItem``/``DeleteItem``/
``ConditionCheckItem`` on each item's table and ``TransactGetItems`` into ``GetItem``, as
DynamoDB authorizes them. An operation with no known resource is checked against ``*``;
``sts:GetCallerIdentity`` needs no permission.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .assembly import ACCOUNT, REGION

#: JSON-protocol target prefixes and the IAM service prefix of their actions.
TARGETS = {"DynamoDB_20120810": "dynamodb", "DynamoDBStreams_20120810": "dynamodb", "AmazonSQS": "sqs",
           "AWSEvents": "events", "secretsmanager": "secretsmanager", "AmazonSSM": "ssm",
           "AWSStepFunctions": "states", "Logs_20140328": "logs", "TrentService": "kms"}
#: Operations authorized as another action.
ALIASES = {"sqs:SendMessageBatch": "sqs:SendMessage", "sqs:DeleteMessageBatch": "sqs:DeleteMessage",
           "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility", "sns:PublishBatch": "sns:Publish"}
#: Calls IAM never denies.
UNCHECKED = frozenset({"sts:GetCallerIdentity"})
TRANSACT_WRITE = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                  "ConditionCheck": "ConditionCheckItem"}

Check = tuple[str, str]
SecretArn = Callable[[str], str]


def _table(name: str, index: str | None = None) -> str:
    arn = name if name.startswith("arn:") else f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
    return f"{arn}/index/{index}" if index else arn


def _queue(url: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{urlsplit(url).path.rstrip('/').rsplit('/', 1)[-1]}"


def _bus(name: str | None) -> str:
    name = name or "default"
    return name if name.startswith("arn:") else f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}"


def _parameter(name: str) -> str:
    return name if name.startswith("arn:") else f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/{name.lstrip('/')}"


def _dynamodb(operation: str, params: Mapping[str, Any]) -> list[Check]:
    if operation == "TransactWriteItems":
        return [(f"dynamodb:{TRANSACT_WRITE[kind]}", _table(body["TableName"]))
                for item in params.get("TransactItems", []) for kind, body in item.items() if kind in TRANSACT_WRITE]
    if operation == "TransactGetItems":
        return [("dynamodb:GetItem", _table(item["Get"]["TableName"])) for item in params.get("TransactItems", [])]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{operation}", _table(name)) for name in params.get("RequestItems", {})]
    if "StreamArn" in params:
        return [(f"dynamodb:{operation}", str(params["StreamArn"]))]
    if "ShardIterator" in params:
        return [(f"dynamodb:{operation}", str(params["ShardIterator"]).split("|", 1)[0])]
    if "TableName" in params:
        return [(f"dynamodb:{operation}", _table(str(params["TableName"]), params.get("IndexName")))]
    return [(f"dynamodb:{operation}", "*")]


def checks(service: str, operation: str, params: Mapping[str, Any], secret_arn: SecretArn = str) -> list[Check]:
    """The ``(action, resource ARN)`` pairs IAM evaluates for one call (``service``: the IAM prefix)."""
    action = ALIASES.get(f"{service}:{operation}", f"{service}:{operation}")
    if action in UNCHECKED:
        return []
    if service == "dynamodb":
        return _dynamodb(operation, params)
    if service == "sqs":
        if "QueueUrl" in params:
            return [(action, _queue(str(params["QueueUrl"])))]
        if "QueueName" in params:
            return [(action, f"arn:aws:sqs:{REGION}:{ACCOUNT}:{params['QueueName']}")]
    if service == "sns" and ("TopicArn" in params or "TargetArn" in params):
        return [(action, str(params.get("TopicArn") or params.get("TargetArn")))]
    if service == "events" and operation == "PutEvents":
        buses = dict.fromkeys(_bus(entry.get("EventBusName")) for entry in params.get("Entries", []))
        return [(action, bus) for bus in buses]
    if service == "secretsmanager" and "SecretId" in params:
        return [(action, secret_arn(str(params["SecretId"])))]
    if service == "ssm":
        names = [params["Name"]] if "Name" in params else params.get("Names") or [params.get("Path", "")]
        if any(names):
            return [(action, _parameter(str(name))) for name in names]
    if service == "states":
        for key in ("stateMachineArn", "executionArn"):
            if key in params:
                return [(action, str(params[key]))]
    return [(action, "*")]


#: S3 REST requests IAM authorizes as these actions: (method, on an object?) -> action.
S3_ACTIONS = {("PUT", True): "s3:PutObject", ("GET", True): "s3:GetObject", ("HEAD", True): "s3:GetObject",
              ("DELETE", True): "s3:DeleteObject", ("GET", False): "s3:ListBucket", ("HEAD", False): "s3:ListBucket",
              ("PUT", False): "s3:CreateBucket", ("DELETE", False): "s3:DeleteBucket"}


def s3_checks(method: str, path: str, query: Mapping[str, list[str]]) -> list[Check]:
    """The ``(action, resource ARN)`` of one S3 REST request (``/bucket`` or ``/bucket/key``).

    Requests on a subresource (``?tagging``, ``?acl``...) other than a listing's parameters are named
    by it (``s3:PUT?tagging``), which no policy grants: the ledger shows them denied rather than guessed.
    """
    bucket, _, key = path.lstrip("/").partition("/")
    if not bucket:
        return [("s3:ListAllMyBuckets", "*")]
    listing = {"list-type", "prefix", "delimiter", "max-keys", "marker", "continuation-token", "start-after",
               "encoding-type", "fetch-owner", "x-id"}
    extra = sorted(set(query) - listing)
    action = S3_ACTIONS.get((method, bool(key)), f"s3:{method}") if not extra else f"s3:{method}?{extra[0]}"
    return [(action, f"arn:aws:s3:::{bucket}/{key}" if key else f"arn:aws:s3:::{bucket}")]


def query_params(form: Mapping[str, list[str]]) -> dict[str, Any]:
    """The top-level members of a query-protocol request (``TopicArn``, ``QueueUrl``...)."""
    return {k: v[-1] for k, v in form.items() if "." not in k}
