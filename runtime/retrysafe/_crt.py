"""The fast transport: DynamoDB on AWS's common runtime (``awscrt``) instead of botocore's client.

Opt-in (``RETRYSAFE_TRANSPORT=crt`` and the ``retrysafe[crt]`` extra). :class:`CrtTransport` sends
the attribute maps the store builds as DynamoDB's JSON protocol, signs each attempt with awscrt's
SigV4 signer (credentials from awscrt's default chain: environment, profile, web identity, the
container provider Lambda SnapStart uses, instance metadata) and sends it on a kept-alive awscrt
HTTP/1.1 connection (TLS to the regional endpoint). What the engine sees is botocore's: answers
parsed as botocore parses them (``B`` values as ``bytes``), ``ClientError`` with the same
``response`` (``Error``, ``Item`` of a failed condition, ``CancellationReasons``), botocore's
connection and timeout errors for an answer that never came; retries are botocore's standard mode
as the store configures its client (the same attempts, retryable codes, backoff, retry quota and
DynamoDB's CRC32 check), and a ``TransactWriteItems`` without a ``ClientRequestToken`` gets one,
as botocore generates it.

:func:`selected_transport` decides, for the store's own client, between this transport and botocore's:
every configuration this transport does not handle (FIPS or dual-stack endpoints, proxies, a custom
CA bundle, an endpoint URL with a path, another partition than ``aws``, SSO profiles, a missing
``awscrt``...) falls back to botocore with one log line naming the reason (a setting's name, never
its value).

awscrt is imported only here, and this module only when the setting selects it.
"""

from __future__ import annotations

import base64
import configparser
import json
import logging
import os
import random
import re
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from io import BytesIO
from typing import Any
from urllib.parse import urlsplit

from . import names
from ._transport import Attempts, Reply
from .errors import ConfigurationError

#: The transport names ``RETRYSAFE_TRANSPORT`` accepts.
BOTOCORE, CRT = "botocore", "crt"

#: Total attempts per call, as the store configures botocore's client (``max_attempts`` 4 retries).
MAX_ATTEMPTS = 5
#: botocore's standard retry mode (``botocore.retries.standard``): a quota of 500 tokens per client (a
#: throttled retry costs 5, any other 14; a success gives back what its last retry took, or 1); backoff
#: ``rand * min(scale * 2 ** (attempt - 1), 20)``, ``scale`` 1 s when throttled, 25 ms for DynamoDB's others.
QUOTA, RETRY_COST, THROTTLED_COST = 500, 14, 5
THROTTLED_SCALE, TRANSIENT_SCALE, MAX_BACKOFF = 1.0, 0.025, 20.0
_THROTTLING = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
    "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled",
    "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException",
})
#: Transient codes, and the one DynamoDB error its model marks retryable (botocore's ModeledRetryableChecker).
_TRANSIENT = frozenset({"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete",
                        "ReplicatedWriteConflictException"})
_TRANSIENT_STATUS = frozenset({500, 502, 503, 504})
_TARGET = "DynamoDB_20120810."
#: The store's botocore client's timeouts (``DynamoStore.client``), seconds.
CONNECT_TIMEOUT, READ_TIMEOUT = 2.0, 10.0
#: Regions of the ``aws`` partition (``dynamodb.<region>.amazonaws.com``); China, GovCloud and the
#: isolated partitions have other endpoints and fall back to botocore.
_AWS_REGION = re.compile(r"^(?!us-gov-)(us|eu|ap|sa|ca|me|af|il|mx)-[a-z]+-\d+$")
_PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
#: Profile settings this transport does not apply (botocore's config file); any of them falls back.
_PROFILE_SETTINGS = ("use_fips_endpoint", "use_dualstack_endpoint", "ca_bundle", "endpoint_url", "services",
                     "account_id_endpoint_mode", "sso_session", "sso_start_url", "sso_account_id", "login_session")

_log = logging.getLogger("retrysafe")


def selected_transport(region: str | None, environ: Mapping[str, str] | None = None) -> CrtTransport | None:
    """The store's own client when ``RETRYSAFE_TRANSPORT`` selects ``crt`` and it handles this configuration;
    ``None`` for botocore's (the default, and every fallback, logged once with its reason)."""
    env = os.environ if environ is None else environ
    choice = env.get(names.TRANSPORT_ENV, BOTOCORE).strip().lower() or BOTOCORE
    if choice not in (BOTOCORE, CRT):
        raise ConfigurationError(f"{names.TRANSPORT_ENV} must be {BOTOCORE!r} or {CRT!r}")
    if choice == BOTOCORE:
        return None
    region = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    reason = unsupported(region, env)
    if reason is None:
        try:
            import awscrt  # noqa: F401
        except ImportError:
            reason = "awscrt is not installed (the retrysafe[crt] extra)"
    if reason is not None:
        _log.warning("%s=crt: using botocore instead: %s", names.TRANSPORT_ENV, reason)
        return None
    assert region is not None  # unsupported() refuses a missing region
    return CrtTransport(region, _endpoint(env))


def unsupported(region: str | None, environ: Mapping[str, str]) -> str | None:
    """Why this transport cannot serve this configuration (a setting's name, never its value), or ``None``."""
    if not region:
        return "no AWS_REGION or AWS_DEFAULT_REGION (botocore reads the region from the config file)"
    if _endpoint(environ) is None and not _AWS_REGION.match(region):
        return f"region {region} is not in the aws partition"
    for name in ("AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"):
        if _true(environ.get(name)):
            return f"{name} is set (FIPS and dual-stack endpoints are botocore's only)"
    if environ.get("AWS_ACCOUNT_ID_ENDPOINT_MODE", "").strip().lower() == "required":
        return "AWS_ACCOUNT_ID_ENDPOINT_MODE is required (account-based endpoints are botocore's only)"
    for name in _PROXIES:
        if environ.get(name):
            return f"{name} is set (proxies are botocore's only)"
    if environ.get("AWS_CA_BUNDLE"):
        return "AWS_CA_BUNDLE is set (custom CA bundles are botocore's only)"
    for name in _endpoint_variables(environ):
        url = urlsplit(environ[name])
        if url.scheme not in ("http", "https") or not url.hostname or url.path not in ("", "/") or url.query \
                or url.username or url.password:
            return f"{name} is not a plain http(s)://host[:port] endpoint"
    return _profile_setting(environ)


def _endpoint_variables(environ: Mapping[str, str]) -> list[str]:
    """The endpoint URL variables botocore applies to DynamoDB, the service's own first."""
    if _true(environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")):
        return []
    return [name for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL") if environ.get(name)]


def _endpoint(environ: Mapping[str, str]) -> str | None:
    variables = _endpoint_variables(environ)
    return environ[variables[0]] if variables else None


def _profile_setting(environ: Mapping[str, str]) -> str | None:
    """The first setting of the active profile in the shared config file this transport would ignore."""
    path = environ.get("AWS_CONFIG_FILE") or os.path.join(os.path.expanduser("~"), ".aws", "config")
    if not os.path.isfile(path):
        return None
    profile = environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"
    parser = configparser.RawConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return "the shared config file does not parse"
    section = "default" if profile == "default" else f"profile {profile}"
    if not parser.has_section(section):
        return None
    for setting in _PROFILE_SETTINGS:
        value = parser.get(section, setting, fallback=None)
        if value is not None and (setting not in _PROFILE_SETTINGS[:2] or _true(value)):
            return f"profile setting {setting} (botocore's only)"
    return None


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


class CrtTransport:
    """The :class:`~retrysafe._transport.DynamoTransport` on awscrt (see the module's documentation).

    ``endpoint``: ``http(s)://host[:port]`` (the regional endpoint by default); ``credentials``: an
    ``awscrt.auth.AwsCredentialsProvider`` (awscrt's default chain by default); ``max_attempts``:
    total attempts per call; ``read_timeout``: seconds to wait for an answer; ``quota`` and ``sleep``:
    the retry quota and the backoff's sleep (tests make both unlimited and instant). Every attempt goes through :attr:`attempts`.
    """

    def __init__(self, region_name: str, endpoint: str | None = None, *, credentials: Any = None,
                 max_attempts: int = MAX_ATTEMPTS, quota: int = QUOTA, read_timeout: float = READ_TIMEOUT,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        from awscrt import io

        self.region_name = region_name
        self.endpoint = endpoint or f"https://dynamodb.{region_name}.amazonaws.com"
        url = urlsplit(self.endpoint)
        self._https = url.scheme == "https"
        self._host = url.hostname or ""
        self._port = url.port or (443 if self._https else 80)
        self._authority = url.netloc
        self._bootstrap = io.ClientBootstrap.get_or_create_static_default()
        self._tls: Any = None
        self._credentials = credentials
        self._config: Any = None
        self.max_attempts = max_attempts
        self._capacity = self._quota = quota
        self._sleep = sleep
        self._read_timeout = read_timeout
        self._idle: list[Any] = []  # kept-alive connections, one per concurrent caller at most
        self._lock = threading.Lock()
        self.attempts = Attempts()

    @property
    def retry_quota(self) -> int:
        """The retry tokens this transport has left (botocore keeps the same count per client)."""
        return self._quota

    # -- the operations ------------------------------------------------------------------
    def describe_table(self, **params: Any) -> dict[str, Any]:
        """``DescribeTable``."""
        return self._call("DescribeTable", params)

    def get_item(self, **params: Any) -> dict[str, Any]:
        """``GetItem``."""
        return self._call("GetItem", params)

    def put_item(self, **params: Any) -> dict[str, Any]:
        """``PutItem``."""
        return self._call("PutItem", params)

    def update_item(self, **params: Any) -> dict[str, Any]:
        """``UpdateItem``."""
        return self._call("UpdateItem", params)

    def delete_item(self, **params: Any) -> dict[str, Any]:
        """``DeleteItem``."""
        return self._call("DeleteItem", params)

    def transact_write_items(self, **params: Any) -> dict[str, Any]:
        """``TransactWriteItems``; without a ``ClientRequestToken`` one is generated (botocore's
        ``idempotencyToken``), the same for every attempt."""
        if "ClientRequestToken" not in params:
            params["ClientRequestToken"] = str(uuid.uuid4())
        return self._call("TransactWriteItems", params)

    def query(self, **params: Any) -> dict[str, Any]:
        """``Query``."""
        return self._call("Query", params)

    def scan(self, **params: Any) -> dict[str, Any]:
        """``Scan``."""
        return self._call("Scan", params)

    def close(self) -> None:
        """Close the kept-alive connections and forget the credentials read (before a SnapStart snapshot and
        after each restore: the restored environment reads its own)."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._config = None
        for connection in idle:
            connection.close()

    # -- retries -------------------------------------------------------------------------
    def _call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        from botocore.exceptions import ChecksumError, ClientError, ConnectionError, HTTPClientError

        body = json.dumps(params, separators=(",", ":"), default=_base64).encode()
        attempt, taken = 0, 0
        while True:
            attempt += 1
            failed: Exception | None = None
            throttled = False
            try:
                reply, headers = self._attempt(operation, params, body)
            except (ConnectionError, HTTPClientError) as lost:  # botocore's transient exception classes
                failed = lost
            else:
                expected = headers.get("x-amz-crc32")
                actual = zlib.crc32(reply.body)
                parsed = _json(reply.body)
                if expected is not None and actual != int(expected):
                    failed = ChecksumError(checksum_type="crc32", expected_checksum=expected,
                                           actual_checksum=str(actual))
                elif reply.ok and parsed is not None:
                    with self._lock:
                        self._quota = min(self._capacity, self._quota + (taken or 1))
                    answer: dict[str, Any] = _decode(parsed)
                    answer["ResponseMetadata"] = _metadata(reply.status, headers, attempt - 1)
                    return answer
                else:
                    response = _error(reply.status, headers, parsed or {}, attempt - 1)
                    failed = ClientError(response, operation)
                    code = response["Error"]["Code"]
                    throttled = code in _THROTTLING or reply.status == 429
                    if not (throttled or code in _TRANSIENT or reply.status in _TRANSIENT_STATUS):
                        raise failed
            assert failed is not None
            taken = THROTTLED_COST if throttled else RETRY_COST
            with self._lock:  # one quota for every thread of the process, as botocore's client has
                granted = attempt < self.max_attempts and self._quota >= taken
                if granted:
                    self._quota -= taken
            if not granted:
                raise failed
            scale = THROTTLED_SCALE if throttled else TRANSIENT_SCALE
            self._sleep(random.random() * min(scale * 2.0 ** (attempt - 1), MAX_BACKOFF))

    def _attempt(self, operation: str, params: dict[str, Any], body: bytes) -> tuple[Reply, dict[str, str]]:
        """One attempt through :attr:`attempts`: the reply and, when it came from the wire, its headers."""
        sent: list[tuple[Reply, dict[str, str]]] = []

        def send() -> Reply:
            status, headers, raw = self._send(operation, body)
            reply = Reply(status, raw)
            sent.append((reply, headers))
            return reply

        reply = send() if self.attempts.idle else self.attempts.send(operation, params, send)
        return reply, next((headers for each, headers in sent if each is reply), {})  # {}: answered at the seam

    # -- the wire ------------------------------------------------------------------------
    def signed_request(self, operation: str, body: bytes, date: Any = None) -> Any:
        """The signed ``awscrt.http.HttpRequest`` of one attempt (``date``: the signing time, now by default)."""
        from awscrt import auth, http

        headers = http.HttpHeaders([("Host", self._authority), ("Content-Type", "application/x-amz-json-1.0"),
                                    ("X-Amz-Target", _TARGET + operation), ("Content-Length", str(len(body)))])
        request = http.HttpRequest("POST", "/", headers, BytesIO(body))
        config = self._signing_config()
        if date is not None:
            config = config.replace(date=date)
        return auth.aws_sign_request(request, config).result()

    def _signing_config(self) -> Any:
        from awscrt import auth

        config = self._config
        if config is None:
            provider = self._credentials or auth.AwsCredentialsProvider.new_default_chain(self._bootstrap)
            config = self._config = auth.AwsSigningConfig(
                algorithm=auth.AwsSigningAlgorithm.V4, signature_type=auth.AwsSignatureType.HTTP_REQUEST_HEADERS,
                credentials_provider=provider, region=self.region_name, service="dynamodb")
        return config

    def _send(self, operation: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """One attempt on the wire: (status, lower-cased headers, body); botocore's exceptions when lost."""
        from awscrt.exceptions import AwsCrtError
        from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

        request = self.signed_request(operation, body)
        connection = self._connection()
        chunks: list[bytes] = []
        answered: dict[str, str] = {}

        def on_response(status_code: int, headers: list[tuple[str, str]], **_: Any) -> None:
            answered.update((name.lower(), value) for name, value in headers)

        try:
            stream = connection.request(request, on_response=on_response,
                                        on_body=lambda chunk, **_: chunks.append(chunk))
            stream.activate()
            status: int = stream.completion_future.result(self._read_timeout)
        except TimeoutError:
            connection.close()  # the retry goes on a new connection, as botocore's does
            raise ReadTimeoutError(endpoint_url=self.endpoint) from None
        except AwsCrtError as error:
            connection.close()
            raise ConnectionClosedError(endpoint_url=self.endpoint) from error
        with self._lock:
            self._idle.append(connection)
        return status, answered, b"".join(chunks)

    def _connection(self) -> Any:
        """A kept-alive connection nobody else is using, or a new one."""
        from awscrt import http, io
        from awscrt.exceptions import AwsCrtError
        from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                if connection.is_open():
                    return connection
        if self._https and self._tls is None:
            self._tls = io.ClientTlsContext(io.TlsContextOptions())
        tls = None
        if self._https:
            tls = self._tls.new_connection_options()
            tls.set_server_name(self._host)
        options = io.SocketOptions()
        # IPv4: the regional endpoints (dual-stack ones fall back to botocore).
        options.domain, options.keep_alive = io.SocketDomain.IPv4, True
        options.connect_timeout_ms = int(CONNECT_TIMEOUT * 1000)
        try:
            return http.HttpClientConnection.new(
                host_name=self._host, port=self._port, bootstrap=self._bootstrap, tls_connection_options=tls,
                socket_options=options).result(CONNECT_TIMEOUT + 1)
        except TimeoutError:
            raise ConnectTimeoutError(endpoint_url=self.endpoint) from None
        except AwsCrtError as error:
            raise EndpointConnectionError(endpoint_url=self.endpoint) from error


def _json(raw: bytes) -> dict[str, Any] | None:
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _metadata(status: int, headers: dict[str, str], retries: int) -> dict[str, Any]:
    return {"RequestId": headers.get("x-amzn-requestid", ""), "HTTPStatusCode": status, "HTTPHeaders": headers,
            "RetryAttempts": retries}


def _error(status: int, headers: dict[str, str], parsed: dict[str, Any], retries: int) -> dict[str, Any]:
    """botocore's ``ClientError.response`` of a JSON-protocol error (``Item``, ``CancellationReasons`` decoded)."""
    code = str(parsed.get("__type") or headers.get("x-amzn-errortype", "").split(":")[0] or status)
    response: dict[str, Any] = _decode({k: v for k, v in parsed.items() if k not in ("__type", "message", "Message")})
    response["Error"] = {"Code": code.rsplit("#", 1)[-1], "Message": parsed.get("message", parsed.get("Message", ""))}
    response["ResponseMetadata"] = _metadata(status, headers, retries)
    return response


def _base64(value: Any) -> str:
    """DynamoDB's JSON for ``bytes`` (``B``, ``BS``): base64; ``json.dumps`` calls this for nothing else."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not a DynamoDB JSON value")


def _decode(value: Any) -> Any:
    """An answer as botocore parses it: every ``B``/``BS`` attribute value back to ``bytes``."""
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
