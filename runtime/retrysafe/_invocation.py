"""The Lambda invocation a call runs in: its remaining time sizes the claims of the functions it calls.

A handler adapter knows its invocation (``context``); a function decorated with
:func:`~retrysafe.idempotent_function` is called with its own arguments and does not. So every
retrysafe entry point (the decorated handlers, :class:`~retrysafe.IdempotencyMiddleware`, the
webhook receiver) makes its Lambda context the current one for the duration of the call, and a
handler retrysafe does not wrap (a Powertools batch processor's, a plain one) says it with
:func:`register_lambda_context`, as Powertools' ``config.register_lambda_context(context)`` does. A
function's claim then holds until the invocation can no longer be running (its remaining time plus
a margin), not the fixed ``RETRYSAFE_LEASE_SECONDS``: a longer run is never taken over while it is
alive, and a crashed one is taken over once its invocation has certainly ended.

The context is held in a :class:`~contextvars.ContextVar`: each thread or task sees the invocation
it was started in (a thread of a ``ThreadPoolExecutor`` starts with none: it falls back to the
fixed lease unless it runs in :func:`contextvars.copy_context`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

_current: ContextVar[Any] = ContextVar("retrysafe_lambda_context", default=None)


def register_lambda_context(context: Any) -> None:
    """Make ``context`` (the Lambda context of this invocation) the one whose remaining time sizes claims.

    Call it first in a handler retrysafe does not decorate, in every invocation, before it calls
    functions decorated with :func:`~retrysafe.idempotent_function`; inside a retrysafe handler it
    is done already. ``lease_seconds=`` on the function wins over it.

    Example::

        def lambda_handler(event, context):
            register_lambda_context(context)
            return process_order(order=event["order"])
    """
    _current.set(context)


class Invocation:
    """``context`` is the current invocation's while the block runs (an entry point's call).

    A class rather than a generator-based context manager: it runs on every invocation of every
    handler, and costs a third as much.
    """

    __slots__ = ("_context", "_token")

    _token: Token[Any]

    def __init__(self, context: Any) -> None:
        self._context = context

    def __enter__(self) -> None:
        self._token = _current.set(self._context)

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


def remaining_time() -> Callable[[], int] | None:
    """The current invocation's ``get_remaining_time_in_millis``; ``None`` when no invocation is known.

    A registered context whose time is up belongs to an invocation that has ended (a handler that
    registered it once and not again): it is not trusted to size a claim.
    """
    remaining = getattr(_current.get(), "get_remaining_time_in_millis", None)
    if remaining is None or remaining() <= 0:
        return None
    return remaining  # type: ignore[no-any-return]
