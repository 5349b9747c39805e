"""A tiny base for immutable value objects with ``__slots__``.

The runtime avoids :mod:`dataclasses` on the import path of a handler:
creating a dataclass runs generated code at import time (about half a
millisecond each), which adds up to a noticeable share of a cold start.
"""

from __future__ import annotations

from typing import Any


class Value:
    """Equality, hashing and ``repr`` from ``__slots__``; instances are not meant to be mutated."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> list[str]:
        return [name for name in self.__slots__ if not name.startswith("_")]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{type(self).__name__}({fields})"
