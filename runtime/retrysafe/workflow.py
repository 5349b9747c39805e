"""The former name of :mod:`retrysafe.stepfunctions`, kept so that existing imports keep working.

New code imports :mod:`retrysafe.stepfunctions` (the Step Functions task adapter)
and the task errors from :mod:`retrysafe.errors`. Every name this module had is
still here and is the same object as the one in its new home.
"""

from .errors import TaskInProgress, TaskKeyMismatch, TaskPayloadError
from .stepfunctions import (
    NON_RETRIABLE_ERRORS,
    RETRIABLE_ERRORS,
    TaskFunction,
    TaskHandler,
    TaskIdempotency,
    TaskRequest,
    idempotent_task,
)

__all__ = [
    "NON_RETRIABLE_ERRORS",
    "RETRIABLE_ERRORS",
    "TaskFunction",
    "TaskHandler",
    "TaskIdempotency",
    "TaskInProgress",
    "TaskKeyMismatch",
    "TaskPayloadError",
    "TaskRequest",
    "idempotent_task",
]
