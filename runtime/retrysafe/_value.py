"""A tiny base for the runtime's immutable value objects: ``__slots__``, equality, hashing, ``repr``.

Where dataclasses are used and why: code on a handler's import path (the
adapters, the engine, the store, the outbox) builds its value objects on
:class:`Value` rather than :mod:`dataclasses`, because creating a dataclass runs
generated code at import time, which adds up to a noticeable share of a cold
start. Code that is never imported by a handler (:mod:`retrysafe.testing`, the
CDK constructs, the sandbox) uses ``@dataclass(frozen=True)``. Both give the
same promise:

- immutable: a field is set once, by the constructor (through :data:`set_field`,
  as a frozen dataclass does); assigning or deleting an attribute afterwards
  raises :class:`AttributeError`. Private slots (``_name``) hold caches derived
  from the fields, set at most once by the class itself, never compared;
- equal when of the same class with equal public fields, and then of equal hash;
- hashable: field values that are not hashable themselves (the ``dict`` of
  headers, a JSON result) are hashed by their content, frozen recursively.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

#: Sets a field of a :class:`Value` inside its constructor (``set_field(self, "name", value)``).
set_field = object.__setattr__


class Value:
    """Immutability, equality, hashing and ``repr`` from ``__slots__`` (see the module docstring)."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> list[str]:
        return [name for name in self.__slots__ if not name.startswith("_")]

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields())

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), _frozen(self._values())))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{type(self).__name__}({fields})"


def _frozen(value: Any) -> Any:
    """``value`` itself when hashable, else a hashable stand-in that is equal whenever the values are equal."""
    try:
        hash(value)
    except TypeError:
        pass
    else:
        return value
    if isinstance(value, Mapping):
        return frozenset((key, _frozen(item)) for key, item in value.items())
    if isinstance(value, (set, frozenset)):
        return frozenset(value)
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, bytearray):
        return bytes(value)
    raise TypeError(f"unhashable field value of type {type(value).__name__}")
