"""Runtime settings: execution modes and the values the constructs pass through the environment.

Environment variables (set by :mod:`retrysafe_cdk`, or by hand):

``RETRYSAFE_TABLE``
    Name of the idempotency table. Required unless a store is passed explicitly. Read at
    decoration inside Lambda (a missing name fails the cold start), else at the first call.
``RETRYSAFE_RETRY_HORIZON_SECONDS``
    How long a record is kept: the business retry horizon (client retries,
    queue redelivery incl. DLQ redrive, webhook and operator replay,
    settlement). Default 7 days; values under 24 hours are refused.
``RETRYSAFE_LEASE_SECONDS``
    Lease of a claim when the Lambda context gives no remaining time. Default 60.
``RETRYSAFE_VERIFY_TABLE``
    ``true`` to check the table with one ``DescribeTable`` at cold start. Default off.
``RETRYSAFE_IDEMPOTENCY_DISABLED``
    ``true`` in unit tests that do not test idempotency: every request runs as a new
    intent (no record is read or written; the handler's writes and events still commit
    in one transaction). Refused inside Lambda's execution environment with
    :class:`~retrysafe.errors.IdempotencyDisabledError`, at cold start.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from typing import TypeVar, overload

from . import names
from ._value import Value, set_field
from .errors import ConfigurationError, IdempotencyDisabledError

#: Variables Lambda sets in every execution environment (the runtime API's address, the function code's
#: path) and a test suite has no reason to set; ``AWS_LAMBDA_FUNCTION_NAME`` is not one of them, because
#: test suites often set it for Powertools.
LAMBDA_ENVIRONMENT_MARKERS = ("AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT")
_TRUE = ("1", "true", "yes")

DAY = 86_400
DEFAULT_HORIZON_SECONDS = 7 * DAY
DEFAULT_LEASE_SECONDS = 60.0

_N = TypeVar("_N", int, float)


class Mode(str, enum.Enum):
    """How an operation's side effects are made safe."""

    #: Local effects only: handler writes, completed record and outbox events
    #: commit in ONE TransactWriteItems (first request and replay: 1 round trip).
    ATOMIC = "atomic"
    #: Foreign effects (payment providers, e-mail): claim with a fenced lease
    #: first, run, then complete in one transaction (first request: 2 round trips).
    CLAIM_FIRST = "claim_first"

    @classmethod
    def parse(cls, value: Mode | str) -> Mode:
        """The mode named by ``value``, or a :class:`ConfigurationError` listing the valid names."""
        try:
            return cls(value)
        except ValueError:
            raise ConfigurationError(f"mode must be 'atomic' or 'claim_first', not {value!r}") from None


class Retention(Value):
    """How long records live and how long a claim is leased."""

    __slots__ = ("default_lease_seconds", "horizon_seconds")

    default_lease_seconds: float
    horizon_seconds: int

    def __init__(self, horizon_seconds: int = DEFAULT_HORIZON_SECONDS,
                 default_lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        set_field(self, "horizon_seconds", horizon_seconds)
        set_field(self, "default_lease_seconds", default_lease_seconds)
        if self.horizon_seconds < names.MIN_HORIZON_SECONDS:
            raise ConfigurationError(
                f"retry horizon {self.horizon_seconds}s is shorter than 24 hours; records must outlive "
                "client retries, queue redelivery incl. DLQ redrive and operator replay. "
                f"Set {names.HORIZON_ENV} (or horizon_seconds=) to at least {names.MIN_HORIZON_SECONDS}."
            )
        if self.default_lease_seconds <= 0:
            raise ConfigurationError(f"lease must be positive, got {self.default_lease_seconds}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, horizon_seconds: int | None = None) -> Retention:
        """Read the horizon and lease from the environment; an explicit horizon wins."""
        env = os.environ if environ is None else environ
        horizon = horizon_seconds if horizon_seconds is not None else env_int(env, names.HORIZON_ENV, DEFAULT_HORIZON_SECONDS)
        lease = env_float(env, names.LEASE_ENV, DEFAULT_LEASE_SECONDS)
        return cls(horizon_seconds=horizon, default_lease_seconds=lease)


def table_name_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The idempotency table's name, or a :class:`ConfigurationError` that says how to set it."""
    env = os.environ if environ is None else environ
    name = env.get(names.TABLE_ENV, "").strip()
    if not name:
        raise ConfigurationError(
            f"{names.TABLE_ENV} is not set: pass store=DynamoStore('my-table') or set {names.TABLE_ENV} "
            "(the retrysafe_cdk constructs set it for you)."
        )
    return name


def env_int(env: Mapping[str, str], name: str, default: int, *, unit: str = "seconds") -> int:
    """``env[name]`` as a whole number; ``default`` when unset or empty; a :class:`ConfigurationError` naming it."""
    value = _number(env, name, int, f"a whole number of {unit}")
    return default if value is None else value


@overload
def env_float(env: Mapping[str, str], name: str, default: float, *, unit: str = "seconds") -> float: ...
@overload
def env_float(env: Mapping[str, str], name: str, default: None, *, unit: str = "seconds") -> float | None: ...
def env_float(env: Mapping[str, str], name: str, default: float | None, *, unit: str = "seconds") -> float | None:
    """``env[name]`` as a number; ``default`` when unset or empty; a :class:`ConfigurationError` naming it."""
    value = _number(env, name, float, f"a number of {unit}")
    return default if value is None else value


def _number(env: Mapping[str, str], name: str, convert: Callable[[str], _N], what: str) -> _N | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        return convert(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not {what}") from None


def in_lambda(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs in Lambda's execution environment (:data:`LAMBDA_ENVIRONMENT_MARKERS`)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in LAMBDA_ENVIRONMENT_MARKERS)


def idempotency_disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``RETRYSAFE_IDEMPOTENCY_DISABLED`` switches deduplication off (``1``, ``true``, ``yes``).

    Raises :class:`~retrysafe.errors.IdempotencyDisabledError` when it is set inside Lambda's
    execution environment: the switch exists for unit tests, never for a deployed function.
    """
    env = os.environ if environ is None else environ
    if env.get(names.IDEMPOTENCY_DISABLED_ENV, "").strip().lower() not in _TRUE:
        return False
    if in_lambda(env):
        raise IdempotencyDisabledError(
            f"{names.IDEMPOTENCY_DISABLED_ENV} is set in Lambda's execution environment; it switches deduplication off and is "
            "meant for unit tests only: remove it from the function's environment")
    return True
