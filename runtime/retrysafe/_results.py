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
import inspect
import types
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints

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

    Fields annotated with a dataclass (or a pydantic model), with ``X | None`` of one, or with
    ``list``/``tuple``/``dict`` of one, are rebuilt as that class; other fields come back as the
    codec stores them (``Decimal``, ``datetime``... keep their types).

    A replay builds the instance with ``__init__`` from the stored fields it takes (so
    ``__post_init__`` runs again: its validation applies, and so would any side effect, so
    keep those out of it), then sets every stored field, ``init=False`` ones included, to its
    stored value (``object.__setattr__``, frozen dataclasses too): a replay's fields are the
    first call's, whatever ``__post_init__`` computes now.
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


class OptionalSerializer(Generic[T]):
    """A result annotated ``X | None`` (``Optional[X]``): ``None`` replays as ``None``, anything else as ``inner``'s."""

    def __init__(self, inner: ResultSerializer[T]) -> None:
        self.inner = inner

    def dump(self, result: T | None, /) -> Any:
        """``None``, or what ``inner`` stores for ``result``."""
        if result is None:
            return None
        stored = self.inner.dump(result)
        if stored is None:  # e.g. a pydantic RootModel of None: it would replay as None, not as the model
            raise UnstorableResultError(f"the result is a {type(result).__name__} stored as null; it would "
                                        "replay as None, not as what the first call returned")
        return stored

    def load(self, stored: Any, /) -> T | None:
        """``None``, or what ``inner`` replays from ``stored``."""
        return None if stored is None else self.inner.load(stored)


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
    members = _union_members(annotation)
    if members is not None:
        return any(_rebuilds(member) for member in members)
    origin = get_origin(annotation)
    if origin is tuple:
        return True
    return origin in (list, dict) and any(_rebuilds(argument) for argument in get_args(annotation))


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    """The members of ``Union[...]`` or ``X | Y`` (``None`` as ``NoneType``), else ``None``."""
    return get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else None


def _without_none(annotation: Any) -> tuple[Any, bool]:
    """``(X, True)`` for ``X | None``; ``(annotation, False)`` for anything else (other unions included)."""
    members = _union_members(annotation)
    if members is not None and type(None) in members:
        kinds = [member for member in members if member is not type(None)]
        if len(kinds) == 1:
            return kinds[0], True
    return annotation, False


def serializer_for(func: Callable[..., Any]) -> ResultSerializer[Any]:
    """The serializer ``func``'s return annotation asks for (a dataclass or pydantic model class), else :class:`StoredAsIs`.

    ``X | None`` (``Optional[X]``) is ``X``'s serializer, with ``None`` stored and replayed as
    ``None``. Raises :class:`~retrysafe.errors.ConfigurationError` for what a replay could not
    rebuild: an annotation that does not resolve, a union of two or more types one of which is
    a dataclass or model (the stored fields do not say which class they were; pass
    ``serializer=``), a dataclass whose ``__init__`` its stored fields cannot call (an
    ``InitVar`` without a default).
    """
    where = f"the return annotation of {getattr(func, '__qualname__', func)!r}"
    annotation: Any = _hints(func, where).get("return")
    _check(annotation, where, set())
    inner, optional = _without_none(annotation)
    serializer: ResultSerializer[Any]
    if isinstance(inner, type) and dataclasses.is_dataclass(inner):
        serializer = DataclassSerializer(inner)
    elif is_model_class(inner):
        serializer = PydanticSerializer(inner)
    elif get_origin(inner) in (tuple, list, dict) and _rebuilds(inner):
        serializer = AnnotationSerializer(inner)
    else:
        return StoredAsIs()
    return OptionalSerializer(serializer) if optional else serializer


def _hints(target: Any, where: str) -> dict[str, Any]:
    """``target``'s resolved annotations (a function's or a dataclass's)."""
    try:
        return get_type_hints(target)
    except (NameError, TypeError) as error:  # e.g. a class imported only under TYPE_CHECKING
        raise ConfigurationError(f"{where} does not resolve ({error}): a replay could not rebuild the "
                                 "result's type; import the class at run time or pass serializer=") from None


def _check(annotation: Any, where: str, seen: set[type]) -> None:
    """Refuses, when decorating, an ``annotation`` a replay could not rebuild as the first call's result.

    Walks what :func:`_build` walks: unions, ``list``/``tuple``/``dict`` and the fields of
    dataclasses (``seen``: those already walked, for dataclasses that refer to themselves).
    """
    members = _union_members(annotation)
    if members is not None:
        kinds = [member for member in members if member is not type(None)]
        if len(kinds) > 1 and any(_rebuilds(kind) for kind in kinds):
            names = " | ".join(getattr(kind, "__qualname__", repr(kind)) for kind in kinds)
            raise ConfigurationError(
                f"{where} is {names}: a union of two or more types, one of them a dataclass or pydantic model, "
                "cannot be replayed (its stored fields do not say which class they were). Annotate one class "
                "(X | None is fine) or pass serializer=")
        for kind in kinds:
            _check(kind, where, seen)
    elif isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation) and annotation not in seen:
            seen.add(annotation)
            _check_init(annotation)
            hints = _hints(annotation, f"a field annotation of {annotation.__qualname__}")
            for item in dataclasses.fields(annotation):
                _check(hints.get(item.name), f"the field {annotation.__qualname__}.{item.name}", seen)
    elif get_origin(annotation) in (list, tuple, dict):
        for argument in get_args(annotation):
            _check(argument, where, seen)


def _check_init(cls: type) -> None:
    """Refuses a dataclass whose ``__init__`` cannot be called with its ``init`` fields alone, as a replay does."""
    names = [item.name for item in dataclasses.fields(cls) if item.init]
    try:
        inspect.signature(cls).bind(**dict.fromkeys(names))
    except (TypeError, ValueError) as error:
        raise ConfigurationError(
            f"{cls.__qualname__}.__init__ cannot be called with its stored fields alone ({error}), as a replay "
            "calls it: give the InitVar (or the parameter of its own __init__) a default, or pass serializer=") \
            from None


def _build(annotation: Any, stored: Any) -> Any:
    """``stored`` rebuilt as ``annotation`` where that is a dataclass or a model (also in list/tuple/dict)."""
    if isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation) and isinstance(stored, dict):
            return _build_dataclass(annotation, stored)
        if is_model_class(annotation):
            return annotation.model_validate(stored)  # type: ignore[attr-defined]
        return stored
    members = _union_members(annotation)
    if members is not None:
        # serializer_for refused a union of two types of which one is rebuilt: at most one is left
        kinds = [member for member in members if member is not type(None)]
        return _build(kinds[0], stored) if stored is not None and len(kinds) == 1 else stored
    origin = get_origin(annotation)
    arguments: tuple[Any, ...] = get_args(annotation)
    if origin in (list, tuple) and isinstance(stored, (list, tuple)) and arguments:
        if origin is tuple and Ellipsis not in arguments and len(arguments) == len(stored):  # tuple[A, B]
            items = [_build(kind, item) for kind, item in zip(arguments, stored, strict=True)]
        else:
            items = [_build(arguments[0], item) for item in stored]
        return tuple(items) if origin is tuple else items
    if origin is dict and isinstance(stored, dict) and len(arguments) == 2:
        return {name: _build(arguments[1], value) for name, value in stored.items()}
    return stored


def _build_dataclass(cls: type, stored: dict[str, Any]) -> Any:
    """An instance of ``cls`` with the stored fields: built with its ``init`` fields, then every field set.

    ``init=False`` fields are not ``__init__`` parameters; the fields ``__post_init__``
    computes or changes are set back to what the first call stored.
    """
    hints = get_type_hints(cls)
    values = {item.name: (item, _build(hints.get(item.name), stored[item.name]))
              for item in dataclasses.fields(cls) if item.name in stored}
    instance = cls(**{name: value for name, (item, value) in values.items() if item.init})
    for name, (_item, value) in values.items():
        object.__setattr__(instance, name, value)  # frozen dataclasses refuse setattr()
    return instance
