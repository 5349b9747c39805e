"""Every exception the retrysafe runtime raises, under one base: :class:`RetrysafeError`.

``except RetrysafeError`` catches anything retrysafe refuses or fails with; the
adapters answer each with the contract's response (HTTP: ``application/problem+json``,
see :mod:`retrysafe.http`; SQS: a batch item failure; Step Functions: the
error's class name as the Lambda ``errorType``). The classes are defined here and
nowhere else, and this module is the one place to import them from.

The hierarchy::

    RetrysafeError
    ├── ConfigurationError            misconfigured deployment (cold start where possible)
    │   └── IdempotencyDisabledError  the unit-test switch set inside Lambda's execution environment
    ├── InvalidKeyError               Idempotency-Key missing or malformed (400)
    │   └── KeyNotFoundError          a key= selector found no key in the event or argument
    ├── TenantRequiredError           no authenticated tenant (401)
    ├── MalformedRequestError         not a usable API Gateway event (400)
    ├── InvalidInputError             no canonical form, cannot be fingerprinted (400)
    ├── KeyReuseMismatchError         key reused with another request (422)
    │   └── TaskKeyMismatch           Step Functions: the state ran with another input
    ├── RequestInFlightError          another invocation holds the key (409, Retry-After)
    │   └── TaskInProgress            Step Functions: retry the state later
    ├── TaskPayloadError              Step Functions payload unusable
    ├── FencingError                  this invocation's claim was taken over
    ├── RecordConflict                a record condition failed (between store and engine)
    ├── BusinessConditionFailedError  a condition on the handler's own write failed (409)
    ├── TransactionRaced              a concurrent transaction touched the same items (409)
    ├── UnstorableResultError         the handler's result cannot be stored (nothing committed)
    ├── TransactionTooLargeError      over DynamoDB's transaction limits
    │   ├── EventTooLargeError        an outbox event cannot fit its target
    │   ├── ResponseTooLargeError     the result cannot fit one item
    │   └── PayloadTooLargeError      a webhook delivery no path can carry (413)
    ├── StoreError                    a store call failed; ``code`` is the AWS error code
    │   ├── StoreUnavailableError     DynamoDB throttled or unavailable (503, Retry-After)
    │   ├── StoreRejectedError        DynamoDB refused a request as invalid (500)
    │   └── StoreAccessError          no such table, or no permission to use it (also a ConfigurationError)
    ├── SignatureError                webhook signature missing or wrong (401)
    ├── ShardHaltedError              a stream record not run: an earlier one of its shard failed
    ├── ClaimCheckError               a claim-checked S3 object is missing or altered
    ├── UnreadableOutboxRecordError   an outbox stream record cannot be read
    └── SweepIncompleteError          the outbox sweeper left refused events for its next run
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._record import Record

__all__ = [
    "BusinessConditionFailedError",
    "ClaimCheckError",
    "ConfigurationError",
    "EventTooLargeError",
    "FencingError",
    "IdempotencyDisabledError",
    "InvalidInputError",
    "InvalidKeyError",
    "KeyNotFoundError",
    "KeyReuseMismatchError",
    "MalformedRequestError",
    "PayloadTooLargeError",
    "RecordConflict",
    "RequestInFlightError",
    "ResponseTooLargeError",
    "RetrysafeError",
    "ShardHaltedError",
    "SignatureError",
    "StoreAccessError",
    "StoreError",
    "StoreRejectedError",
    "StoreUnavailableError",
    "SweepIncompleteError",
    "TaskInProgress",
    "TaskKeyMismatch",
    "TaskPayloadError",
    "TenantRequiredError",
    "TransactionRaced",
    "TransactionTooLargeError",
    "UnreadableOutboxRecordError",
    "UnstorableResultError",
]


class RetrysafeError(Exception):
    """Base class of every retrysafe error."""


class ConfigurationError(RetrysafeError):
    """The runtime is misconfigured (missing table, bad environment value...).

    Raised at cold start where possible, so a bad deployment fails loudly
    instead of answering requests without idempotency.
    """


class IdempotencyDisabledError(ConfigurationError):
    """``RETRYSAFE_IDEMPOTENCY_DISABLED`` is set inside Lambda's execution environment.

    The switch is for unit tests that do not test idempotency; a deployed function must never run
    without it, so the function fails at cold start instead.
    """


class InvalidKeyError(RetrysafeError):
    """The idempotency key is missing where required, empty, too long or has bad characters."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class KeyNotFoundError(InvalidKeyError):
    """A ``key=`` selector found no key in the event or the function's argument; nothing was executed."""

    def __init__(self, message: str) -> None:
        super().__init__(message, missing=True)


class TenantRequiredError(RetrysafeError):
    """No authenticated tenant could be found on a request that requires one."""


class MalformedRequestError(RetrysafeError):
    """The event is not a usable API Gateway request (bad base64 body, missing method...)."""


class KeyReuseMismatchError(RetrysafeError):
    """The key was already used with a different request fingerprint (contract: 422)."""


class TaskKeyMismatch(KeyReuseMismatchError):
    """This execution's state already ran with a different input; nothing was executed (do not retry)."""


class RequestInFlightError(RetrysafeError):
    """Another invocation holds the lease on this key (contract: 409 with Retry-After)."""

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(f"a request with this key is still in progress; retry after {retry_after_seconds}s")
        self.retry_after_seconds = retry_after_seconds


class TaskInProgress(RequestInFlightError):
    """Another invocation of this execution's state holds the claim; Step Functions should retry later."""


class TaskPayloadError(RetrysafeError):
    """The task payload lacks the execution id or state name from the context object, or its input has
    no canonical form (a lone surrogate, NaN): do not retry."""


class FencingError(RetrysafeError):
    """This invocation lost its claim (lease expired and another owner took over).

    A zombie can neither complete, checkpoint nor release the record of the
    owner that replaced it; its buffered writes are discarded.
    """


class RecordConflict(RetrysafeError):
    """The idempotency record's condition failed; ``current`` is the record DynamoDB returned (ALL_OLD).

    Raised by :class:`~retrysafe._store.DynamoStore` and resolved by the engine
    (replay, mismatch, in flight); it never reaches a handler's caller.
    """

    def __init__(self, current: Record | None) -> None:
        super().__init__("idempotency record condition failed")
        self.current = current


class UnstorableResultError(RetrysafeError):
    """The handler's result cannot be stored (a type no serializer knows); nothing of its run was committed.

    Raised when the handler returns, before any commit. In atomic mode nothing was
    written: a retry runs the handler again. In claim-first mode (the handler may
    have made foreign calls) the claim is *parked*: the record keeps the key until
    it expires, and every retry of the intent raises this error again without
    running the handler, so a foreign call made without ``txn.derive_key`` is
    never repeated. See :mod:`retrysafe._tagged` for what can be stored.
    """


class TransactionTooLargeError(RetrysafeError):
    """The transaction would exceed DynamoDB's limits (100 actions, 4 MB, 400 KB per item)."""


class EventTooLargeError(TransactionTooLargeError):
    """An outbox event cannot fit one message of the configured target; refused when appended, nothing committed."""


class ResponseTooLargeError(TransactionTooLargeError):
    """The result to store cannot fit one DynamoDB item, even compressed."""


class PayloadTooLargeError(TransactionTooLargeError):
    """No configured path can carry the webhook delivery (answered 413 before anything is written)."""


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


class StoreError(RetrysafeError):
    """A call to the store failed: the one base of every store failure (Powertools' persistence errors).

    ``code`` is the AWS error code DynamoDB (or S3, for a claim-checked body) answered with
    (``ProvisionedThroughputExceededException``, ``AccessDeniedException``...), or the botocore
    exception's class name for a failure without an answer (``ConnectTimeoutError``); ``""`` when
    retrysafe itself gave up. docs/configuration.md lists which fault gives which error.
    """

    def __init__(self, message: str, *, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class StoreUnavailableError(StoreError):
    """DynamoDB kept throttling or failing after botocore's retries (contract: 503 with Retry-After)."""

    def __init__(self, message: str, retry_after_seconds: int = 1, *, code: str = "") -> None:
        super().__init__(message, code=code)
        self.retry_after_seconds = retry_after_seconds


class InvalidInputError(RetrysafeError):
    """The request or message has no canonical form, so it cannot be fingerprinted; nothing was executed.

    A duplicate JSON object member name, a lone surrogate (``"\\ud800"``: not
    Unicode text), JSON nested too deeply. HTTP answers 400 problem+json, an SQS
    record is reported failed, a Step Functions task raises ``TaskPayloadError``.
    """


class StoreRejectedError(StoreError):
    """DynamoDB refused a request as invalid (contract: 500 problem; a retry cannot cure it).

    A deployment or data-model bug rather than a client's: a business table whose key
    schema does not match the handler's writes, an item collection over its limit, a
    ``ValidationError`` cancellation reason. The message names DynamoDB's reason.
    """


class StoreAccessError(StoreError, ConfigurationError):
    """The table does not exist in this account and region, or the function may not use it.

    ``ResourceNotFoundException``, ``AccessDeniedException``, ``UnrecognizedClientException``: a
    deployment bug, answered as a :class:`ConfigurationError` is (HTTP 500; never retried by Step Functions).
    """


class TransactionRaced(RetrysafeError):
    """DynamoDB cancelled the transaction because another one touched the same items (contract: 409, retry)."""


class SignatureError(RetrysafeError):
    """The delivery's signature is missing, malformed, stale or wrong (answered 401; nothing is written)."""


class ClaimCheckError(RetrysafeError):
    """A claim-checked object is missing, or its size or SHA-256 differs from the pointer's."""


class UnreadableOutboxRecordError(RetrysafeError):
    """An outbox INSERT whose image cannot be read as an outbox event (the pipe dead-letters it)."""


class SweepIncompleteError(RetrysafeError):
    """Some unpublished events were still refused by the target; the next run tries again."""


class ShardHaltedError(RetrysafeError):
    """A stream record was not run because an earlier record of its shard failed in the same batch.

    Reported in ``batchItemFailures`` with the failed record, so Lambda retries the
    shard from the failed record and no later record overtakes it.
    """
