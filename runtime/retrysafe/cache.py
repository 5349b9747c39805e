"""A bounded in-memory cache of completed records, per warm Lambda container.

Completed records never change until they expire, so a replay served from
here is correct and costs zero DynamoDB calls.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock

from .record import COMPLETED, Record


class RecordCache:
    """Least-recently-used cache of completed records, at most ``max_items`` of them."""

    def __init__(self, max_items: int = 1024) -> None:
        if max_items <= 0:
            raise ValueError("max_items must be positive")
        self.max_items = max_items
        self._items: OrderedDict[str, Record] = OrderedDict()
        self._lock = Lock()

    def get(self, record_id: str, now: float) -> Record | None:
        """The cached completed record, or ``None`` (absent or expired)."""
        with self._lock:
            record = self._items.get(record_id)
            if record is None:
                return None
            if record.is_expired(now):
                del self._items[record_id]
                return None
            self._items.move_to_end(record_id)
            return record

    def put(self, record: Record) -> None:
        """Remember a completed record."""
        if record.state != COMPLETED:
            return
        with self._lock:
            self._items[record.record_id] = record
            self._items.move_to_end(record.record_id)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
