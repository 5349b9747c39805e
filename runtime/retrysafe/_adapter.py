"""The wiring every adapter shares, written once.

- :class:`SubscriberName` and :func:`qualified_name`: the default scope. Records belong to a
  subscriber (``subscriber=``, else the deployed function: :func:`deployed_function`) and an
  operation (``operation=``, else the handler's ``module.qualname``), so two deployed functions, or
  two functions of one name in two modules, never share records unless the user names one scope
  for both on purpose;
- :func:`takes_transaction` and :func:`chosen_mode`: the mode follows the handler (atomic when it
  takes the transaction, claim-first when it does not: its effects are elsewhere);
- :class:`Wired`: the retention (``horizon_seconds``, else the environment), the engine
  (``engine=``, else one on ``store=``, else ``DynamoStore.from_env()``) and the Powertools
  cut-over of an adapter, made at its first call (at decoration inside Lambda);
- :func:`flushes_telemetry`: an entry point that flushes the invocation's
  metrics on the way out, whatever happens;
- :func:`takes_options` and :func:`lambda_entry_point`: a decorator usable bare
  (``@idempotent_task``) or with options (``@idempotent_sqs(subscriber="billing")``),
  whose Lambda handler carries its configuration as an attribute and makes its context the
  current invocation's while it runs. The options are the
  builder's own keyword-only parameters, typed: mypy refuses a misspelled or mistyped
  option, and a required one that is missing (``tests/typing/api.py`` proves it).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, overload

from ._config import Mode, Retention, in_lambda
from ._cutover import Cutover, PowertoolsCutover, cutover
from ._engine import Engine
from ._invocation import Invocation
from ._observability import telemetry
from ._store import INIT_PHASE_ENV, DynamoStore
from .errors import ConfigurationError
from .names import LAMBDA_FUNCTION_NAME_ENV, LOCAL_SUBSCRIBER, SUBSCRIBER_ENV

H = TypeVar("H")
L = TypeVar("L")
H_contra = TypeVar("H_contra", contravariant=True)
L_co = TypeVar("L_co", covariant=True)
F = TypeVar("F", bound=Callable[..., Any])
#: The options: the builder's parameters after the handler (keyword-only, typed).
O = ParamSpec("O")


def deployed_function() -> str:
    """The deployed function's name, the default subscriber of every adapter.

    ``RETRYSAFE_SUBSCRIBER`` where the constructs set it (a name derived from the construct's path,
    which survives the function's replacement), else the Lambda function's name
    (``AWS_LAMBDA_FUNCTION_NAME``: a rename or a replacement with a generated name starts new
    records), else ``"local"`` outside Lambda (tests, scripts).
    """
    return os.environ.get(SUBSCRIBER_ENV) or os.environ.get(LAMBDA_FUNCTION_NAME_ENV) or LOCAL_SUBSCRIBER


def qualified_name(func: Any) -> str:
    """``module.qualname`` of a handler or function: the default operation of the adapters that have one."""
    module = getattr(func, "__module__", None)
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__qualname__
    return f"{module}.{name}" if module else str(name)


class SubscriberName:
    """An adapter's ``subscriber=`` option: the name given, else :func:`deployed_function`, read at first use.

    Read at the first call, not at import or decoration, so a test that sets the environment after
    importing a decorated handler gets what it set.
    """

    __slots__ = ("_name",)

    def __init__(self, named: str | None) -> None:
        if named is not None and (not isinstance(named, str) or not named.strip() or named != named.strip()):
            raise ConfigurationError("subscriber= must be a non-empty name without leading or trailing spaces; "
                                     "omit it to scope the records by the deployed function")
        self._name = named

    def __call__(self) -> str:
        """The subscriber's name."""
        if self._name is None:
            self._name = deployed_function()
        return self._name
def positive_lease(lease_seconds: float | None) -> float | None:
    """``lease_seconds=`` when positive or ``None`` (the invocation's remaining time); else :class:`ConfigurationError`."""
    if lease_seconds is not None and not lease_seconds > 0:
        raise ConfigurationError(f"lease_seconds must be positive, got {lease_seconds}")
    return lease_seconds


#: ``co_flags`` bit of a function taking ``*args``.
_VARARGS = 0x04


def takes_transaction(handler: Any, positional: int) -> bool:
    """True when ``handler`` takes the transaction: a ``txn`` parameter, ``positional`` positional
    parameters, or ``*args``; read from its code object (no ``inspect`` import on the cold path).

    A callable whose code cannot be read (a builtin, a ``functools.partial``, an object with
    ``__call__``) is taken to have the documented form, with the transaction.
    """
    skipped = 0
    target = handler
    if hasattr(target, "__func__"):  # a bound method: its self is not the caller's to pass
        target, skipped = target.__func__, 1
    code = getattr(target, "__code__", None)
    if code is None:
        return True
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return TXN in names or bool(code.co_flags & _VARARGS) or code.co_argcount - skipped >= positional


#: The name of the parameter through which handlers and functions take their transaction.
TXN = "txn"


def chosen_mode(mode: Mode | str | None, takes_txn: bool) -> Mode:
    """``mode=`` when given, else atomic for a handler that takes the transaction, claim-first for one that does not."""
    if mode is not None:
        return Mode.parse(mode)
    return Mode.ATOMIC if takes_txn else Mode.CLAIM_FIRST


class Wired:
    """An adapter's retention, engine and Powertools cut-over, made from its options and the environment.

    Outside Lambda they are made at the first call, not at import or decoration: a test suite sets
    ``RETRYSAFE_TABLE`` (or creates its moto table) after importing a decorated handler, as it does
    for Powertools. Each is a :func:`functools.cached_property`: made once, then a plain attribute,
    so later calls pay nothing. Inside Lambda's execution environment (:func:`~retrysafe._config.in_lambda`,
    or its init phase: ``AWS_LAMBDA_INITIALIZATION_TYPE``) the function's environment cannot change, so
    :meth:`wire` makes them at once: a configuration error fails the cold start, and the store's client
    is made in the init phase (before a SnapStart snapshot, :mod:`retrysafe._snapstart`). :func:`retrysafe.testing.use_store` swaps the engine.
    """

    _horizon_seconds: int | None
    _store: DynamoStore | None
    _engine: Engine | None
    _powertools_cutover: PowertoolsCutover | None

    def wire(self, horizon_seconds: int | None, store: DynamoStore | None, engine: Engine | None,
             powertools_cutover: PowertoolsCutover | None = None) -> None:
        """Keep the options; inside Lambda, make everything now (configuration errors at cold start)."""
        self._horizon_seconds = horizon_seconds
        self._store = store
        self._engine = engine
        self._powertools_cutover = powertools_cutover
        if in_lambda() or INIT_PHASE_ENV in os.environ:
            self.retention  # noqa: B018
            self.engine  # noqa: B018
            self.cutover  # noqa: B018

    @functools.cached_property
    def retention(self) -> Retention:
        """How long records live (``horizon_seconds=``, else ``RETRYSAFE_RETRY_HORIZON_SECONDS``)."""
        return Retention.from_env(horizon_seconds=self._horizon_seconds)

    @functools.cached_property
    def engine(self) -> Engine:
        """``engine=``, else one on ``store=``, else on ``DynamoStore.from_env()`` (``RETRYSAFE_TABLE``)."""
        if self._engine is not None:
            return self._engine
        return Engine(self._store or DynamoStore.from_env())

    @functools.cached_property
    def cutover(self) -> Cutover | None:
        """The Powertools cut-over (``powertools_cutover=``) on the engine's store, or ``None``."""
        return cutover(self._powertools_cutover, self.engine, self.adopt, self.adopts)

    def adopt(self, response: Any) -> Any:
        """The stored result of a response Powertools stored (JSON, decoded): by default the same value."""
        return response

    def adopts(self, result: Any) -> bool:
        """Whether an answer adopted from Powertools is stored where this adapter would store it: by default yes."""
        return True


def flushes_telemetry(entry: F) -> F:
    """``entry``, flushing the invocation's telemetry (EMF metrics) when it returns or raises."""

    @functools.wraps(entry)
    def flushing(*args: Any, **kwargs: Any) -> Any:
        try:
            return entry(*args, **kwargs)
        finally:
            telemetry.flush()

    return flushing  # type: ignore[return-value]  # same signature as entry


class OptionTaking(Protocol[H_contra, O, L_co]):
    """A decorator used bare (``@decorator``) or with options (``@decorator(option=...)``).

    Both forms are checked against the builder's signature: the bare form only when no option is
    required, the call form option by option.
    """

    @overload
    def __call__(self, func: H_contra, /, *args: O.args, **options: O.kwargs) -> L_co: ...

    @overload
    def __call__(self, func: None = None, /, *args: O.args, **options: O.kwargs) -> Callable[[H_contra], L_co]: ...


def takes_options(build: Callable[Concatenate[H, O], L]) -> OptionTaking[H, O, L]:
    """Turn ``build(func, *, option=default...)`` into a decorator usable bare or with those options."""

    @functools.wraps(build)
    def decorator(func: Any = None, /, *args: Any, **options: Any) -> Any:
        if func is None:
            return lambda f: build(f, *args, **options)
        return build(func, *args, **options)

    return decorator


def lambda_entry_point(func: Callable[..., Any], entry: Callable[[Any, Any], Any], **configuration: Any) -> Any:
    """``entry`` dressed as ``func`` (name, docstring) with its configuration attached (e.g. ``.consumer``).

    Its Lambda context is the current invocation's while it runs (:mod:`retrysafe._invocation`): the
    claims of the functions the handler calls last as long as the invocation can.
    """

    def invoked(event: Any, context: Any) -> Any:
        with Invocation(context):
            return entry(event, context)

    functools.update_wrapper(invoked, func)
    for name, value in configuration.items():
        setattr(invoked, name, value)
    return invoked
