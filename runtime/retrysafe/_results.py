"""How results are replayed as their types: the result serializers.

What the record codec stores (every adapter's results, no option needed) is
:mod:`retrysafe._tagged`'s: JSON plus tagged types (``Decimal``, ``datetime``, ``UUID``, ``bytes``,
sets...), dataclasses and pydantic models as their fields. Only ``@idempotent`` and
``@idempotent_function`` pick a serializer, so only they import this module (and its
``dataclasses``, which imports ``inspect``).

Result serializers (``serializer=`` of ``@idempotent`` and ``@idempotent_function``)
    A :class:`ResultSerializer` turns a result into a value the codec stores
    (``dump``) and a stored value back into the result (``load``, on replay).
    :func:`serializer_for` picks one from a return annotation: a dataclass or a
    pydantic v2 model class replays as an instance of that class, a ``tuple[...]``
    as a tuple, a ``list``/``dict`` of dataclasses or models as those; anything else
    is stored as the codec stores it. pydantic is imported only when a model is
    actually met: it is never a dependency of the runtime. A tuple is stored as a
    list, as JSON does (whether or not the result holds tagged types); a
    ``tuple[...]`` return annotation replays it as a tuple.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, get_type_hints

from ._tagged import is_model, is_model_class
from .errors import ConfigurationError, UnstorableResultError

T = TypeVar("T")


class ResultSerializer(Protocol[T]):
    """Turns a result into a value the record stores, and back (bring your own with ``serializer=``).

    ``dump`` returns JSON, optionally with the types the record codec tags
    (``Decimal``, ``datetime``, ``date``, ``time``, ``UUID``, ``bytes``, ``set``,
    ``frozenset``); it runs when the handler returns, before anything
    is committed. ``load`` gets what ``dump`` returned, read back from DynamoDB,
    and returns the result a replay answers with.
    """

    def dump(self, result: T, /) -> Any:
        """The value to store for ``result``."""
        ...

    def load(self, stored: Any, /) -> T:
        """The result a replay returns, from the stored value."""
        ...


class StoredAsIs:
    """The default serializer: the result is stored as the record codec stores it (JSON plus tagged types).

    A dataclass or pydantic model *as the result itself* is refused: it would replay as a
    dict. Annotate the return with its class (:func:`serializer_for`) or pass ``serializer=``.
    """

    def dump(self, result: Any, /) -> Any:
        """``result`` itself."""
        if (dataclasses.is_dataclass(result) and not isinstance(result, type)) or is_model(result):
            raise UnstorableResultError(
                f"the result is a {type(result).__name__} but the function's return annotation does not name "
                "that class: a replay would return a dict. Annotate the return type or pass serializer=")
        return result

    def load(self, stored: Any, /) -> Any:
        """``stored`` itself."""
        return stored


class DataclassSerializer(Generic[T]):
    """A dataclass result: stored as its fields, replayed as an instance of ``cls``.

    Fields annotated with a dataclass (or a pydantic model), or with ``list``/``tuple``/
    ``dict`` of one, are rebuilt as that class; other fields come back as the
    codec stores them (``Decimal``, ``datetime``... keep their types).
    """

    def __init__(self, cls: type[T]) -> None:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"{cls!r} is not a dataclass")
        self.cls = cls

    def dump(self, result: T, /) -> Any:
        """The fields of ``result`` (it must be an instance of ``cls``)."""
        if type(result) is not self.cls:
            raise UnstorableResultError(f"the result is a {type(result).__name__}, not the declared "
                                        f"{self.cls.__name__}; it would not replay as what the first call returned")
        return {f.name: getattr(result, f.name) for f in dataclasses.fields(self.cls)}  # type: ignore[arg-type]

    def load(self, stored: Any, /) -> T:
        """An instance of ``cls`` built from its stored fields."""
        return _build(self.cls, stored)  # type: ignore[no-any-return]


class PydanticSerializer(Generic[T]):
    """A pydantic v2 model result: stored as ``model_dump(mode="json")``, replayed with ``model_validate``."""

    def __init__(self, cls: type[T]) -> None:
        if not is_model_class(cls):
            raise TypeError(f"{cls!r} is not a pydantic model class")
        self.cls = cls

    def dump(self, result: T, /) -> Any:
        """The model's JSON form (its own serializers and aliases apply)."""
        if type(result) is not self.cls:
            raise UnstorableResultError(f"the result is a {type(result).__name__}, not the declared "
                                        f"{self.cls.__name__}; it would not replay as what the first call returned")
        return result.model_dump(mode="json")  # type: ignore[attr-defined]

    def load(self, stored: Any, /) -> T:
        """The model validated from its stored JSON form."""
        return self.cls.model_validate(stored)  # type: ignore[attr-defined,no-any-return]


class AnnotationSerializer:
    """A result annotated with a container type (``tuple[int, str]``, ``list[Order]``, ``dict[str, Order]``).

    Stored as the codec stores it; replayed rebuilt along the annotation: a tuple as a
    tuple, dataclasses and pydantic models inside as their classes.
    """

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation

    def dump(self, result: Any, /) -> Any:
        """``result`` itself (it must be of the annotation's container type)."""
        origin = self.annotation.__origin__
        if not isinstance(result, origin):
            raise UnstorableResultError(f"the result is a {type(result).__name__}, not the declared "
                                        f"{origin.__name__}; it would not replay as what the first call returned")
        return result

    def load(self, stored: Any, /) -> Any:
        """``stored`` rebuilt along the annotation."""
        return _build(self.annotation, stored)


def _rebuilds(annotation: Any) -> bool:
    """True when a replay of a value of type ``annotation`` differs from what the codec reads back."""
    if isinstance(annotation, type):
        return dataclasses.is_dataclass(annotation) or is_model_class(annotation)
    origin = getattr(annotation, "__origin__", None)
    if origin is tuple:
        return True
    return origin in (list, dict) and any(_rebuilds(argument) for argument in getattr(annotation, "__args__", ()))


def serializer_for(func: Callable[..., Any]) -> ResultSerializer[Any]:
    """The serializer ``func``'s return annotation asks for (a dataclass or pydantic model class), else :class:`StoredAsIs`."""
    try:
        annotation: Any = get_type_hints(func).get("return")
    except (NameError, TypeError) as error:  # e.g. a class imported only under TYPE_CHECKING
        raise ConfigurationError(f"the return annotation of {getattr(func, '__qualname__', func)!r} does not "
                                 f"resolve ({error}): a replay could not rebuild the result's type; import the "
                                 "class at run time or pass serializer=") from None
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return DataclassSerializer(annotation)
    if is_model_class(annotation):
        return PydanticSerializer(annotation)
    if getattr(annotation, "__origin__", None) in (tuple, list, dict) and _rebuilds(annotation):
        return AnnotationSerializer(annotation)
    return StoredAsIs()


def _build(annotation: Any, stored: Any) -> Any:
    """``stored`` rebuilt as ``annotation`` where that is a dataclass or a model (also in list/tuple/dict)."""
    if isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation) and isinstance(stored, dict):
            hints = get_type_hints(annotation)
            return annotation(**{name: _build(hints.get(name), value) for name, value in stored.items()})
        if is_model_class(annotation):
            return annotation.model_validate(stored)  # type: ignore[attr-defined]
        return stored
    origin = getattr(annotation, "__origin__", None)
    arguments: tuple[Any, ...] = getattr(annotation, "__args__", ())
    if origin in (list, tuple) and isinstance(stored, (list, tuple)) and arguments:
        if origin is tuple and Ellipsis not in arguments and len(arguments) == len(stored):  # tuple[A, B]
            items = [_build(kind, item) for kind, item in zip(arguments, stored, strict=True)]
        else:
            items = [_build(arguments[0], item) for item in stored]
        return tuple(items) if origin is tuple else items
    if origin is dict and isinstance(stored, dict) and len(arguments) == 2:
        return {name: _build(arguments[1], value) for name, value in stored.items()}
    return stored
