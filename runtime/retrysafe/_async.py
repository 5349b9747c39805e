"""``async def`` handlers and functions, run by the one engine.

The engine (:mod:`retrysafe._engine`) is synchronous: its DynamoDB calls go through botocore, and its
flow calls the work once, in the middle of the claim and the commit. Async code plugs into that call
and nowhere else, so an async handler writes the same records, with the same fencing, modes and round
trips, as its sync twin.

Lambda entry points (every handler decorator)
    Lambda's Python runtime calls a handler synchronously, so a decorated ``async def`` handler is the
    sync ``(event, context)`` Lambda handler, and the engine's call of the handler runs the coroutine to
    completion on an event loop of the execution environment (:func:`blocking`): one loop per thread,
    made at the first call and reused by every later invocation, so a client made on it (an aiohttp
    session, an aioboto3 client kept in a global) still works in the next warm invocation. The coroutine
    runs in a copy of the invocation's context (``contextvars``). Called where a loop is already running,
    the entry point raises :class:`~retrysafe.errors.ConfigurationError`: a Lambda handler is not awaited.
``@idempotent_function`` on an ``async def`` (:func:`awaited`)
    The wrapper is an ``async def`` awaited on the caller's loop. The engine's flow runs in a worker
    thread (a pool that reuses idle threads and never makes a call wait for one: a bounded pool could
    deadlock when idempotent functions nest), so its DynamoDB calls never block the loop; at the call
    step that thread schedules the coroutine on the caller's loop and waits for it. The function runs
    on the caller's loop, as a task, in a copy of the caller's context. If the awaiting task is
    cancelled before the engine has taken the function's result, the function's task is
    cancelled and the engine never commits: the claim is released (only its lease ends when it holds a
    checkpoint), atomic work writes nothing, and the cancellation reaches the caller once that is done.
    Cancelled later, the commit goes ahead (the retry replays it); the caller is cancelled after it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ConfigurationError

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures

T = TypeVar("T")

#: ``co_flags`` bit of an ``async def`` function (``inspect.CO_COROUTINE``), read without importing
#: :mod:`inspect` or :mod:`asyncio` on a sync handler's cold path.
_COROUTINE = 0x80

_local = threading.local()
_pool_lock = threading.Lock()
#: ``max_workers`` of the flows' pool: never reached (see :func:`_flows`).
_UNBOUNDED = 1 << 20


def is_async(func: Any) -> bool:
    """True when ``func`` (a function, a bound method) is an ``async def``; read from its code object."""
    target = getattr(func, "__func__", func)
    code = getattr(target, "__code__", None)
    return code is not None and bool(code.co_flags & _COROUTINE)


def blocking(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` as the engine calls it: itself when sync; an ``async def`` run to completion (module docstring)."""
    if not is_async(handler):
        return handler

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Any:
        return run_to_completion(handler(*args, **kwargs))

    return run


def run_to_completion(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on this thread's loop of the execution environment; refused inside a running loop."""
    import asyncio
    import contextvars

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coroutine.close()  # never awaited: closed so Python does not warn about it
        raise ConfigurationError("an async handler decorated as a Lambda entry point was called where an event loop "
                                 "is already running: Lambda calls it synchronously, and so must its caller "
                                 "(await an @idempotent_function instead)")
    runner: asyncio.Runner | None = getattr(_local, "runner", None)
    if runner is None:
        runner = _local.runner = asyncio.Runner()
    return runner.run(coroutine, context=contextvars.copy_context())


async def awaited(flow: Callable[[Callable[[Coroutine[Any, Any, Any]], Any]], T]) -> T:
    """Run the engine's ``flow(wait)`` in a thread; ``wait(coroutine)`` runs a coroutine on the caller's loop."""
    import asyncio
    import contextvars

    loop = asyncio.get_running_loop()
    bridge = _Bridge(loop)
    done: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(error: BaseException | None, result: Any) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def run_flow() -> None:
        try:
            result = context.run(flow, bridge.wait)
        except BaseException as error:  # noqa: BLE001  # handed to the awaiting task, which raises it
            outcome: tuple[BaseException | None, Any] = (error, None)
        else:
            outcome = (None, result)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the caller's loop is closed: nobody is left to answer
            pass

    _flows().submit(run_flow)
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        bridge.cancel()
        try:  # wait until the engine has released the claim (or written nothing), then be cancelled
            await done
        except BaseException:  # noqa: BLE001, S110  # the cancellation below is the answer
            pass
        raise


def _flows() -> concurrent.futures.ThreadPoolExecutor:
    """The threads the engine's flows run in: idle ones are reused, and new ones are made without a bound,
    because a bounded pool deadlocks when idempotent functions nest (each level holds a thread while it
    awaits the next). There are as many as the most calls ever in flight at once."""
    import concurrent.futures

    with _pool_lock:
        pool: concurrent.futures.ThreadPoolExecutor | None = getattr(_flows, "pool", None)
        if pool is None:
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=_UNBOUNDED,
                                                         thread_name_prefix="retrysafe-function")
            _flows.pool = pool  # type: ignore[attr-defined]
        return pool


class _Bridge:
    """The call step of one awaited flow: the coroutine on the caller's loop, cancelled with its caller."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.cancelled = False
        self.task: asyncio.Task[Any] | None = None

    def wait(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """From the flow's thread: ``coroutine``'s result; ``CancelledError`` once the caller was cancelled."""
        import asyncio
        import concurrent.futures

        with self.lock:
            if self.cancelled:
                coroutine.close()
                raise asyncio.CancelledError
            future = asyncio.run_coroutine_threadsafe(self._tracked(coroutine), self.loop)
        try:
            result = future.result()
        except concurrent.futures.CancelledError:
            raise asyncio.CancelledError from None
        if self.cancelled:  # the function finished, but its caller is gone: commit nothing
            raise asyncio.CancelledError
        return result

    async def _tracked(self, coroutine: Coroutine[Any, Any, T]) -> T:
        import asyncio

        with self.lock:  # runs on the loop, as does cancel(): one of them sees the other
            if self.cancelled:
                coroutine.close()
                raise asyncio.CancelledError
            self.task = asyncio.current_task()
        return await coroutine

    def cancel(self) -> None:
        """On the caller's loop: the caller was cancelled; cancel the function's task if it runs."""
        with self.lock:
            self.cancelled = True
            task = self.task
        if task is not None:
            task.cancel()
