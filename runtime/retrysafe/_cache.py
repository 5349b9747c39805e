"""A bounded in-memory cache of completed records, per warm Lambda container.

A completed record never changes until it expires (no write path touches it; the
next intent may replace it only once ``exp`` has passed), so what a cache hit may
answer is exactly what DynamoDB would: the stored result for the same fingerprint
(a replay, zero DynamoDB calls) and a key-reuse mismatch for another one. It must
not, and does not, answer anything else: a pending claim is never cached (its
state moves), a record is dropped once its expiry has passed by the engine's
clock (the same clock DynamoDB's conditions compare against), and each store has
its own cache (record ids are unique per table only).

Each hit decodes the stored JSON text again, so a caller that mutates its answer
never changes what a later replay returns.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from threading import Lock

from ._record import COMPLETED, Record
from ._tagged import decode_text
from ._value import set_field

#: The default byte budget: what the interpreter holds for each entry's result text and record id, plus a
#: fixed overhead per entry.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
#: Bytes counted per entry besides its result text and record id (the record object, its short strings and
#: the map's slot).
ENTRY_OVERHEAD = 400


def entry_size(record_id: str, text: str) -> int:
    """The bytes an entry holds, as the interpreter stores its strings.

    Not the text's length: CPython keeps a string at 1, 2 or 4 bytes per character, whichever its widest
    character needs, so one emoji makes a result text four times its length in characters.
    """
    return sys.getsizeof(text) + sys.getsizeof(record_id) + ENTRY_OVERHEAD


class _Entry:
    """One cached record: the fields of the record without its result, the result's stored text, and its
    counted size (plain fields, not a :class:`Record`: a first request caches its record without building a
    second one)."""

    __slots__ = ("created_at_ms", "expires_at", "fingerprint", "operation", "owner", "resource", "size", "state",
                 "text")

    def __init__(self, record: Record, text: str, size: int) -> None:
        self.state = record.state
        self.fingerprint = record.fingerprint
        self.expires_at = record.expires_at
        self.created_at_ms = record.created_at_ms
        self.operation = record.operation
        self.owner = record.owner
        self.resource = record.resource
        self.text = text
        self.size = size


class RecordCache:
    """Least-recently-used cache of completed records, bounded by ``max_items`` and ``max_bytes``.

    ``max_bytes`` counts the memory of each entry's stored result text and record id
    (:func:`entry_size`: the interpreter's size, not a count of characters) plus :data:`ENTRY_OVERHEAD`; a result larger than a quarter of the budget is not
    cached (a replay of it goes to DynamoDB).
    """

    def __init__(self, max_items: int = 1024, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_items <= 0:
            raise ValueError("max_items must be positive")
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = Lock()

    def get(self, record_id: str, now: float) -> Record | None:
        """A copy of the cached completed record, or ``None`` (absent or expired at ``now``)."""
        with self._lock:
            entry = self._items.get(record_id)
            if entry is None:
                return None
            if entry.expires_at < now:  # as Record.is_expired
                self._drop(record_id)
                return None
            self._items.move_to_end(record_id)
        copy = Record(record_id=record_id, state=entry.state, fingerprint=entry.fingerprint,
                      expires_at=entry.expires_at, created_at_ms=entry.created_at_ms, operation=entry.operation,
                      owner=entry.owner, result=decode_text(entry.text), resource=entry.resource)
        set_field(copy, "_text", entry.text)  # the text it was decoded from, as from_item keeps it
        return copy

    def put(self, record: Record) -> None:
        """Remember a completed record (pending records and oversized results are ignored)."""
        if record.state != COMPLETED:
            return
        with self._lock:
            known = self._items.get(record.record_id)
            if known is not None and (known.owner, known.expires_at) == (record.owner, record.expires_at):
                self._items.move_to_end(record.record_id)  # the same write again (a replay of a cached record)
                return
        text = record.result_text
        size = entry_size(record.record_id, text)
        if size > self.max_bytes // 4:
            return
        entry = _Entry(record, text, size)
        with self._lock:
            if record.record_id in self._items:
                self._drop(record.record_id)
            self._items[record.record_id] = entry
            self._bytes += size
            while len(self._items) > self.max_items or self._bytes > self.max_bytes:
                _, oldest = self._items.popitem(last=False)
                self._bytes -= oldest.size

    def clear(self) -> None:
        """Forget every record (a test starting on an empty table, say)."""
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def _drop(self, record_id: str) -> None:
        self._bytes -= self._items.pop(record_id).size

    @property
    def size_bytes(self) -> int:
        """Bytes currently counted against ``max_bytes``."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)
