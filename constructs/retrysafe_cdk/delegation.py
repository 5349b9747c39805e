"""Implementing a jsii interface by delegating to a wrapped L2 resource (as ``IFunction`` to a ``Function``).

jsii calls back into Python only for members a class defines itself, so each member of the
interface gets a small delegating method or property on the class. A call from JavaScript
passes structs positionally and is forwarded through jsii unchanged; a call from Python with
keyword arguments goes to the wrapped object's Python method.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jsii


def _method(name: str, jsii_name: str, target: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        inner = getattr(self, target)
        if kwargs:
            return getattr(inner, name)(*args, **kwargs)
        return jsii.invoke(inner, jsii_name, list(args))

    method.__name__ = name
    method.__doc__ = f"Delegates to ``{target}.{name}``."
    return method


def _property(name: str, target: str) -> property:
    return property(lambda self: getattr(getattr(self, target), name), doc=f"``{target}.{name}``.")


def delegate(interface: type, target: str, *, skip: tuple[str, ...] = ("node",)) -> Callable[[type], type]:
    """Class decorator: every member of the jsii ``interface`` not defined by the class delegates to ``target``."""

    def apply(cls: type) -> type:
        for name in dir(interface):
            if name.startswith("_") or name in skip or name in cls.__dict__:
                continue
            original = getattr(interface, name)
            if inspect.isfunction(original) and hasattr(original, "__jsii_name__"):
                setattr(cls, name, _method(name, original.__jsii_name__, target))
            elif isinstance(original, property) and hasattr(original.fget, "__jsii_name__"):
                setattr(cls, name, _property(name, target))
        return cls

    return apply
