"""The seam between the store and DynamoDB: the operations retrysafe sends, in botocore's shapes.

:class:`DynamoTransport` is everything the runtime asks of DynamoDB (the store's record
operations, the outbox publisher's marks, the outbox index's queries, the ordered writes of
:mod:`retrysafe._ordering`, the command line's reads, deletes and scans). Requests and answers are botocore's: keyword parameters as the
DynamoDB API names them, low-level DynamoDB JSON (``{"S": ...}``) in and out. A service error is
botocore's ``ClientError`` with its parsed ``response`` (``Error.Code``, ``Error.Message``, the
modeled fields: ``Item`` of a failed condition, ``CancellationReasons`` of a cancelled
transaction); an answer that never came, after the transport's retries, is botocore's
connection or timeout error (a ``BotoCoreError``). A transport retries as botocore's standard
mode does, resending the same request (a transaction keeps its ``ClientRequestToken``).

botocore's DynamoDB client is one already, method for method, so the default transport is that
client itself: nothing stands between the store and botocore on the hot path.

Under the operations is one more seam, for tests: :class:`Attempts`, what happens to each
*attempt* a transport sends (faults, a scheduler's gate, DynamoDB's semantics in front of
moto). It sits under the transport's retries because what a fault drill must reproduce is the
transport's own retry of a request DynamoDB already applied. A transport that is not botocore's
client carries its own :class:`Attempts` (attribute ``attempts``) and sends every attempt
through :meth:`Attempts.send`; botocore's client gets one from ``retrysafe.testing`` through its
``before-send`` event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol


class DynamoTransport(Protocol):
    """The DynamoDB operations retrysafe uses (botocore's DynamoDB client is the default implementation)."""

    def describe_table(self, **params: Any) -> dict[str, Any]:
        """``DescribeTable`` (the opt-in check of the table at cold start)."""

    def get_item(self, **params: Any) -> dict[str, Any]:
        """``GetItem`` (a consistent read of a record)."""

    def put_item(self, **params: Any) -> dict[str, Any]:
        """``PutItem`` (claims, lone completions, ordered writes)."""

    def update_item(self, **params: Any) -> dict[str, Any]:
        """``UpdateItem`` (takeovers, ended leases, outbox marks, ordered updates)."""

    def delete_item(self, **params: Any) -> dict[str, Any]:
        """``DeleteItem`` (a released claim)."""

    def transact_write_items(self, **params: Any) -> dict[str, Any]:
        """``TransactWriteItems`` (commits and checkpoints with the business writes)."""

    def query(self, **params: Any) -> dict[str, Any]:
        """``Query`` (the outbox index)."""

    def scan(self, **params: Any) -> dict[str, Any]:
        """``Scan`` (the operator's command line listing records)."""

    def close(self) -> None:
        """Close pooled connections (before a SnapStart snapshot and after each restore)."""


def region_of(transport: Any) -> str | None:
    """The region a transport's requests go to: botocore's client names it in ``meta``, other transports
    as ``region_name``."""
    meta = getattr(transport, "meta", None)
    region = getattr(meta, "region_name", None) or getattr(transport, "region_name", None)
    return str(region) if region else None


class Reply(NamedTuple):
    """One attempt's answer as it came over the wire: HTTP status and the JSON body (DynamoDB's protocol)."""

    status: int
    body: bytes

    @property
    def ok(self) -> bool:
        """The service answered success (it applied the request)."""
        return self.status < 300


class Server(Protocol):
    """A layer in front of the service (DynamoDB's semantics in front of moto)."""

    def serve(self, operation: str, params: Mapping[str, Any], send: Callable[[], Reply]) -> tuple[Reply, bool]:
        """Answer one attempt, calling ``send`` to reach the service; returns (reply, applied anything new)."""


class Interceptor(Protocol):
    """Something between the caller and the service, as the network and the Lambda runtime are
    (a fault boundary, a scheduler's gate)."""

    def before_attempt(self, operation: str, params: Mapping[str, Any]) -> Reply | None:
        """Called before each attempt; may raise, or return a reply that answers it without sending."""

    def after_attempt(self, operation: str, params: Mapping[str, Any], reply: Reply, applied: bool) -> None:
        """Called after each attempt the service answered; may raise (the transport then sees that instead:
        botocore's ``ReadTimeoutError`` is a lost answer, which the transport retries)."""


class Attempts:
    """What happens to each attempt of one transport: a :class:`Server` and :class:`Interceptor` s around the send.

    ``params`` are the operation's parameters as sent (a generated ``ClientRequestToken`` included);
    ``operation`` is the API name (``PutItem``).
    """

    def __init__(self) -> None:
        self.server: Server | None = None
        self.interceptors: list[Interceptor] = []

    @property
    def idle(self) -> bool:
        """Nothing is plugged in."""
        return self.server is None and not self.interceptors

    def send(self, operation: str, params: Mapping[str, Any], send: Callable[[], Reply]) -> Reply:
        """One attempt: the interceptors before it, the server (or ``send`` itself), the interceptors after it."""
        for interceptor in list(self.interceptors):
            early = interceptor.before_attempt(operation, params)
            if early is not None:
                return early
        server = self.server
        if server is not None:
            reply, applied = server.serve(operation, params, send)
        else:
            reply = send()
            applied = reply.ok
        for interceptor in list(self.interceptors):
            interceptor.after_attempt(operation, params, reply, applied)
        return reply
