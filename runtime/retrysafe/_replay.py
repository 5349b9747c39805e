"""``on_replay=``: what every adapter tells a hook about a replay, and how it hands the hook the answer.

A replay is an answer that did not run the handler: a stored record's result, or (while cutting
over, ``powertools_cutover=``) the answer of Powertools' record. The engine describes it with a
:class:`ReplayInfo` (from the record it already read: no DynamoDB call of its own); each adapter
calls the hook with the answer exactly as it would return it and returns what the hook returns.
First executions never reach the hook.

The information is public by construction: the record's id is a hash of the scope
(:attr:`retrysafe.Scope.record_id`), never the raw key, and neither the fingerprint nor anything
selected from the request is in it, so a hook may log or export all of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ._value import Value, set_field

#: Where a replayed answer came from: retrysafe's record, or Powertools' during a cut-over.
ReplaySource = Literal["retrysafe", "powertools"]


class ReplayInfo(Value):
    """The public metadata of a replay, given to ``on_replay`` hooks.

    - ``record_id``: the record's partition key (``idem#`` and a hash of adapter, subscriber,
      tenant, operation and key): safe to log, never the raw key. ``None`` for an answer adopted
      from Powertools that retrysafe recorded nowhere (a request without a key, a 5xx);
    - ``expires_at``: when the record expires, epoch seconds (the table's TTL attribute ``exp``);
      until then every retry gets this answer. Powertools' own expiry for an answer recorded nowhere;
    - ``executed_at``: when the execution that produced the answer started, epoch seconds (for a record
      that holds an answer adopted from Powertools: when it was adopted); ``None`` when the answer is
      being adopted from Powertools right now (its record does not say);
    - ``source``: ``"retrysafe"`` (the answer of retrysafe's record), or ``"powertools"`` for an answer
      taken from Powertools' record by this very call (``powertools_cutover=``).
    """

    __slots__ = ("executed_at", "expires_at", "record_id", "source")

    executed_at: float | None
    expires_at: int | None
    record_id: str | None
    source: ReplaySource

    def __init__(self, record_id: str | None, expires_at: int | None, executed_at: float | None = None,
                 source: ReplaySource = "retrysafe") -> None:
        set_field(self, "record_id", record_id)
        set_field(self, "expires_at", expires_at)
        set_field(self, "executed_at", executed_at)
        set_field(self, "source", source)


#: The ``on_replay=`` option of every adapter: ``hook(answer, info) -> answer``. ``answer`` is what the
#: adapter would return for the replay (the proxy response dict over HTTP, the Powertools ``Response``
#: in the middleware, the function's result, a record handler's replayed result, a task's output);
#: what the hook returns is returned instead.
ReplayHook = Callable[[Any, ReplayInfo], Any]


def replayed(hook: ReplayHook | None, answer: Any, info: ReplayInfo | None) -> Any:
    """``answer``, passed through ``hook`` when it is a replay (``info``) and there is a hook.

    A hook that raises propagates as the handler's error would: the record stays as it is (nothing is
    released, run or written again), so the next retry replays, and calls the hook, again.
    """
    if hook is None or info is None:
        return answer
    return hook(answer, info)
