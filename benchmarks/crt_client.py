"""The measurement of issue 28 item 4: retrysafe's store on a DynamoDB client built on ``awscrt``, not botocore.

A prototype, used only by ``make bench``'s socket variant (:func:`benchmarks.bench.transport`) to decide
whether an opt-in transport on AWS's common runtime is worth owning: it builds the DynamoDB JSON
request from the attribute maps retrysafe's codec already produces, signs it with awscrt's SigV4
signer (credentials from awscrt's default chain: environment, profile, container and instance
providers) and sends it on one kept-alive awscrt HTTP connection. It keeps what retrysafe's store
relies on from botocore, so the CPU measured includes it: the error shape ``DynamoStore`` parses
(``Error.Code``, ``Item``, ``CancellationReasons``), standard-mode retries (throttling and transient
codes, a CRC32 check of every response, a retry quota) and the ``ClientRequestToken`` the store puts in
its transactions. It handles plain endpoints only (no FIPS, dual-stack, proxies or custom CA bundles).

awscrt does its HTTP work on its own event-loop threads: its CPU is measured per process, not per thread.
"""

from __future__ import annotations

import base64
import json
import random
import time
import zlib
from collections.abc import Callable
from io import BytesIO
from typing import Any
from urllib.parse import urlsplit

#: botocore's standard retry mode (botocore.retries.standard) as the store configures it: 4 attempts; a
#: quota of 500 tokens per client (a throttled retry costs 5, any other 14; a success gives back what its
#: last retry took, or 1); backoff ``rand * min(scale * 2 ** (attempt - 1), 20)``, ``scale`` 1 s when
#: throttled and 25 ms for DynamoDB's other retries.
MAX_ATTEMPTS = 4
QUOTA, RETRY_COST, THROTTLED_COST = 500, 14, 5
THROTTLED_SCALE, TRANSIENT_SCALE, MAX_BACKOFF = 1.0, 0.025, 20.0
_THROTTLING = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
    "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled",
    "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException",
})
_TRANSIENT = frozenset({"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"})
_TRANSIENT_STATUS = frozenset({500, 502, 503, 504})
_TARGET = "DynamoDB_20120810."


class CrtClientError(Exception):
    """A DynamoDB error after retries, with botocore's ``ClientError.response`` shape (what ``DynamoStore`` reads)."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__(f"{response['Error']['Code']}: {response['Error'].get('Message', '')}")
        self.response = response


class CrtDynamoClient:
    """The DynamoDB operations retrysafe's store calls, on awscrt (``endpoint``: ``http(s)://host[:port]``)."""

    def __init__(self, region: str, endpoint: str | None = None, *,
                 credentials: Any = None, sleep: Callable[[float], None] = time.sleep) -> None:
        from awscrt import auth, io

        url = urlsplit(endpoint or f"https://dynamodb.{region}.amazonaws.com")
        self._https = url.scheme == "https"
        self._host = url.hostname or ""
        self._port = url.port or (443 if self._https else 80)
        self._authority = url.netloc
        self._bootstrap = io.ClientBootstrap.get_or_create_static_default()
        provider = credentials or auth.AwsCredentialsProvider.new_default_chain(self._bootstrap)
        self._config = auth.AwsSigningConfig(
            algorithm=auth.AwsSigningAlgorithm.V4, signature_type=auth.AwsSignatureType.HTTP_REQUEST_HEADERS,
            credentials_provider=provider, region=region, service="dynamodb")
        self._connection: Any = None
        self._quota = QUOTA
        self._sleep = sleep

    @property
    def retry_quota(self) -> int:
        """The retry tokens this client has left (botocore keeps the same count per client)."""
        return self._quota

    # -- the operations the store and the engine call ---------------------------------
    def put_item(self, **params: Any) -> dict[str, Any]:
        return self.call("PutItem", params)

    def update_item(self, **params: Any) -> dict[str, Any]:
        return self.call("UpdateItem", params)

    def delete_item(self, **params: Any) -> dict[str, Any]:
        return self.call("DeleteItem", params)

    def get_item(self, **params: Any) -> dict[str, Any]:
        return self.call("GetItem", params)

    def transact_write_items(self, **params: Any) -> dict[str, Any]:
        return self.call("TransactWriteItems", params)

    # -- the wire ---------------------------------------------------------------------
    def signed_request(self, target: str, body: bytes, date: Any = None) -> Any:
        """The signed ``awscrt.http.HttpRequest`` of one call (``date``: the signing time, now by default)."""
        from awscrt import auth, http

        headers = http.HttpHeaders([("Host", self._authority), ("Content-Type", "application/x-amz-json-1.0"),
                                    ("X-Amz-Target", _TARGET + target), ("Content-Length", str(len(body)))])
        request = http.HttpRequest("POST", "/", headers, BytesIO(body))
        config = self._config if date is None else self._config.replace(date=date)
        return auth.aws_sign_request(request, config).result()

    def call(self, target: str, params: dict[str, Any]) -> dict[str, Any]:
        """One operation with standard-mode retries; raises :class:`CrtClientError` as botocore raises ``ClientError``."""
        body = json.dumps(params, separators=(",", ":"), default=_base64).encode()
        attempt, taken = 0, 0
        while True:
            attempt += 1
            status, headers, raw, failed = self._send(target, body)
            parsed = None if failed else _parse(status, headers, raw)  # None: lost, or failed its CRC32
            code = None if parsed is None else parsed.get("__code")
            if parsed is not None and code is None:
                self._quota = min(QUOTA, self._quota + (taken or 1))
                return _decode(parsed)
            throttled = code in _THROTTLING or status == 429
            retryable = parsed is None or throttled or code in _TRANSIENT or status in _TRANSIENT_STATUS
            taken = THROTTLED_COST if throttled else RETRY_COST
            if not retryable or attempt >= MAX_ATTEMPTS or self._quota < taken:
                if parsed is None:
                    raise CrtClientError({"Error": {"Code": "ServiceUnavailable", "Message": "no valid response"},
                                          "ResponseMetadata": {"HTTPStatusCode": 503}})
                raise CrtClientError(_error(status, parsed))
            self._quota -= taken
            scale = THROTTLED_SCALE if throttled else TRANSIENT_SCALE
            self._sleep(random.random() * min(scale * 2.0 ** (attempt - 1), MAX_BACKOFF))

    def _send(self, target: str, body: bytes) -> tuple[int, dict[str, str], bytes, bool]:
        """(status, lower-cased headers, body, whether the call timed out or its connection failed)."""
        from awscrt.exceptions import AwsCrtError

        request = self.signed_request(target, body)
        chunks: list[bytes] = []
        answered: dict[str, str] = {}

        def on_response(status_code: int, headers: list[tuple[str, str]], **_: Any) -> None:
            answered.update((name.lower(), value) for name, value in headers)

        try:
            stream = self._connect().request(request, on_response=on_response,
                                             on_body=lambda chunk, **_: chunks.append(chunk))
            stream.activate()
            status = stream.completion_future.result(10)
        except (AwsCrtError, TimeoutError):
            if self._connection is not None:  # a new connection for the retry
                self._connection.close()
                self._connection = None
            return 0, {}, b"", True
        return status, answered, b"".join(chunks), False

    def _connect(self) -> Any:
        from awscrt import http, io

        if self._connection is None or not self._connection.is_open():
            tls = None
            if self._https:
                tls = io.ClientTlsContext(io.TlsContextOptions()).new_connection_options()
                tls.set_server_name(self._host)
            options = io.SocketOptions()
            # IPv4: DynamoDB's regional endpoints (dual-stack ones are out of this prototype's scope).
            options.domain, options.connect_timeout_ms, options.keep_alive = io.SocketDomain.IPv4, 2000, True
            self._connection = http.HttpClientConnection.new(
                host_name=self._host, port=self._port, bootstrap=self._bootstrap, tls_connection_options=tls,
                socket_options=options).result(10)
        return self._connection


def _parse(status: int, headers: dict[str, str], raw: bytes) -> dict[str, Any] | None:
    """The JSON body (``__code`` set on an error), or ``None`` when it fails DynamoDB's CRC32 or is not JSON."""
    expected = headers.get("x-amz-crc32")
    if expected is not None and zlib.crc32(raw) != int(expected):
        return None
    try:
        parsed: dict[str, Any] = json.loads(raw) if raw else {}
    except ValueError:
        return None
    if status >= 300:
        code = str(parsed.get("__type", headers.get("x-amzn-errortype", "")) or status)
        parsed["__code"] = code.rsplit("#", 1)[-1]
    return parsed


def _error(status: int, parsed: dict[str, Any]) -> dict[str, Any]:
    """botocore's ``ClientError.response`` of an error body (``Item`` and ``CancellationReasons`` decoded)."""
    response = _decode({k: v for k, v in parsed.items() if k not in ("__type", "__code", "message", "Message")})
    response["Error"] = {"Code": parsed["__code"], "Message": parsed.get("message", parsed.get("Message", ""))}
    response["ResponseMetadata"] = {"HTTPStatusCode": status}
    return response


def _base64(value: Any) -> str:
    """DynamoDB's JSON for ``bytes`` (``B``, ``BS``): base64; ``json.dumps`` calls this for nothing else."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not a DynamoDB JSON value")


def _decode(value: Any) -> Any:
    """A response as botocore parses it: every ``B``/``BS`` attribute value back to ``bytes``."""
    if isinstance(value, dict):
        if len(value) == 1:
            kind, inner = next(iter(value.items()))
            if kind == "B" and isinstance(inner, str):
                return {"B": base64.b64decode(inner)}
            if kind == "BS" and isinstance(inner, list):
                return {"BS": [base64.b64decode(v) for v in inner]}
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def same_signature_as_botocore() -> bool:
    """Whether this client's ``Authorization`` header equals botocore's ``SigV4Auth``'s for the same request
    (fixed credentials, session token and signing time)."""
    import datetime
    from unittest import mock

    from awscrt import auth
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    key, secret, token = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token"
    when = datetime.datetime(2026, 12, 1, 20, 0, 0, tzinfo=datetime.UTC)
    body = b'{"TableName":"t","Key":{"pk":{"S":"a"}},"ConsistentRead":true}'
    client = CrtDynamoClient("eu-west-1", "http://127.0.0.1:8000",
                             credentials=auth.AwsCredentialsProvider.new_static(key, secret, token))
    ours = dict(client.signed_request("GetItem", body, date=when).headers)
    request = AWSRequest(method="POST", url="http://127.0.0.1:8000/", data=body,
                         headers={"Content-Type": "application/x-amz-json-1.0", "Content-Length": str(len(body)),
                                  "X-Amz-Target": _TARGET + "GetItem"})
    with mock.patch("botocore.auth.get_current_datetime", return_value=when):
        SigV4Auth(Credentials(key, secret, token), "dynamodb", "eu-west-1").add_auth(request)
    return bool(ours["Authorization"] == request.headers["Authorization"])
