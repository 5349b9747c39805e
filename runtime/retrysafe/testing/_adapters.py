"""How a drill talks to each kind of decorated handler: build a request for an intent, invoke, read the answer.

Every adapter reduces what the handler answered to an :class:`Answer` whose
``kind`` is one of :data:`KINDS`, and compares answers semantically (status,
JSON body, replayed headers; never the ``Idempotent-Replayed`` marker itself).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from retrysafe import names

from .._adapter import Wired
from .._async import is_async
from .._engine import Engine
from .._store import DynamoStore
from ..errors import KeyReuseMismatchError, RequestInFlightError, RetrysafeError
from ..http._core import StoredResponse
from ..names import KEY_MESSAGE_ATTRIBUTE
from ._events import DrillContext, api_event, sqs_record, task_payload

#: executed | replayed | in_flight (409) | mismatch (422, TaskKeyMismatch) | refused (other 4xx problem)
#: | unavailable (503) | failed (reported batch failure, 5xx, exception).
KINDS = ("executed", "replayed", "in_flight", "mismatch", "refused", "unavailable", "failed")

#: A payload for an intent: ``variant`` 0 is the intent's request, any other value a different request.
Payload = Callable[[int], Any]


@dataclass(frozen=True)
class Answer:
    """What one invocation answered, reduced to what a drill compares."""

    kind: str
    #: HTTP status, when there is one.
    status: int | None = None
    #: The semantic content (parsed JSON body, task result...).
    value: Any = None
    #: Replayed headers that matter (``Content-Type``, ``Location``...).
    headers: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """A short plain description, e.g. ``executed (201)``."""
        return self.kind + (f" ({self.status})" if self.status is not None else "")


def _configuration(handler: Any) -> Wired:
    """The configuration a decorated handler carries (``.idempotency``, ``.consumer``, ``.task``), or the
    receiver or middleware itself."""
    for name in ("idempotency", "consumer", "task"):
        found = getattr(handler, name, None)
        if isinstance(found, Wired):
            return found
    if isinstance(handler, Wired):
        return handler
    raise TypeError(f"{handler!r} is not a retrysafe handler: decorate it with idempotent, idempotent_function, "
                    "idempotent_http, idempotent_sqs, idempotent_kinesis, idempotent_dynamodb_stream "
                    "or idempotent_task, or pass a WebhookReceiver or an IdempotencyMiddleware")


def engine_of(handler: Any) -> Engine:
    """The :class:`~retrysafe.Engine` behind a decorated handler, a webhook receiver or an HTTP middleware.

    The first look makes it (as the handler's first call would: ``RETRYSAFE_TABLE`` is read then).
    """
    return _configuration(handler).engine


@contextmanager
def use_store(handler: Any, store: DynamoStore | Engine) -> Iterator[Engine]:
    """Inside the block, ``handler`` keeps its records (and commits its writes) through ``store``.

    ``handler``: anything :func:`engine_of` takes, already decorated (with or without ``store=``).
    ``store``: a :class:`~retrysafe.DynamoStore` on a test table or a client of your own (moto,
    DynamoDB local), or an :class:`~retrysafe.Engine` (e.g. with a clock of its own). Yields the
    engine now in use; on leaving, the handler's own engine is back (made again at the next call if
    it had not been made yet). A Powertools cut-over is made again on the new store's client.
    Not thread-safe: swap stores between tests, not while the handler runs.
    """
    configuration = _configuration(handler)
    engine = store if isinstance(store, Engine) else Engine(store)
    # The engine and cut-over are cached properties (Wired): their made values live in the instance's dict
    made = vars(configuration)
    saved: dict[str, Any] = {name: made.pop(name) for name in ("engine", "cutover") if name in made}
    made["engine"] = engine
    try:
        yield engine
    finally:
        made.pop("engine", None)
        made.pop("cutover", None)
        made.update(saved)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class HttpAdapter:
    """An ``@idempotent_http`` handler (or a webhook receiver) behind API Gateway."""

    name = "HTTP"

    def __init__(self, handler: Callable[[Any, Any], Any], payload: Payload, *, header: str = names.IDEMPOTENCY_KEY_HEADER,
                 route: str = "/orders", method: str = "POST", tenant: str | None = "tenant-a",
                 version: str = "2.0") -> None:
        self.handler, self.payload, self.header = handler, payload, header
        self.route, self.method, self.tenant, self.version = route, method, tenant, version
        self.engine = engine_of(handler)

    def request(self, key: str, variant: int = 0) -> Any:
        """An API Gateway event carrying ``key`` and the variant's JSON body."""
        return api_event(json.dumps(self.payload(variant)), headers={"Content-Type": "application/json",
                                                                     self.header: key},
                         tenant=self.tenant, method=self.method, route=self.route, version=self.version)

    def invoke(self, request: Any) -> Answer:
        """Call the Lambda handler and classify its proxy response."""
        return classify_http(self.handler(request, DrillContext()))

    def from_result(self, result: Any) -> Answer:
        """The answer a stored result replays as."""
        stored = StoredResponse.from_result(result)
        return classify_http({"statusCode": stored.status, "headers": stored.headers, "body": stored.body})


def classify_http(response: Any) -> Answer:
    """Reduce a proxy response to an :class:`Answer`."""
    status = int(response["statusCode"])
    raw_headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
    lowered = {k.lower(): v for k, v in raw_headers.items()}
    problem = lowered.get("content-type") == "application/problem+json"
    if lowered.get(names.REPLAYED_HEADER.lower()) == "true":
        kind = "replayed"
    elif problem and status == 409 and _problem_type(response).endswith(("request-in-progress", "superseded")):
        kind = "in_flight"
    elif problem and status == 422:
        kind = "mismatch"
    elif problem and status == 503:
        kind = "unavailable"
    elif status >= 500:
        kind = "failed"
    elif problem and 400 <= status < 500:
        kind = "refused"
    else:
        kind = "executed"
    headers = tuple(sorted((k, v) for k, v in lowered.items() if k in ("content-type", "location")))
    return Answer(kind, status, _json(str(response.get("body") or "")), headers)


def _problem_type(response: Any) -> str:
    doc = _json(str(response.get("body") or ""))
    return str(doc.get("type", "")) if isinstance(doc, dict) else ""


class WebhookAdapter(HttpAdapter):
    """A :class:`~retrysafe.webhook.WebhookReceiver`; deliveries are signed with its first secret."""

    name = "webhook"

    def __init__(self, receiver: Any, payload: Payload, *, route: str = "/hooks") -> None:
        super().__init__(receiver, payload, route=route, tenant=None)
        self.receiver = receiver

    @property
    def identity_is_body(self) -> bool:
        """The provider signs only the body (GitHub, generic HMAC): the delivery id is unsigned metadata."""
        return "delivery_id" in getattr(self.receiver.provider, "unsigned", ())

    def request(self, key: str, variant: int = 0, *, delivery: str | None = None) -> Any:
        """A signed delivery whose delivery id is ``key`` (or ``delivery``: the same body under another id).

        When the provider signs only the body (its delivery id is unsigned), the
        body is the payload plus ``"delivery": key``, so that each key is its own
        signed delivery, as each real delivery's body differs.
        """
        payload = self.payload(variant)
        if self.identity_is_body and isinstance(payload, dict):
            payload = {**payload, "delivery": key}
        body = json.dumps(payload)
        headers = {"Content-Type": "application/json", **sign(self.receiver.provider, self.receiver.secrets()[0],
                                                              body.encode(), delivery or key)}
        return api_event(body, headers=headers, tenant=None, route=self.route, version=self.version)


def sign(provider: Any, secret: bytes, body: bytes, delivery: str) -> dict[str, str]:
    """Headers of a correctly signed delivery for the GitHub, Stripe, Standard Webhooks or generic HMAC provider."""
    kind = type(provider).__name__
    if kind == "GitHub":
        return {"X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
                "X-GitHub-Delivery": delivery, "X-GitHub-Hook-ID": "drill-hook", "X-GitHub-Event": "push"}
    if kind == "Stripe":
        stamp = str(int(time.time()))
        digest = hmac.new(secret, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        return {provider.header: f"t={stamp},v1={digest}"}
    if kind == "GenericHmac":
        digest = hmac.new(secret, body, hashlib.sha256).hexdigest()
        return {provider.signature_header: provider.prefix + digest, provider.delivery_header: delivery}
    if kind == "StandardWebhooks":
        from ..webhook import standard_secret

        stamp = str(int(time.time()))
        signed = delivery.encode() + b"." + stamp.encode() + b"." + body
        digest = base64.b64encode(hmac.new(standard_secret(secret), signed, hashlib.sha256).digest()).decode()
        return {"webhook-id": delivery, "webhook-timestamp": stamp, "webhook-signature": "v1," + digest}
    raise TypeError(f"no drill signer for webhook provider {kind}; use GitHub, Stripe, StandardWebhooks or "
                    "GenericHmac")


class SqsAdapter:
    """An ``@idempotent_sqs`` consumer; each invocation processes one message keyed by ``idempotency-key``.

    The message goes through the consumer's per-record path (what Powertools'
    batch processor calls); an exception is what the batch would report in
    ``batchItemFailures``, and it is classified by its type.
    """

    name = "SQS"

    def __init__(self, handler: Callable[[Any, Any], Any], payload: Payload, *, receive_count: int = 1) -> None:
        self.handler, self.payload = handler, payload
        self.consumer = handler.consumer  # type: ignore[attr-defined]
        self.engine = engine_of(handler)
        self.receive_count = receive_count

    def request(self, key: str, variant: int = 0) -> Any:
        """A Lambda SQS event with one message whose propagated key is ``key`` (received ``receive_count`` times)."""
        return {"Records": [sqs_record(self.payload(variant), attributes={KEY_MESSAGE_ATTRIBUTE: key},
                                       receive_count=self.receive_count)]}

    def invoke(self, request: Any) -> Answer:
        """Process the message; an acknowledged message is ``executed`` (a consumer answers nothing else)."""
        from aws_lambda_powertools.utilities.data_classes import SQSRecord

        try:
            self.consumer.process(SQSRecord(request["Records"][0]), DrillContext())
        except RequestInFlightError:
            return Answer("in_flight")
        except KeyReuseMismatchError:
            return Answer("mismatch")
        except Exception as error:  # noqa: BLE001 - reported as a batch item failure, like the batch processor
            return Answer("failed", value=f"{type(error).__name__}: {error}")
        return Answer("executed")

    def from_result(self, result: Any) -> Answer:
        """A consumer's answer is its acknowledgement."""
        return Answer("executed")


class TaskAdapter:
    """An ``@idempotent_task`` Step Functions task; the key is the execution id."""

    name = "workflow task"

    def __init__(self, handler: Callable[[Any, Any], Any], payload: Payload, *, state: str = "Task") -> None:
        self.handler, self.payload, self.state = handler, payload, state
        self.engine = engine_of(handler)

    def request(self, key: str, variant: int = 0) -> Any:
        """The state machine's payload for execution ``key``."""
        return task_payload(self.payload(variant), execution=key, state=self.state)

    def invoke(self, request: Any) -> Answer:
        """Invoke; the errors Step Functions would see become answer kinds."""
        try:
            return Answer("executed", value=self.handler(request, DrillContext()))
        except RequestInFlightError:
            return Answer("in_flight")
        except KeyReuseMismatchError:
            return Answer("mismatch")
        except RetrysafeError as error:  # a named error the state machine's Retry/Catch sees
            return Answer("failed", value=f"{type(error).__name__}: {error}")

    def from_result(self, result: Any) -> Answer:
        """The stored result is what every retry returns."""
        return Answer("executed", value=result)


def _classify_error(error: Exception) -> Answer:
    """The answer kind of a named error an invocation raised (the caller's retry policy sees it)."""
    if isinstance(error, RequestInFlightError):
        return Answer("in_flight")
    if isinstance(error, KeyReuseMismatchError):
        return Answer("mismatch")
    return Answer("failed", value=f"{type(error).__name__}: {error}")


def _eventbridge(key: str, detail: Any) -> dict[str, Any]:
    return {"version": "0", "id": key, "detail-type": "DrillEvent", "source": "retrysafe.drills",
            "account": "123456789012", "time": "2026-12-01T00:00:00Z", "region": "eu-west-1", "resources": [],
            "detail": detail}


class EventAdapter:
    """An ``@idempotent`` Lambda handler; each request is an event for the intent ``key``.

    ``event(key, payload)`` builds the event; default an EventBridge event whose ``id``
    (the natural key) is ``key`` and whose ``detail`` is the payload. A handler keyed
    on a business id (``key="detail.order_id"``) passes an ``event`` that puts ``key`` there.
    """

    name = "event"

    def __init__(self, handler: Callable[[Any, Any], Any], payload: Payload, *,
                 event: Callable[[str, Any], Any] = _eventbridge) -> None:
        self.handler, self.payload, self.event = handler, payload, event
        self.idempotency = handler.idempotency  # type: ignore[attr-defined]
        self.engine = engine_of(handler)

    def request(self, key: str, variant: int = 0) -> Any:
        """The event of intent ``key`` (another payload when ``variant`` is not 0)."""
        return self.event(key, self.payload(variant))

    def invoke(self, request: Any) -> Answer:
        """Invoke; a named error is what the event source's retries (and the DLQ) see."""
        try:
            return Answer("executed", value=self.handler(request, DrillContext()))
        except RetrysafeError as error:
            return _classify_error(error)

    def from_result(self, result: Any) -> Answer:
        """The stored result, as a replay returns it."""
        return Answer("executed", value=self.idempotency.serializer.load(result))


class FunctionAdapter:
    """An ``@idempotent_function``; each request calls it with the argument of intent ``key`` (an ``async def``'s
    is awaited on a loop of its own, as an async caller would).

    ``argument(key, payload)`` builds the ``data_keyword_argument``; default
    ``{"id": key, **payload}`` (decorate with ``key="id"``).
    """

    name = "function"

    def __init__(self, function: Callable[..., Any], payload: Payload, *,
                 argument: Callable[[str, Any], Any] = lambda key, payload: {"id": key, **payload}) -> None:
        self.function, self.payload, self.argument = function, payload, argument
        self.idempotency = function.idempotency  # type: ignore[attr-defined]
        self.engine = engine_of(function)

    def request(self, key: str, variant: int = 0) -> Any:
        """The keyword arguments of the call of intent ``key``."""
        return {self.idempotency.argument: self.argument(key, self.payload(variant))}

    def invoke(self, request: Any) -> Answer:
        """Call the function; its named errors become answer kinds."""
        try:
            if is_async(self.function):  # an async def's wrapper: awaited, as its caller would
                import asyncio

                return Answer("executed", value=asyncio.run(self.function(**request)))
            return Answer("executed", value=self.function(**request))
        except RetrysafeError as error:
            return _classify_error(error)

    def from_result(self, result: Any) -> Answer:
        """The stored result, as a replay returns it."""
        return Answer("executed", value=self.idempotency.serializer.load(result))
