"""Workflow constructs built in-process: synth-time errors that say how to fix them, and the computed policy."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template
from hypothesis import given
from hypothesis import strategies as st
from retrysafe.errors import TaskInProgress, TaskKeyMismatch, TaskPayloadError
from retrysafe_cdk import (
    IdempotencyTable,
    Saga,
    SagaStep,
    idempotent_invoke,
    retry_policy,
)
from retrysafe_cdk.workflow import MAP_ITEM_INDEX, in_progress_attempts

from .builders import DAY, inline_function, new_stack


@pytest.fixture
def stack() -> cdk.Stack:
    return new_stack("Workflow")


def _state(stack: cdk.Stack, state: sfn.State) -> dict[str, Any]:
    result: dict[str, Any] = stack.resolve(state.to_state_json())
    return result


def test_task_timeout_shorter_than_the_function_timeout_is_refused(stack: cdk.Stack) -> None:
    function = inline_function(stack, IdempotencyTable(stack, "Table"), timeout=30)
    with pytest.raises(ValueError, match=r"task_timeout \(20s\) is shorter than the function timeout \(30s\)") as raised:
        idempotent_invoke(stack, "Charge", function, task_timeout=Duration.seconds(20))
    assert "Duration.seconds(40)" in str(raised.value) and "or leave it unset" in str(raised.value)


def test_record_ttl_under_the_redrive_window_is_refused(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.days(7))
    function = inline_function(stack, table)
    with pytest.raises(ValueError, match=r"record_ttl \(604800s = 7 days\) is shorter") as raised:
        idempotent_invoke(stack, "Charge", function)
    message = str(raised.value)
    assert "redriven for 14 days" in message and "operator_replay=1209600s" in message
    assert f"Duration.seconds({19 * DAY})" in message  # client 1 + webhook 3 + operator 14 + settlement 1


def test_saga_adds_the_execution_timeout_to_the_redrive_part(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    Saga(stack, "Saga", steps=[SagaStep("Only", inline_function(stack, table), "$.only")], timeout=Duration.hours(6))
    assert table.horizon.operator_replay == 14 * DAY + 6 * 3600
    assert stack.resolve(table.retention_env()) == str(19 * DAY + 6 * 3600)


def test_long_enough_record_ttl_is_kept(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table", record_ttl=Duration.days(30))
    idempotent_invoke(stack, "Charge", inline_function(stack, table))
    assert table.retention_seconds == 30 * DAY


def test_task_inside_a_map_adds_the_iteration_to_its_key(stack: cdk.Stack) -> None:
    task = idempotent_invoke(stack, "Item", inline_function(stack, IdempotencyTable(stack, "Table")),
                             iteration=MAP_ITEM_INDEX, task_timeout=Duration.seconds(10))
    state = _state(stack, task)
    assert state["Parameters"]["iteration.$"] == "$$.Map.Item.Index"
    assert state["Parameters"]["execution.$"] == "$$.Execution.Id" and state["TimeoutSeconds"] == 10


def test_a_saga_without_compensations_fails_straight_away(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    saga = Saga(stack, "Saga", steps=[SagaStep("A", inline_function(stack, table), "$.a"),
                                      SagaStep("B", inline_function(stack, table, 20), "$.b", compensate_on=["Nope"])])
    assert [c["Next"] for c in _state(stack, saga.tasks["B"])["Catch"]] == ["Failed"]
    assert _state(stack, saga.tasks["A"])["Next"] == "B"
    with pytest.raises(ValueError, match="at least one step"):
        Saga(stack, "Empty", steps=[])


def test_saga_takes_an_existing_log_group_and_state_machine_props(stack: cdk.Stack) -> None:
    table = IdempotencyTable(stack, "Table")
    existing = logs.LogGroup(stack, "History", retention=logs.RetentionDays.ONE_YEAR)
    saga = Saga(stack, "Saga", steps=[SagaStep("A", inline_function(stack, table), "$.a")], existing_log_group=existing,
                state_machine_props={"state_machine_name": "orders-saga"})
    assert saga.log_group is existing
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::Logs::LogGroup", 2)  # the history and the function's own, no saga-made one
    template.has_resource_properties("AWS::StepFunctions::StateMachine", {
        "StateMachineName": "orders-saga", "TracingConfiguration": {"Enabled": True},
        "LoggingConfiguration": {"Destinations": [{"CloudWatchLogsLogGroup": {
            "LogGroupArn": stack.resolve(existing.log_group_arn)}}]}})
    step = [SagaStep("B", inline_function(stack, table, 20), "$.b")]
    with pytest.raises(ValueError, match="state_machine_props cannot set timeout"):
        Saga(stack, "Bad", steps=step, state_machine_props={"timeout": Duration.hours(2)})
    with pytest.raises(ValueError, match="existing_log_group=Workflow/History is given, so log_group_props would not "
                                         "apply .* Fix: set retention and removal policy on that log group"):
        Saga(stack, "Both", steps=step, existing_log_group=existing,
             log_group_props=logs.LogGroupProps(retention=logs.RetentionDays.ONE_DAY))


@given(st.integers(min_value=1, max_value=900))
def test_in_progress_retries_outlast_the_lease_with_the_fewest_attempts(timeout: int) -> None:
    policy = retry_policy(Duration.seconds(timeout), ["Declined"])
    assert [r.errors for r in policy][:2] == [[TaskKeyMismatch.__name__, TaskPayloadError.__name__, "Declined"],
                                              [TaskInProgress.__name__]]
    retrier = policy[1]
    assert retrier.max_attempts == in_progress_attempts(Duration.seconds(timeout))
    assert retrier.interval is not None and retrier.backoff_rate is not None and retrier.max_attempts is not None
    delays = [retrier.interval.to_seconds() * retrier.backoff_rate ** n for n in range(retrier.max_attempts)]
    assert sum(delays) > timeout + 2 >= sum(delays[:-1])


def test_the_retry_policy_names_the_runtimes_own_error_classes() -> None:
    """The retriers take their error names from the runtime's classes (a Lambda errorType is the class name)."""
    from retrysafe import stepfunctions as runtime
    from retrysafe.errors import (
        ConfigurationError,
        ResponseTooLargeError,
        StoreRejectedError,
        TaskInProgress,
        TransactionTooLargeError,
    )
    from retrysafe_cdk.workflow import IN_PROGRESS, NON_RETRYABLE, TRANSIENT

    never, in_progress, transient = retry_policy(Duration.minutes(5))
    assert never.errors == list(NON_RETRYABLE) == [e.__name__ for e in runtime.NON_RETRIABLE_ERRORS]
    assert never.max_attempts == 0
    assert in_progress.errors == [IN_PROGRESS] == [TaskInProgress.__name__]
    assert transient.errors == list(TRANSIENT)
    assert {e.__name__ for e in runtime.RETRIABLE_ERRORS} <= set(transient.errors)
    # A deployment bug is never retried: a retry cannot cure it.
    cannot_cure = {e.__name__ for e in (StoreRejectedError, ConfigurationError, TransactionTooLargeError,
                                        ResponseTooLargeError, *runtime.NON_RETRIABLE_ERRORS)}
    assert not cannot_cure & set(in_progress.errors + transient.errors)
