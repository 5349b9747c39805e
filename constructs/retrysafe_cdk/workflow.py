"""Step Functions for idempotent tasks: ``LambdaInvoke`` states with the right payload and retries, and sagas.

:func:`idempotent_invoke` builds the state for an :class:`IdempotentFunction` whose
handler uses ``retrysafe.stepfunctions.idempotent_task``: the payload carries the
execution id and state name from the context object (the task's key), and the
retry policy matches the runtime's lease. :class:`Saga` chains such states and
runs the compensations of the completed steps, in reverse, when a step fails.

Retriers are evaluated in order; the policy (:func:`retry_policy`) is:

1. ``TaskKeyMismatch``, ``TaskPayloadError`` and the business errors: never retried
   (so no catch-all retrier can ever re-run them);
2. ``TaskInProgress``: retried until the other invocation's lease has certainly ended
   (the lease is the Lambda's remaining time at the claim + 2 s, so the retry delays
   add up to more than the function timeout + 2 s, without jitter);
3. Lambda service errors, ``Lambda.Unknown`` (a crash), ``StoreUnavailableError``,
   ``TransactionRaced``, ``BusinessConditionFailedError`` (a raced condition; the retry
   re-reads) and ``FencingError`` (the retry replays the result of the invocation that
   took over): 2 s, backoff 2, 6 attempts.

Failed Standard executions can be redriven for 14 days after they stop: the
tasks' records must outlive that, so the table's ``operator_replay`` part of the
:class:`RetryHorizon` is raised to at least 14 days + the execution timeout.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from retrysafe import names
from retrysafe.errors import TaskInProgress
from retrysafe.stepfunctions import NON_RETRIABLE_ERRORS, RETRIABLE_ERRORS

from constructs import Construct

from ._props import refuse_ignored, struct_values
from .function import IdempotentFunction
from .horizon import DAY
from .nag import acknowledge
from .table import IdempotencyTable

#: A failed Standard execution can be redriven this long after it stopped.
_REDRIVE_WINDOW = Duration.days(14)
#: A saga's execution timeout unless given (part of the retry horizon).
_DEFAULT_EXECUTION_TIMEOUT = Duration.hours(1)
#: Lambda's init phase is not part of the function timeout (it may take up to 10 s).
_INIT_SECONDS = 10
#: The iteration of an inline ``Map``: pass it as ``iteration=`` for a task inside one.
MAP_ITEM_INDEX = "$$.Map.Item.Index"
#: The runtime's error classes name the retriers (a Lambda error's ``errorType`` is its class name).
NON_RETRYABLE = tuple(error.__name__ for error in NON_RETRIABLE_ERRORS)
IN_PROGRESS = TaskInProgress.__name__
_LAMBDA_SERVICE_ERRORS = ("Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException",
                         "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException")
TRANSIENT = (*_LAMBDA_SERVICE_ERRORS, "Lambda.Unknown", *(error.__name__ for error in RETRIABLE_ERRORS))
_IN_PROGRESS_INTERVAL = 2
_BACKOFF = 2.0


def task_payload(iteration: str | None = None) -> sfn.TaskInput:
    """The ``LambdaInvoke`` payload ``retrysafe.stepfunctions`` reads; ``iteration`` tells repeated runs apart."""
    payload = {f"{names.TASK_EXECUTION}.$": "$$.Execution.Id", f"{names.TASK_STATE}.$": "$$.State.Name",
               f"{names.TASK_STATE_MACHINE}.$": "$$.StateMachine.Id", f"{names.TASK_RETRY_COUNT}.$": "$$.State.RetryCount",
               f"{names.TASK_INPUT}.$": "$"}
    if iteration is not None:
        payload[f"{names.TASK_ITERATION}.$"] = iteration
    return sfn.TaskInput.from_object(payload)


def in_progress_attempts(function_timeout: Duration) -> int:
    """Fewest ``TaskInProgress`` retries (2 s, doubling) whose delays add up to more than timeout + lease margin."""
    must_exceed = function_timeout.to_seconds() + names.LEASE_MARGIN_SECONDS
    # 2 * (2^n - 1) > must_exceed
    return math.floor(math.log2(must_exceed / _IN_PROGRESS_INTERVAL + 1)) + 1


def retry_policy(function_timeout: Duration, business_errors: Sequence[str] = ()) -> list[sfn.RetryProps]:
    """The retriers of an idempotent task, in evaluation order (see the module docstring)."""
    return [
        sfn.RetryProps(errors=[*NON_RETRYABLE, *business_errors], max_attempts=0),
        sfn.RetryProps(errors=[IN_PROGRESS], interval=Duration.seconds(_IN_PROGRESS_INTERVAL), backoff_rate=_BACKOFF,
                       max_attempts=in_progress_attempts(function_timeout)),
        sfn.RetryProps(errors=list(TRANSIENT), interval=Duration.seconds(2), backoff_rate=_BACKOFF, max_attempts=6),
    ]


def require_redrive_horizon(table: IdempotencyTable, execution_timeout: Duration | None = None) -> None:
    """Make the table's records outlive a redrive: ``operator_replay`` >= 14 days + the execution timeout.

    Raises ``ValueError`` when the table's fixed ``record_ttl`` is then shorter than the horizon.
    """
    running = execution_timeout.to_seconds() if execution_timeout is not None else 0
    needed = int(_REDRIVE_WINDOW.to_seconds() + running)
    if table.horizon.operator_replay < needed:
        table.horizon = replace(table.horizon, operator_replay=needed)
    ttl, total = table.record_ttl_seconds, table.horizon.total_seconds
    if ttl is not None and ttl < total:
        raise ValueError(
            f"{table.node.path}: record_ttl ({ttl}s = {ttl / DAY:g} days) is shorter than the retry horizon of its "
            f"Step Functions tasks ({total}s = {table.horizon.describe()}). A failed Standard execution can be "
            f"redriven for 14 days after it stopped (operator_replay >= {needed}s: 14 days + the execution "
            "timeout), and a redriven task whose record has expired runs again. Fix: raise record_ttl to at "
            f"least Duration.seconds({total}), or leave it unset so that it follows the horizon."
        )


def idempotent_invoke(scope: Construct, state_name: str, function: IdempotentFunction, *, result_path: str = "$",
                      business_errors: Sequence[str] = (), task_timeout: Duration | None = None,
                      iteration: str | None = None, comment: str | None = None) -> tasks.LambdaInvoke:
    """A ``LambdaInvoke`` state for an ``@idempotent_task`` handler, with the payload and the retry policy.

    - ``state_name``: the state's name, which is also the task's operation (rename = new records).
    - ``result_path``: where the task's result goes in the state (default: replaces it).
    - ``business_errors``: exception class names the handler raises as outcomes (never retried;
      catch them to compensate).
    - ``task_timeout``: default the function timeout + 10 s (Lambda's init phase); shorter than the
      function timeout is refused, because Step Functions would retry while the first invocation runs.
    - ``iteration``: a JSONPath that tells repeated runs of the state apart in one execution,
      e.g. :data:`MAP_ITEM_INDEX` inside an inline ``Map``, or a loop counter.

    The table's horizon is raised to cover a redrive (see :func:`require_redrive_horizon`).
    """
    timeout = task_timeout or Duration.seconds(function.timeout.to_seconds() + _INIT_SECONDS)
    if timeout.to_seconds() < function.timeout.to_seconds():
        raise ValueError(
            f"{scope.node.path}/{state_name}: task_timeout ({timeout.to_seconds():g}s) is shorter than the function "
            f"timeout ({function.timeout.to_seconds():g}s) of {function.node.path}. Step Functions would start a "
            "retry while the first invocation still runs, and that retry only finds TaskInProgress. Fix: set "
            f"task_timeout to at least Duration.seconds({function.timeout.to_seconds() + _INIT_SECONDS:g}) (the "
            "function timeout + 10 s for Lambda's init phase), or leave it unset."
        )
    require_redrive_horizon(function.table)
    task = tasks.LambdaInvoke(
        scope, state_name, lambda_function=function.invoke_target, payload=task_payload(iteration),
        payload_response_only=True, retry_on_service_exceptions=False, result_path=result_path,
        task_timeout=sfn.Timeout.duration(timeout), comment=comment,
    )
    for retry in retry_policy(function.timeout, business_errors):
        task.add_retry(errors=retry.errors, interval=retry.interval, backoff_rate=retry.backoff_rate,
                       max_attempts=retry.max_attempts)
    return task


@dataclass(frozen=True)
class Compensation:
    """The task that undoes a saga step; its result goes to ``result_path`` (the state is kept for the next one)."""

    name: str
    function: IdempotentFunction
    result_path: str


@dataclass(frozen=True)
class SagaStep:
    """One forward step of a :class:`Saga`.

    ``compensate_on``: the errors that end the saga through the compensations (default any error
    after the retries). Other errors fail the execution as it is, to be redriven once fixed.
    ``compensation``: what undoes this step when a *later* step fails (a failed step itself is
    not compensated: it took no effect, or its own retry or redrive finishes it).
    """

    name: str
    function: IdempotentFunction
    result_path: str
    compensate_on: Sequence[str] = ("States.ALL",)
    compensation: Compensation | None = None


#: ``sfn.StateMachine`` props a :class:`Saga` sets itself (refused in ``state_machine_props``).
_SAGA_OWNED_PROPS = frozenset({"definition", "definition_body", "definition_substitutions", "state_machine_type",
                               "timeout", "logs"})


class Saga(Construct):
    """A Standard state machine running idempotent steps in order, compensating completed ones on failure.

    :param steps: the :class:`SagaStep` list (required). Step *i*'s failure (an error in its ``compensate_on``,
        after the retries) runs the compensations of steps *i-1* ... 0, then fails the execution with the
        original error (caught errors are stored at ``$.error``).
    :param business_errors: exception names the tasks raise as outcomes; never retried. @default none.
    :param timeout: the execution timeout; it is part of the retry horizon. @default 1 hour.
    :param include_execution_data: log state inputs and outputs. @default False.
    :param existing_log_group: a log group for the execution history. @default a new one (``log_group_props``).
    :param log_group_props: the created log group's ``logs.LogGroupProps``. @default retention one month,
        ``DESTROY``. Refused with ``existing_log_group``.
    :param state_machine_props: any other ``sfn.StateMachine`` props (applied last), e.g.
        ``state_machine_name`` or ``role``. The definition, type, timeout and logging are the saga's own and
        are refused there. @default none.

    Every task is built by :func:`idempotent_invoke`. The state machine logs ALL events to
    its own log group and is traced with X-Ray. Attributes: ``state_machine``, ``log_group``,
    ``tasks`` (state name -> state), ``succeeded``, ``failed``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, steps: Sequence[SagaStep],
                 business_errors: Sequence[str] = (), timeout: Duration = _DEFAULT_EXECUTION_TIMEOUT,
                 include_execution_data: bool = False, existing_log_group: logs.ILogGroup | None = None,
                 log_group_props: logs.LogGroupProps | None = None,
                 state_machine_props: Mapping[str, Any] | None = None) -> None:
        super().__init__(scope, construct_id)
        if not steps:
            raise ValueError(f"{self.node.path}: a saga needs at least one step.")
        refuse_ignored(self, "existing_log_group", existing_log_group, {"log_group_props": log_group_props},
                       "set retention and removal policy on that log group")
        fixed = sorted(set(state_machine_props or {}) & _SAGA_OWNED_PROPS)
        if fixed:
            raise ValueError(f"{self.node.path}: state_machine_props cannot set {', '.join(fixed)}: the saga "
                             "builds them (use steps=, timeout=, existing_log_group= or log_group_props= and include_execution_data=).")
        self.tasks: dict[str, tasks.LambdaInvoke] = {}

        def invoke(name: str, function: IdempotentFunction, result_path: str) -> tasks.LambdaInvoke:
            self.tasks[name] = idempotent_invoke(self, name, function, result_path=result_path,
                                                 business_errors=business_errors)
            return self.tasks[name]

        self.succeeded = sfn.Succeed(self, "Succeeded")
        self.failed = sfn.Fail(self, "Failed", error_path="$.error.Error", cause_path="$.error.Cause")
        # undo[i]: where a failure of step i goes; the compensations chain towards step 0, then Failed.
        undo: list[sfn.IChainable] = []
        rollback: sfn.IChainable = self.failed
        for step in steps:
            undo.append(rollback)
            if step.compensation is not None:
                compensation = step.compensation
                rollback = invoke(compensation.name, compensation.function, compensation.result_path).next(rollback)
        forward = [invoke(step.name, step.function, step.result_path) for step in steps]
        for step, task, on_failure in zip(steps, forward, undo, strict=True):
            task.add_catch(on_failure, errors=list(step.compensate_on), result_path="$.error")
        chain = sfn.Chain.start(forward[0])
        for task in forward[1:]:
            chain = chain.next(task)
        functions = {s.function.node.path: s.function for s in steps}
        functions.update({s.compensation.function.node.path: s.compensation.function
                          for s in steps if s.compensation is not None})
        for table in {f.table.node.path: f.table for f in functions.values()}.values():
            require_redrive_horizon(table, timeout)

        self.log_group: logs.ILogGroup = existing_log_group or logs.LogGroup(
            self, "Logs", **{"retention": logs.RetentionDays.ONE_MONTH, "removal_policy": RemovalPolicy.DESTROY,
                             **struct_values(log_group_props)})
        props: dict[str, Any] = {"tracing_enabled": True, **(state_machine_props or {})}
        self.state_machine = sfn.StateMachine(
            self, "StateMachine", definition_body=sfn.DefinitionBody.from_chainable(chain.next(self.succeeded)),
            state_machine_type=sfn.StateMachineType.STANDARD, timeout=timeout,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL,
                                include_execution_data=include_execution_data), **props)
        acknowledge_state_machine_grants(self.state_machine, functions.values())


def acknowledge_state_machine_grants(state_machine: sfn.StateMachine,
                                     functions: Iterable[IdempotentFunction]) -> None:
    """Acknowledge cdk-nag IAM5 for what CDK grants a state machine that invokes ``functions`` (only that).

    ``lambda:InvokeFunction`` on ``<function arn>:*`` (its versions and aliases; a SnapStart function's
    grant names its alias alone), and the X-Ray and CloudWatch Logs delivery actions on ``*`` (they
    support no resource scoping).
    """
    for function in functions:
        if function.alias is not None:
            continue
        logical_id = Stack.of(function).get_logical_id(function.function.node.default_child)  # type: ignore[arg-type]
        acknowledge(state_machine, f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]",
                    f"CDK's LambdaInvoke grant covers the versions and aliases of {function.node.path}.")
    acknowledge(state_machine, "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                "X-Ray tracing and CloudWatch Logs delivery actions support no resource-level scoping.")
