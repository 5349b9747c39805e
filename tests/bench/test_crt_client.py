"""The awscrt prototype client that ``make bench`` measures (issue 28 item 4) behaves as botocore does.

Its figures only mean something if it does what retrysafe's botocore client does: the same SigV4
signature, the same parsed answers and errors (``Item`` of a failed condition, ``CancellationReasons``
with the old item), botocore's standard-mode retries (throttling, transient errors, the CRC32 check,
the retry quota). The answers come from the benchmark's DynamoDB model on 127.0.0.1, or from a
scripted HTTP server on 127.0.0.1 for the faults.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from benchmarks import workload
from benchmarks.crt_client import CrtClientError, CrtDynamoClient, same_signature_as_botocore
from benchmarks.ddb_server import ModelServer

REGION = "eu-west-1"


def test_its_signature_equals_botocores() -> None:
    """The Authorization header of the same request, fixed credentials and time, is botocore SigV4Auth's."""
    assert same_signature_as_botocore()


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


def _script(client: Any, prefix: str) -> list[Any]:
    """Answers (or error codes, items and cancellation reasons) of the calls retrysafe's store makes."""
    table = workload.TABLE
    record = {"pk": {"S": f"{prefix}#1"}, "st": {"S": "completed"}, "exp": {"N": "2000"}, "rz": {"B": b"\x00\x01z"}}
    put = {"TableName": table, "Item": record, "ConditionExpression": "attribute_not_exists(pk) OR #exp < :now",
           "ExpressionAttributeNames": {"#exp": "exp"}, "ExpressionAttributeValues": {":now": {"N": "1000"}},
           "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    order = {"Put": {"TableName": workload.ORDERS, "Item": {"pk": {"S": f"{prefix}#order"}, "n": {"N": "42"}},
                     "ConditionExpression": "attribute_not_exists(pk)"}}
    key = {"pk": {"S": f"{prefix}#1"}}
    steps = [
        lambda: client.transact_write_items(TransactItems=[{"Put": put}, order], ClientRequestToken=f"{prefix}-1"),
        lambda: client.transact_write_items(TransactItems=[{"Put": put}, order]),  # cancelled, with the old item
        lambda: client.put_item(**put),  # a failed condition, with the old item
        lambda: client.get_item(TableName=table, Key=key, ConsistentRead=True),
        lambda: client.update_item(TableName=table, Key=key, UpdateExpression="SET #st = :st",
                                   ConditionExpression="#st = :other", ExpressionAttributeNames={"#st": "st"},
                                   ExpressionAttributeValues={":st": {"S": "x"}, ":other": {"S": "pending"}},
                                   ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        lambda: client.delete_item(TableName=table, Key=key),
        lambda: client.get_item(TableName=table, Key=key, ConsistentRead=True),
    ]
    answers: list[Any] = []
    for step in steps:
        try:
            answer = step()
            answers.append({k: v for k, v in answer.items() if k != "ResponseMetadata"})
        except (ClientError, CrtClientError) as error:
            response: dict[str, Any] = error.response  # type: ignore[attr-defined]
            answers.append({"code": response["Error"]["Code"], "item": response.get("Item"),
                            "reasons": response.get("CancellationReasons")})
    return json.loads(json.dumps(answers, default=repr).replace(prefix, "KEY"))


def test_answers_and_errors_parse_as_botocore_parses_them(server: ModelServer) -> None:
    """The same calls on the model server through botocore and through the prototype: the same parsed results."""
    botocore_client = boto3.session.Session().client(
        "dynamodb", region_name=REGION, endpoint_url=server.endpoint, aws_access_key_id="k", aws_secret_access_key="s",
        config=Config(retries={"mode": "standard", "max_attempts": 4}))
    crt_client = CrtDynamoClient(REGION, server.endpoint)
    expected, got = _script(botocore_client, "botocore"), _script(crt_client, "awscrt")
    assert got == expected
    assert expected[1]["code"] == "TransactionCanceledException" and expected[1]["reasons"][0]["Item"]["rz"]
    assert expected[2]["code"] == "ConditionalCheckFailedException" and expected[2]["item"]["pk"] == {"S": "KEY#1"}


class _Scripted(BaseHTTPRequestHandler):
    """Answers each POST with the next (status, body, crc32 override) of ``replies``."""

    protocol_version = "HTTP/1.1"
    replies: ClassVar[list[tuple[int, bytes, int | None]]] = []
    targets: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).targets.append(self.headers["X-Amz-Target"])
        status, body, crc = type(self).replies.pop(0)
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-crc32", str(zlib.crc32(body) if crc is None else crc))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def scripted() -> Iterator[tuple[str, type[_Scripted]]]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Scripted.replies, _Scripted.targets = [], []
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", _Scripted
    finally:
        httpd.shutdown()
        httpd.server_close()


def _error(code: str) -> bytes:
    return json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code}).encode()


def test_it_retries_throttling_and_a_bad_crc32_and_refunds_the_quota(scripted: tuple[str, type[_Scripted]]) -> None:
    """Standard mode: a throttled answer (5 tokens, backoff scale 1 s), a reply failing DynamoDB's CRC32
    check (14 tokens, 25 ms scale), then success, which gives back the last retry's 14 tokens."""
    endpoint, replies = scripted
    replies.replies = [(400, _error("ProvisionedThroughputExceededException"), None), (200, b'{"Item":{}}', 1),
                       (200, b'{"Item":{"pk":{"S":"a"}}}', None)]
    sleeps: list[float] = []
    client = CrtDynamoClient(REGION, endpoint, sleep=sleeps.append)
    assert client.get_item(TableName="t", Key={"pk": {"S": "a"}}) == {"Item": {"pk": {"S": "a"}}}
    assert replies.targets == ["DynamoDB_20120810.GetItem"] * 3
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 0.05
    assert client.retry_quota == 500 - 5 - 14 + 14


def test_it_stops_after_four_attempts_and_never_retries_a_validation_error(
        scripted: tuple[str, type[_Scripted]]) -> None:
    """Four attempts of a 500 end in the error; a ValidationException is answered at once."""
    endpoint, replies = scripted
    replies.replies = [(500, _error("InternalServerError"), None)] * 4 + [(400, _error("ValidationException"), None)]
    client = CrtDynamoClient(REGION, endpoint, sleep=lambda _: None)
    with pytest.raises(CrtClientError) as failed:
        client.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert failed.value.response["Error"]["Code"] == "InternalServerError"
    assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    with pytest.raises(CrtClientError) as refused:
        client.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert len(replies.targets) == 5 and client.retry_quota == 500 - 3 * 14
