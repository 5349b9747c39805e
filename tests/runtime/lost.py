"""Lost responses at the boto3 boundary: DynamoDB (moto) applies a call, the caller sees a read timeout.

:class:`LostResponses` is a botocore ``before-send`` handler registered ahead of moto's own.
It calls moto (the write is applied), then raises ``ReadTimeoutError`` so that botocore's own
retry logic re-sends the same request, exactly what happens when a response is lost on AWS.

moto ignores ``ClientRequestToken``; DynamoDB makes a retried ``TransactWriteItems`` with the
same token idempotent (success, nothing applied twice) for 10 minutes. With ``honour_tokens``
this helper answers such a retry with success without calling moto (and with
``IdempotentParameterMismatchException`` when the parameters differ), so a test can check
the engine under both behaviours. It is not an emulator: everything else is moto's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Match = Callable[[Mapping[str, Any]], bool]


@dataclass
class _Armed:
    operations: frozenset[str]
    match: Match | None
    skip: int
    #: After the lost response, this many further attempts of the same operation fail before they are sent.
    unreachable: int


def _response(url: str, status: int, body: dict[str, Any]) -> Any:
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, **_: Any) -> Any:
            yield b""

    response = AWSResponse(url, status, {"x-amzn-requestid": "lost-responses"}, Raw())
    response._content = json.dumps(body).encode()
    return response


class LostResponses:
    """Lose the response of chosen DynamoDB calls on one client (see the module docstring)."""

    def __init__(self, client: Any, *, honour_tokens: bool) -> None:
        self.client = client
        self.honour_tokens = honour_tokens
        self.lost: list[str] = []
        self.sent: list[str] = []
        self._armed: list[_Armed] = []
        self._tokens: dict[str, bytes] = {}
        self._unreachable: dict[str, int] = {}
        self._injected = False
        from moto.core.models import botocore_stubber

        # botocore runs every before-send handler and uses the first response: moto's own handler
        # would apply each request a second time, so this client reaches moto only through this one.
        client.meta.events.unregister("before-send", botocore_stubber)
        client.meta.events.register_first("before-send.dynamodb", self._before_send)
        client.meta.events.register_first("needs-retry.dynamodb", self._no_backoff)

    def lose(self, *operations: str, match: Match | None = None, skip: int = 0, unreachable: int = 0) -> None:
        """Lose the response of the next call of one of ``operations`` (after ``skip`` matching calls)."""
        self._armed.append(_Armed(frozenset(operations), match, skip, unreachable))

    def _before_send(self, request: Any, event_name: str, **kwargs: Any) -> Any:
        from botocore.exceptions import ReadTimeoutError
        from moto.core.models import botocore_stubber

        operation = event_name.rsplit(".", 1)[-1]
        self.sent.append(operation)
        if self._unreachable.get(operation, 0) > 0:
            self._unreachable[operation] -= 1
            self._injected = True
            raise ReadTimeoutError(endpoint_url=request.url)
        body = request.body or b"{}"
        params = json.loads(body)
        token = params.get("ClientRequestToken")
        if self.honour_tokens and operation == "TransactWriteItems" and token in self._tokens:
            if self._tokens[token] != body:
                return _response(request.url, 400, {
                    "__type": "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException",
                    "message": "token reused with other parameters"})
            return _response(request.url, 200, {})
        response = botocore_stubber(event_name=event_name, request=request, **kwargs)
        applied = response is not None and response.status_code < 300
        if applied and token:
            self._tokens[token] = body
        for armed in self._armed:
            if applied and operation in armed.operations and (armed.match is None or armed.match(params)):
                if armed.skip:
                    armed.skip -= 1
                    continue
                self._armed.remove(armed)
                self.lost.append(operation)
                self._unreachable[operation] = armed.unreachable
                self._injected = True
                raise ReadTimeoutError(endpoint_url=request.url)
        return response

    def _no_backoff(self, attempts: int, caught_exception: Any = None, **_: Any) -> Any:
        """Retry an injected timeout at once while botocore's attempts last (no back-off sleep in tests)."""
        if self._injected and caught_exception is not None:
            self._injected = False
            if attempts < self.client.meta.config.retries.get("total_max_attempts", 1):
                return 0
        return None


def record_write(params: Mapping[str, Any]) -> bool:
    """A call that writes an idempotency record (claim, checkpoint, commit or release)."""
    key = params.get("Key") or params.get("Item") or {}
    if str(key.get("pk", {}).get("S", "")).startswith("idem#"):
        return True
    for item in params.get("TransactItems") or []:
        body = next(iter(item.values()))
        key = body.get("Key") or body.get("Item") or {}
        if str(key.get("pk", {}).get("S", "")).startswith("idem#"):
            return True
    return False


def completes(params: Mapping[str, Any]) -> bool:
    """The transaction that writes a completed record."""
    for item in params.get("TransactItems") or []:
        put = item.get("Put") or {}
        if put.get("Item", {}).get("st", {}).get("S") == "completed":
            return True
    return False


def checkpoints(params: Mapping[str, Any]) -> bool:
    """A transaction that saves a checkpoint."""
    return any("cp" in str(item.get("Update", {}).get("UpdateExpression", "")) for item in params.get("TransactItems") or [])
