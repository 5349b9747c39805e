"""Exceptions raised by the retrysafe runtime.

Each error maps to one row of the idempotency contract; the HTTP adapter turns
them into ``application/problem+json`` responses (see :mod:`retrysafe.http.problem`).
"""

from __future__ import annotations


class RetrysafeError(Exception):
    """Base class of every retrysafe error."""


class ConfigurationError(RetrysafeError):
    """The runtime is misconfigured (missing table, bad environment value...).

    Raised at cold start where possible, so a bad deployment fails loudly
    instead of answering requests without idempotency.
    """


class InvalidKeyError(RetrysafeError):
    """The idempotency key is missing where required, empty, too long or has bad characters."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class TenantRequiredError(RetrysafeError):
    """No authenticated tenant could be found on a request that requires one."""


class KeyReuseMismatchError(RetrysafeError):
    """The key was already used with a different request fingerprint (contract: 422)."""


class RequestInFlightError(RetrysafeError):
    """Another invocation holds the lease on this key (contract: 409 with Retry-After)."""

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(f"a request with this key is still in progress; retry after {retry_after_seconds}s")
        self.retry_after_seconds = retry_after_seconds


class FencingError(RetrysafeError):
    """This invocation lost its claim (lease expired and another owner took over).

    A zombie can neither complete, checkpoint nor release the record of the
    owner that replaced it; its buffered writes are discarded.
    """


class TransactionTooLargeError(RetrysafeError):
    """The transaction would exceed DynamoDB's limits (100 actions, 4 MB, 400 KB per item)."""


class EventTooLargeError(TransactionTooLargeError):
    """An outbox event cannot fit one message of the configured target; refused when appended, nothing committed."""


class ResponseTooLargeError(TransactionTooLargeError):
    """The result to store cannot fit one DynamoDB item, even compressed."""


class BusinessConditionFailedError(RetrysafeError):
    """A condition the handler put on one of its own writes failed; nothing was committed.

    ``index`` is the position of the failing action among the handler's actions
    and ``item`` the current item when DynamoDB returned it.
    """

    def __init__(self, index: int, item: dict[str, object] | None) -> None:
        super().__init__(f"condition on transaction action #{index} failed; nothing was committed")
        self.index = index
        self.item = item

    @property
    def current(self) -> dict[str, object] | None:
        """The current item as plain Python values (numbers as ``Decimal``), or ``None``."""
        if self.item is None:
            return None
        from boto3.dynamodb.types import TypeDeserializer

        deserializer = TypeDeserializer()
        return {name: deserializer.deserialize(value) for name, value in self.item.items()}


class StoreUnavailableError(RetrysafeError):
    """DynamoDB kept throttling or failing after botocore's retries (contract: 503 with Retry-After)."""

    def __init__(self, message: str, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class InvalidInputError(RetrysafeError):
    """The request or message has no canonical form, so it cannot be fingerprinted; nothing was executed.

    A duplicate JSON object member name, a lone surrogate (``"\\ud800"``: not
    Unicode text), JSON nested too deeply. HTTP answers 400 problem+json, an SQS
    record is reported failed, a Step Functions task raises ``TaskPayloadError``.
    """


class StoreRejectedError(RetrysafeError):
    """DynamoDB refused a request as invalid (contract: 500 problem; a retry cannot cure it).

    A deployment or data-model bug rather than a client's: a business table whose key
    schema does not match the handler's writes, an item collection over its limit, a
    ``ValidationError`` cancellation reason. The message names DynamoDB's reason.
    """


class TransactionRaced(RetrysafeError):
    """DynamoDB cancelled the transaction because another one touched the same items (contract: 409, retry)."""
