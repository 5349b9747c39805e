"""``@idempotent_task``: Lambda tasks invoked by Step Functions, each effect at most once per execution and state.

The task's key is the execution id plus the state name, which Step Functions
passes from its context object; both are stable across the state's retries
(and a redrive), so a retry replays the stored result instead of running again.
The payload the state machine sends (``LambdaInvoke`` ``Payload``)::

    {
      "execution.$": "$$.Execution.Id",
      "state.$": "$$.State.Name",
      "stateMachine.$": "$$.StateMachine.Id",
      "retryCount.$": "$$.State.RetryCount",
      "input.$": "$"
    }

``retryCount`` is accepted and never part of the identity. A state that runs
more than once per execution (inside an inline ``Map``, or in a loop) adds
``"iteration.$": "$$.Map.Item.Index"`` (or a loop counter) to its key.

Tasks run in claim-first mode (they make foreign calls): a crashed invocation
keeps its claim until the lease, sized from the Lambda's remaining time,
lapses; :meth:`~retrysafe.Transaction.step` records recovery points so the
takeover resumes after the last completed step.

Errors Step Functions sees (the Lambda ``errorType`` is the class name):
``TaskInProgress`` (retry it: the key is held by a live or not yet lapsed
invocation), :data:`RETRIABLE_ERRORS` (retry with back-off), :data:`NON_RETRIABLE_ERRORS`
(never retry), and ``StoreRejectedError``, ``ConfigurationError``,
``TransactionTooLargeError`` (a deployment bug: not retried). ``retrysafe_cdk``
builds its retry policy from these classes' names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, cast

from ._adapter import (
    SubscriberName,
    Wired,
    flushes_telemetry,
    lambda_entry_point,
    positive_lease,
    takes_options,
)
from ._async import blocking
from ._config import Mode, idempotency_disabled
from ._engine import Completion, Engine, Intent
from ._fingerprint import canonical_value, fingerprint, is_unicode
from ._keys import Scope
from ._replay import ReplayHook, replayed
from ._store import DynamoStore
from ._tenant import NO_TENANT, Tenant, checked_tenant, tenant_of
from ._transaction import Transaction
from ._value import Value, set_field
from .errors import (
    BusinessConditionFailedError,
    FencingError,
    InvalidInputError,
    KeyReuseMismatchError,
    RequestInFlightError,
    StoreUnavailableError,
    TaskInProgress,
    TaskKeyMismatch,
    TaskPayloadError,
    TransactionRaced,
)
from .names import TASK_ADAPTER, TASK_EXECUTION, TASK_INPUT, TASK_ITERATION, TASK_STATE, TASK_STATE_MACHINE

TaskHandler = Callable[[Any, Any, Transaction], Any]


class TaskFunction(Protocol):
    """A decorated task: the Lambda entry point, with its configuration as ``.task``."""

    task: TaskIdempotency

    def __call__(self, payload: Any, context: Any) -> Any:
        """Handle one Step Functions invocation."""


#: Errors a retry of the state cures: DynamoDB throttled or unavailable, a transaction raced,
#: a condition raced (the retry re-reads), a fenced-off zombie (the retry replays the result of
#: the invocation that took over). Retried with back-off by ``retrysafe_cdk``'s policy.
RETRIABLE_ERRORS: tuple[type[Exception], ...] = (StoreUnavailableError, TransactionRaced,
                                                  BusinessConditionFailedError, FencingError)
#: Errors no retry can cure; ``retrysafe_cdk``'s policy never retries them.
NON_RETRIABLE_ERRORS: tuple[type[Exception], ...] = (TaskKeyMismatch, TaskPayloadError)


class TaskRequest(Value):
    """The identity and input of one task invocation, parsed from the Step Functions payload."""

    __slots__ = ("execution", "input", "iteration", "state", "state_machine")

    execution: str
    input: Any
    iteration: str | None
    state: str
    state_machine: str | None

    def __init__(self, execution: str, state: str, input: Any, state_machine: str | None = None,
                 iteration: str | None = None) -> None:
        set_field(self, "execution", execution)
        set_field(self, "state", state)
        set_field(self, "input", input)
        set_field(self, "state_machine", state_machine)
        set_field(self, "iteration", iteration)

    @classmethod
    def parse(cls, payload: Any) -> TaskRequest:
        """Read the payload built from the context object (see the module docstring)."""
        if not isinstance(payload, dict):
            raise TaskPayloadError("the task payload must be a JSON object with 'execution', 'state' and 'input'")
        missing = [name for name in (TASK_EXECUTION, TASK_STATE) if not isinstance(payload.get(name), str)
                   or not payload[name]]
        if missing:
            raise TaskPayloadError(
                f"the task payload has no {' or '.join(repr(m) for m in missing)}: pass "
                '"execution.$": "$$.Execution.Id" and "state.$": "$$.State.Name" in the LambdaInvoke Payload'
            )
        iteration = payload.get(TASK_ITERATION)
        state_machine = payload.get(TASK_STATE_MACHINE) or None
        if not isinstance(state_machine, (str, type(None))):
            raise TaskPayloadError("the task payload's 'stateMachine' is not a string: pass "
                                   '"stateMachine.$": "$$.StateMachine.Id"')
        for name, value in ((TASK_EXECUTION, payload[TASK_EXECUTION]), (TASK_STATE, payload[TASK_STATE]),
                            (TASK_STATE_MACHINE, state_machine), (TASK_ITERATION, iteration)):
            if value is not None and not is_unicode(str(value)):
                raise TaskPayloadError(f"the task payload's {name!r} is not Unicode text (a lone surrogate)")
        return cls(execution=payload[TASK_EXECUTION], state=payload[TASK_STATE], input=payload.get(TASK_INPUT),
                   state_machine=state_machine, iteration=None if iteration is None else str(iteration))

    def fingerprint(self) -> str:
        """Hash of the canonical JSON input: a retry sends the same input, another input is a mismatch.

        Raises :class:`TaskPayloadError` when the input has no canonical form (a lone surrogate, NaN).
        """
        try:
            return fingerprint(["task/v1", canonical_value(self.input)])
        except InvalidInputError as error:
            raise TaskPayloadError(f"the task input cannot be fingerprinted: {error}") from None

    def key(self) -> str:
        """The idempotency key: execution id, plus the iteration when given (never the retry count)."""
        return json.dumps([self.execution, self.iteration]) if self.iteration is not None else self.execution


def state_machine_tenant(request: TaskRequest) -> str | None:
    """The default ``tenant=`` of a task: the state machine that invoked it (``stateMachine`` in the payload)."""
    return request.state_machine


class TaskIdempotency(Wired):
    """Configuration and engine of one idempotent Step Functions task.

    Its options are those of :func:`idempotent_task`, documented there with their defaults.
    """

    def __init__(self, *, subscriber: str | None = None, tenant: Tenant[TaskRequest] = state_machine_tenant,
                 operation: str | None = None, horizon_seconds: int | None = None, lease_seconds: float | None = None,
                 on_replay: ReplayHook | None = None, store: DynamoStore | None = None,
                 engine: Engine | None = None) -> None:
        self.subscriber = SubscriberName(subscriber)
        self.tenant = checked_tenant(tenant)
        self.operation = operation
        self.wire(horizon_seconds, store, engine)
        self.lease_seconds = positive_lease(lease_seconds)
        self.on_replay = on_replay

    def caller(self, request: TaskRequest) -> str:
        """The caller of this invocation (``tenant=``); :class:`TaskPayloadError` when it names none."""
        tenant = tenant_of(self.tenant, request)
        if tenant is None:
            if self.tenant is state_machine_tenant:
                raise TaskPayloadError('configure tenant= or pass "stateMachine.$": "$$.StateMachine.Id" in the payload')
            raise TaskPayloadError("the tenant= callable found no tenant in this invocation")
        if not is_unicode(tenant):
            raise TaskPayloadError("the tenant= callable found a tenant that is not Unicode text (a lone surrogate)")
        return tenant

    def intent(self, request: TaskRequest) -> Intent:
        """The intent of one invocation: scoped by tenant and state, keyed by the execution."""
        tenant = self.caller(request)
        scope = Scope(tenant, self.operation or request.state, request.key(), adapter=TASK_ADAPTER,
                      subscriber=self.subscriber())
        return Intent(scope, request.fingerprint(), Mode.CLAIM_FIRST, self.retention, self.lease_seconds)

    @flushes_telemetry
    def run(self, payload: Any, work: Callable[[TaskRequest, Transaction], Any],
            remaining_ms: Callable[[], int] | None = None) -> Any:
        """Run ``work`` at most once for this execution's state and return its (possibly replayed) result."""
        try:
            request = TaskRequest.parse(payload)
            if idempotency_disabled():  # no key, no fingerprint, no record: the state runs as a new one
                scope = Scope(tenant_of(self.tenant, request) or NO_TENANT, self.operation or request.state, "",
                              adapter=TASK_ADAPTER, subscriber=self.subscriber())
                return self.engine.execute_unkeyed(scope, lambda txn: Completion(work(request, txn)),
                                                   self.retention, steps=True).result
            outcome = self.engine.execute(self.intent(request), lambda txn: Completion(work(request, txn)),
                                          remaining_ms)
        except RequestInFlightError as error:
            raise TaskInProgress(error.retry_after_seconds) from None
        except KeyReuseMismatchError:
            raise TaskKeyMismatch("this execution's state already ran with a different input") from None
        return replayed(self.on_replay, outcome.result, outcome.replay)


@takes_options
def idempotent_task(
    func: TaskHandler, /, *,
    subscriber: str | None = None,
    tenant: Tenant[TaskRequest] = state_machine_tenant,
    operation: str | None = None,
    horizon_seconds: int | None = None,
    lease_seconds: float | None = None,
    on_replay: ReplayHook | None = None,
    store: DynamoStore | None = None,
    engine: Engine | None = None,
) -> TaskFunction:
    """Make a Lambda task invoked by Step Functions idempotent per execution and state.

    Used as ``@idempotent_task`` or ``@idempotent_task(option=...)``. The handler receives the
    state's ``input`` (not the whole payload), the Lambda context and the
    :class:`~retrysafe.Transaction`; its return value (JSON-able) is stored and returned on every
    retry. The options (the same for :class:`TaskIdempotency`):

    - ``subscriber`` (default: the deployed function, ``RETRYSAFE_SUBSCRIBER`` else
      ``AWS_LAMBDA_FUNCTION_NAME``, read at the first call): the consumer the records belong to.
    - ``tenant`` (default :func:`state_machine_tenant`: the state machine ARN from the payload, the
      caller): a :data:`~retrysafe.Tenant` of the :class:`TaskRequest`: a callable finding it (finding
      none raises :class:`~retrysafe.errors.TaskPayloadError`, not retried), a fixed name, or ``None``
      (one tenant for every state machine).
    - ``operation`` (default: the state name): a fixed operation name.
    - ``horizon_seconds`` (default ``RETRYSAFE_RETRY_HORIZON_SECONDS``, else 7 days): record
      lifetime; keep it longer than the execution can be redriven or replayed.
    - ``lease_seconds`` (default: the Lambda's remaining time plus a margin): the claim lease.
    - ``on_replay`` (default ``None``): ``hook(output, info) -> output``, called when a retry or a
      redrive of the state replays its stored output (never on a first run) with that output and the
      :class:`~retrysafe.ReplayInfo` (record id, expiry: never the raw key); the state gets what it
      returns. No DynamoDB call of its own; a hook that raises fails the invocation (its error is
      the state's error) and the record stays as it is.
    - ``store`` / ``engine`` (default ``DynamoStore.from_env()``): where records live.

    Example::

        @idempotent_task
        def charge(order, context, txn):
            return txn.step("charge", lambda: provider.charge(order["amount"], key=txn.derive_key("charge")))
    """
    task = TaskIdempotency(subscriber=subscriber, tenant=tenant, operation=operation, horizon_seconds=horizon_seconds,
                           lease_seconds=lease_seconds, on_replay=on_replay, store=store, engine=engine)

    call = blocking(func)

    def wrapper(payload: Any, context: Any) -> Any:
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        return task.run(payload, lambda request, txn: call(request.input, context, txn), remaining)

    return cast(TaskFunction, lambda_entry_point(func, wrapper, task=task))

__all__ = ["NON_RETRIABLE_ERRORS", "RETRIABLE_ERRORS", "TaskFunction", "TaskHandler", "TaskIdempotency", "TaskRequest",
           "idempotent_task", "state_machine_tenant"]
