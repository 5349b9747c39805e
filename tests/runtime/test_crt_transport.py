"""The fast transport (``RETRYSAFE_TRANSPORT=crt``): awscrt on the wire, botocore's behaviour at the seam.

Pinned here: its SigV4 signatures equal botocore's for the requests the store sends; every operation
answers as botocore's client answers on moto's server (on 127.0.0.1); standard-mode retries
(throttling, transient statuses, DynamoDB's CRC32 check, the retry quota, the configured attempts);
a lost answer raises botocore's own exceptions, which the store reads as unavailable; a transaction
gets one ``ClientRequestToken`` for all its attempts; and the selection falls back to botocore, with
one log line naming the reason and never a value, for every configuration it does not handle.
"""

from __future__ import annotations

import datetime
import json
import logging
import socket
import sys
import threading
import uuid
import zlib
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from retrysafe import Engine, idempotent_http
from retrysafe._crt import CrtTransport, selected_transport
from retrysafe._store import DynamoStore
from retrysafe._transport import Reply
from retrysafe.errors import ConfigurationError, StoreUnavailableError
from retrysafe.names import TRANSPORT_ENV
from retrysafe.testing._events import DrillContext, rest_event

from tests.helpers import ORDERS, TABLE
from tests.runtime.test_transport_seam import botocore_client, endpoint, server

__all__ = ["endpoint", "server"]  # moto's server on 127.0.0.1, with the tables (fixtures)

REGION = "eu-west-1"
KEY, SECRET, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token"


def crt(endpoint: str, **options: Any) -> CrtTransport:
    from awscrt import auth

    return CrtTransport(REGION, endpoint, credentials=auth.AwsCredentialsProvider.new_static("testing", "testing"),
                        **options)


class Recorder:
    """An interceptor that keeps every attempt's operation and parameters."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def before_attempt(self, operation: str, params: Mapping[str, Any]) -> Reply | None:
        self.sent.append((operation, json.loads(json.dumps(params, default=repr))))
        return None

    def after_attempt(self, operation: str, params: Mapping[str, Any], reply: Reply, applied: bool) -> None:
        """Nothing to do after."""


def _store_requests(endpoint: str) -> list[tuple[str, dict[str, Any]]]:
    """The requests the store sends for a first request with a business write, its replay, a read, a
    listing, the outbox-style query and the table check (all through the crt transport)."""
    transport = crt(endpoint)
    recorder = Recorder()
    transport.attempts.interceptors.append(recorder)
    store = DynamoStore(TABLE, client=transport)

    def order(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        txn.put({"pk": f"order#{uuid.uuid4().hex}", "n": 1}, table=ORDERS)
        return {"statusCode": 201, "body": "{}"}

    handler = idempotent_http(order, operation=f"Sign-{uuid.uuid4().hex}", engine=Engine(store))
    event = rest_event({"amount": 5})
    assert handler(event, DrillContext())["statusCode"] == 201
    assert handler(event, DrillContext())["statusCode"] == 201
    transport.describe_table(TableName=TABLE)
    transport.scan(TableName=TABLE, Limit=2)
    transport.query(TableName=TABLE, KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": {"S": "none"}})
    transport.update_item(TableName=ORDERS, Key={"pk": {"S": "u"}}, UpdateExpression="SET n = :n",
                          ExpressionAttributeValues={":n": {"N": "1"}})
    transport.get_item(TableName=ORDERS, Key={"pk": {"S": "u"}}, ConsistentRead=True)
    transport.delete_item(TableName=ORDERS, Key={"pk": {"S": "u"}})
    return recorder.sent


def test_its_signatures_equal_botocores_for_the_stores_requests(endpoint: str) -> None:
    """Each request the store sent, signed by awscrt and by botocore's ``SigV4Auth`` (fixed credentials with a
    session token, fixed time): the same ``Authorization`` header."""
    from unittest import mock

    from awscrt import auth
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    sent = _store_requests(endpoint)
    assert {operation for operation, _ in sent} >= {"TransactWriteItems", "DescribeTable", "Scan", "Query",
                                                     "UpdateItem", "GetItem", "DeleteItem"}
    when = datetime.datetime(2026, 12, 1, 20, 0, 0, tzinfo=datetime.UTC)
    signer = CrtTransport(REGION, "https://dynamodb.eu-west-1.amazonaws.com",
                          credentials=auth.AwsCredentialsProvider.new_static(KEY, SECRET, TOKEN))
    for operation, params in sent:
        body = json.dumps(params).encode()
        ours = dict(signer.signed_request(operation, body, date=when).headers)
        request = AWSRequest(method="POST", url="https://dynamodb.eu-west-1.amazonaws.com/", data=body,
                             headers={"Content-Type": "application/x-amz-json-1.0", "Content-Length": str(len(body)),
                                      "X-Amz-Target": f"DynamoDB_20120810.{operation}"})
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            SigV4Auth(Credentials(KEY, SECRET, TOKEN), "dynamodb", REGION).add_auth(request)
        assert ours["Authorization"] == request.headers["Authorization"], operation
        assert ours["X-Amz-Security-Token"] == TOKEN


def _script(client: Any, prefix: str) -> list[Any]:
    from botocore.exceptions import ClientError

    """Answers (or error codes, items and cancellation reasons) of every operation of the transport."""
    record = {"pk": {"S": f"{prefix}#1"}, "st": {"S": "completed"}, "exp": {"N": "2000"}, "rz": {"B": b"\x00\x01z"},
              "bs": {"BS": [b"\x01", b"\x02"]}}
    put = {"TableName": TABLE, "Item": record, "ConditionExpression": "attribute_not_exists(pk) OR #exp < :now",
           "ExpressionAttributeNames": {"#exp": "exp"}, "ExpressionAttributeValues": {":now": {"N": "1000"}},
           "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    order = {"Put": {"TableName": ORDERS, "Item": {"pk": {"S": f"{prefix}#order"}, "n": {"N": "42"}},
                     "ConditionExpression": "attribute_not_exists(pk)"}}
    key = {"pk": {"S": f"{prefix}#1"}}
    steps = [
        lambda: client.transact_write_items(TransactItems=[{"Put": put}, order]),
        lambda: client.transact_write_items(TransactItems=[{"Put": put}, order]),  # cancelled, with the old item
        lambda: client.put_item(**put),  # a failed condition, with the old item
        lambda: client.get_item(TableName=TABLE, Key=key, ConsistentRead=True),
        lambda: client.query(TableName=TABLE, KeyConditionExpression="pk = :pk",
                             ExpressionAttributeValues={":pk": key["pk"]}, ConsistentRead=True),
        lambda: client.update_item(TableName=TABLE, Key=key, UpdateExpression="SET #st = :st",
                                   ConditionExpression="#st = :other", ExpressionAttributeNames={"#st": "st"},
                                   ExpressionAttributeValues={":st": {"S": "x"}, ":other": {"S": "pending"}},
                                   ReturnValuesOnConditionCheckFailure="ALL_OLD"),
        lambda: client.update_item(TableName=TABLE, Key=key, UpdateExpression="SET #st = :st",
                                   ExpressionAttributeNames={"#st": "st"},
                                   ExpressionAttributeValues={":st": {"S": "done"}}, ReturnValues="ALL_NEW"),
        lambda: client.delete_item(TableName=TABLE, Key=key, ReturnValues="ALL_OLD"),
        lambda: client.get_item(TableName=TABLE, Key=key, ConsistentRead=True),
        lambda: client.get_item(TableName="no-such-table", Key=key),
        lambda: client.put_item(TableName=TABLE, Item={"pk": {"S": ""}}),  # refused: an empty key
        lambda: {"Table": {k: v for k, v in client.describe_table(TableName=TABLE)["Table"].items()
                           if k in ("TableName", "KeySchema", "AttributeDefinitions")}},
    ]
    answers: list[Any] = []
    for step in steps:
        try:
            answer = step()
            answers.append({k: v for k, v in answer.items() if k not in ("ResponseMetadata", "ConsumedCapacity")})
        except ClientError as error:  # botocore's client raises its modeled subclasses, the transport ClientError
            response: dict[str, Any] = error.response  # type: ignore[assignment]
            answers.append({"code": response["Error"]["Code"],
                            "item": response.get("Item"), "reasons": response.get("CancellationReasons"),
                            "status": response["ResponseMetadata"]["HTTPStatusCode"]})
    return json.loads(json.dumps(answers, default=repr).replace(prefix, "KEY"))


def test_every_operation_answers_as_botocores_client_does_on_moto(endpoint: str) -> None:
    expected = _script(botocore_client(endpoint), f"b{uuid.uuid4().hex}")
    got = _script(crt(endpoint), f"c{uuid.uuid4().hex}")
    assert got == expected
    assert expected[1]["code"] == "TransactionCanceledException" and expected[1]["reasons"][0]["Item"]["rz"]
    assert expected[2]["code"] == "ConditionalCheckFailedException" and expected[2]["item"]["pk"] == {"S": "KEY#1"}
    assert expected[4]["Count"] == 1 and expected[9]["code"] == "ResourceNotFoundException"


def test_scan_pages_and_close_reconnects(endpoint: str) -> None:
    transport = crt(endpoint)
    for n in range(3):
        transport.put_item(TableName=ORDERS, Item={"pk": {"S": f"page#{uuid.uuid4().hex}"}, "n": {"N": str(n)}})
    first = transport.scan(TableName=ORDERS, Limit=2)
    assert len(first["Items"]) == 2 and "LastEvaluatedKey" in first
    transport.close()
    rest = transport.scan(TableName=ORDERS, ExclusiveStartKey=first["LastEvaluatedKey"])
    assert rest["ResponseMetadata"]["HTTPStatusCode"] == 200 and rest["ScannedCount"] >= 1


# -- retries and faults on a scripted server -----------------------------------------------------------


class _Scripted(BaseHTTPRequestHandler):
    """Answers each POST with the next (status, body, crc32 override) of ``replies``; ``None`` closes the
    connection without an answer."""

    protocol_version = "HTTP/1.1"
    replies: ClassVar[list[tuple[int, bytes, int | None] | None]] = []
    bodies: ClassVar[list[dict[str, Any]]] = []
    ports: ClassVar[list[int]] = []  # the client's port of each request: its connection

    def do_POST(self) -> None:
        type(self).bodies.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0))))
        type(self).ports.append(self.client_address[1])
        reply = type(self).replies.pop(0)
        if reply is None:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status, body, crc = reply
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
    _Scripted.replies, _Scripted.bodies, _Scripted.ports = [], [], []
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
    url, script = scripted
    script.replies = [(400, _error("ProvisionedThroughputExceededException"), None), (200, b'{"Item":{}}', 1),
                      (200, b'{"Item":{"pk":{"S":"a"}}}', None)]
    sleeps: list[float] = []
    transport = crt(url, sleep=sleeps.append)
    answer = transport.get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert answer["Item"] == {"pk": {"S": "a"}} and answer["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(script.bodies) == 3
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 0.05
    assert transport.retry_quota == 500 - 5 - 14 + 14


def test_it_keeps_its_connection_alive_until_closed_as_snapstarts_hooks_do(
        scripted: tuple[str, type[_Scripted]]) -> None:
    """Calls share one kept-alive connection; after ``close()`` (before a snapshot, after a restore) the next
    call opens a new one."""
    url, script = scripted
    script.replies = [(200, b"{}", None)] * 3
    transport = crt(url)
    transport.get_item(TableName="t", Key={"pk": {"S": "a"}})
    transport.get_item(TableName="t", Key={"pk": {"S": "a"}})
    transport.close()
    transport.get_item(TableName="t", Key={"pk": {"S": "a"}})
    first, second, after_close = script.ports
    assert first == second and after_close != first


def test_a_crc32_mismatch_on_every_attempt_is_botocores_checksum_error(scripted: tuple[str, type[_Scripted]]) -> None:
    from botocore.exceptions import ChecksumError

    url, script = scripted
    script.replies = [(200, b'{"Item":{}}', 1)] * 2
    with pytest.raises(ChecksumError):
        crt(url, max_attempts=2, sleep=lambda _: None).get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert len(script.bodies) == 2


def test_it_stops_after_the_configured_attempts_and_never_retries_a_validation_error(
        scripted: tuple[str, type[_Scripted]]) -> None:
    """Five attempts by default (the store's botocore client: four retries), fewer when configured; a
    ValidationException is answered at once; the errors are botocore's ``ClientError``."""
    from botocore.exceptions import ClientError

    url, script = scripted
    script.replies = [(500, _error("InternalServerError"), None)] * 5 + [(400, _error("ValidationException"), None)]
    transport = crt(url, sleep=lambda _: None)
    with pytest.raises(ClientError) as failed:
        transport.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert failed.value.response["Error"] == {"Code": "InternalServerError", "Message": "InternalServerError"}
    assert failed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert failed.value.operation_name == "PutItem"
    with pytest.raises(ClientError) as refused:
        transport.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert len(script.bodies) == 6 and transport.retry_quota == 500 - 4 * 14
    script.replies = [(503, _error("ServiceUnavailable"), None)] * 2
    with pytest.raises(ClientError):
        crt(url, max_attempts=2, sleep=lambda _: None).get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert len(script.bodies) == 8


def test_a_transaction_keeps_one_generated_token_across_its_retries(scripted: tuple[str, type[_Scripted]]) -> None:
    url, script = scripted
    script.replies = [None, (200, b"{}", None), (200, b"{}", None)]
    transport = crt(url, sleep=lambda _: None)
    items = [{"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}}]
    transport.transact_write_items(TransactItems=items)
    first, resent = script.bodies[0]["ClientRequestToken"], script.bodies[1]["ClientRequestToken"]
    assert first == resent and uuid.UUID(first)
    transport.transact_write_items(TransactItems=items, ClientRequestToken="mine")
    assert script.bodies[2]["ClientRequestToken"] == "mine"


def test_lost_answers_raise_botocores_exceptions_and_the_store_reads_them_as_unavailable(
        scripted: tuple[str, type[_Scripted]]) -> None:
    from botocore.exceptions import ConnectionClosedError, EndpointConnectionError, ReadTimeoutError

    url, script = scripted
    script.replies = [None, None]
    with pytest.raises(ConnectionClosedError):
        crt(url, max_attempts=2, sleep=lambda _: None).get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert len(script.bodies) == 2

    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        with pytest.raises(ReadTimeoutError):
            crt(f"http://127.0.0.1:{silent.getsockname()[1]}", max_attempts=1, read_timeout=0.2).get_item(
                TableName="t", Key={"pk": {"S": "a"}})
    finally:
        silent.close()

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there
    with pytest.raises(EndpointConnectionError):
        crt(f"http://127.0.0.1:{port}", max_attempts=2, sleep=lambda _: None).get_item(
            TableName="t", Key={"pk": {"S": "a"}})
    store = DynamoStore("t", client=crt(f"http://127.0.0.1:{port}", max_attempts=1))
    with pytest.raises(StoreUnavailableError) as unavailable:
        store.get(_record_id())
    assert unavailable.value.code == "EndpointConnectionError"


def _record_id() -> str:
    from retrysafe.names import RECORD_PREFIX

    return f"{RECORD_PREFIX}{uuid.uuid4().hex}"


# -- the selection and its fallbacks ----------------------------------------------------------------


BASE = {TRANSPORT_ENV: "crt", "AWS_REGION": REGION}


def test_the_setting_selects_the_crt_transport_for_the_stores_own_client(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_CA_BUNDLE", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy",
                 "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)  # this machine's own settings
    monkeypatch.setenv(TRANSPORT_ENV, "crt")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    client = DynamoStore(TABLE, region_name="eu-central-1").client
    assert isinstance(client, CrtTransport)
    assert client.region_name == "eu-central-1" and client.endpoint == "http://127.0.0.1:9"
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB")
    regional = selected_transport("us-east-2", {**BASE, "AWS_CONFIG_FILE": "/nonexistent"})
    assert regional is not None and regional.endpoint == "https://dynamodb.us-east-2.amazonaws.com"


def test_botocore_is_the_default_and_a_misspelled_transport_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert selected_transport(REGION, {}) is None
    assert selected_transport(REGION, {TRANSPORT_ENV: "botocore"}) is None
    with pytest.raises(ConfigurationError, match=TRANSPORT_ENV):
        selected_transport(REGION, {TRANSPORT_ENV: "awscrt"})
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    assert type(DynamoStore(TABLE, region_name=REGION).client).__module__ == "botocore.client"


SECRET_VALUE = "http://user:s3cr3t@proxy.internal:3128"

FALLBACKS: dict[str, tuple[dict[str, str], str]] = {
    "fips": ({"AWS_USE_FIPS_ENDPOINT": "true"}, "AWS_USE_FIPS_ENDPOINT"),
    "dual-stack": ({"AWS_USE_DUALSTACK_ENDPOINT": "true"}, "AWS_USE_DUALSTACK_ENDPOINT"),
    "https proxy": ({"HTTPS_PROXY": SECRET_VALUE}, "HTTPS_PROXY"),
    "http proxy": ({"http_proxy": SECRET_VALUE}, "http_proxy"),
    "ca bundle": ({"AWS_CA_BUNDLE": "/etc/s3cr3t/ca.pem"}, "AWS_CA_BUNDLE"),
    "endpoint with a path": ({"AWS_ENDPOINT_URL_DYNAMODB": "https://gw.example/s3cr3t/ddb"},
                             "AWS_ENDPOINT_URL_DYNAMODB"),
    "endpoint with credentials": ({"AWS_ENDPOINT_URL": SECRET_VALUE}, "AWS_ENDPOINT_URL"),
    "account endpoints required": ({"AWS_ACCOUNT_ID_ENDPOINT_MODE": "required"}, "AWS_ACCOUNT_ID_ENDPOINT_MODE"),
    "china": ({"AWS_REGION": "cn-north-1"}, "aws partition"),
    "govcloud": ({"AWS_REGION": "us-gov-west-1"}, "aws partition"),
    "no region": ({"AWS_REGION": ""}, "AWS_REGION"),
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_each_configuration_it_does_not_handle_falls_back_to_botocore_with_one_log_line(
        case: str, caplog: pytest.LogCaptureFixture) -> None:
    settings, reason = FALLBACKS[case]
    env = {**BASE, "AWS_CONFIG_FILE": "/nonexistent", **settings}
    with caplog.at_level(logging.WARNING, logger="retrysafe"):
        assert selected_transport(None, env) is None
    [line] = caplog.records
    assert reason in line.getMessage() and "botocore" in line.getMessage()
    assert "s3cr3t" not in line.getMessage() and "proxy.internal" not in line.getMessage()


def test_an_endpoint_setting_is_ignored_when_botocore_would_ignore_it() -> None:
    env = {**BASE, "AWS_CONFIG_FILE": "/nonexistent", "AWS_ENDPOINT_URL": "https://gw.example/path",
           "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}
    chosen = selected_transport(None, env)
    assert chosen is not None and chosen.endpoint == f"https://dynamodb.{REGION}.amazonaws.com"


@pytest.mark.parametrize("setting", ["use_fips_endpoint = true", "use_dualstack_endpoint = true",
                                     "ca_bundle = /etc/ca.pem", "endpoint_url = https://x.example",
                                     "services = local", "sso_session = corp"])
def test_a_profile_setting_it_does_not_apply_falls_back(setting: str, tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "config"
    config.write_text(f"[profile team]\nregion = eu-west-1\n{setting}\n")
    env = {**BASE, "AWS_CONFIG_FILE": str(config), "AWS_PROFILE": "team"}
    with caplog.at_level(logging.WARNING, logger="retrysafe"):
        assert selected_transport(None, env) is None
    assert setting.split(" ")[0] in caplog.records[0].getMessage()
    config.write_text("[profile team]\nregion = eu-west-1\nuse_fips_endpoint = false\n")
    assert selected_transport(None, env) is not None  # a setting that changes nothing does not fall back


def test_without_awscrt_installed_it_falls_back(monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "awscrt", None)  # import awscrt raises ImportError
    with caplog.at_level(logging.WARNING, logger="retrysafe"):
        assert selected_transport(None, {**BASE, "AWS_CONFIG_FILE": "/nonexistent"}) is None
    assert "retrysafe[crt]" in caplog.records[0].getMessage()
