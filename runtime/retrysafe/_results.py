"""How results are stored and replayed: the record's value codec and the result serializers.

What the record codec stores (every adapter's results, no option needed)
    JSON values are stored as they are, as compact JSON text. A result that also
    holds ``Decimal`` (what boto3's resource API returns), ``datetime``, ``date``,
    ``time``, ``UUID``, ``bytes``/``bytearray`` or ``set``/``frozenset``
    is stored as *tagged* JSON (``{"$": "dec", "v": "12.50"}``), marked by a
    leading ``$`` on the stored text (no JSON text starts with one), and replays
    as the same types. A dataclass instance or a pydantic model inside a result
    is stored as its fields (a dict); a serializer turns it back into its class.
    Anything else (an arbitrary object, a circular structure) cannot be stored:
    :class:`~retrysafe.errors.UnstorableResultError` when the handler returns,
    before anything is committed (see the engine for what happens to the claim).

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

import base64
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, Generic, Protocol, TypeVar, get_type_hints
from uuid import UUID

from .errors import ConfigurationError, UnstorableResultError

T = TypeVar("T")

#: The first character of a stored result text holding tags (JSON text never starts with ``$``).
TAGGED = "$"
_TAG = "$"

_encode_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


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
        if not _is_model_class(cls):
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
        return dataclasses.is_dataclass(annotation) or _is_model_class(annotation)
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
    if _is_model_class(annotation):
        return PydanticSerializer(annotation)
    if getattr(annotation, "__origin__", None) in (tuple, list, dict) and _rebuilds(annotation):
        return AnnotationSerializer(annotation)
    return StoredAsIs()


def _is_model_class(cls: Any) -> bool:
    pydantic = sys.modules.get("pydantic")  # a model class exists only once pydantic was imported
    return pydantic is not None and isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)


def is_model(value: Any) -> bool:
    """True for an instance of a pydantic model (without importing pydantic)."""
    return _is_model_class(type(value))


def _build(annotation: Any, stored: Any) -> Any:
    """``stored`` rebuilt as ``annotation`` where that is a dataclass or a model (also in list/tuple/dict)."""
    if isinstance(annotation, type):
        if dataclasses.is_dataclass(annotation) and isinstance(stored, dict):
            hints = get_type_hints(annotation)
            return annotation(**{name: _build(hints.get(name), value) for name, value in stored.items()})
        if _is_model_class(annotation):
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


# -- the record codec's tagged values ------------------------------------------------------------------


def encode_text(result: Any) -> str:
    """The stored text of ``result``: compact JSON, or ``$`` + tagged JSON when it holds tagged types.

    Raises :class:`~retrysafe.errors.UnstorableResultError` for what cannot be stored.
    """
    try:
        text = _encode_json(result)  # the C encoder: plain JSON results, the common case
    except (TypeError, ValueError):
        pass
    else:
        # The C encoder writes an int, float, bool or None member name as text: {17: 3} would replay as
        # {"17": 3}, and {1: "a", "1": "b"} would lose a member. A walk of the containers (no copy)
        # finds such names; a response-sized result costs a few microseconds.
        _check_names(result)
        return text
    document = to_document(result)
    return TAGGED + _encode_json(document)


def decode_text(text: str) -> Any:
    """The result stored as ``text`` (see :func:`encode_text`)."""
    if text.startswith(TAGGED):
        return from_document(json.loads(text[1:]))
    return json.loads(text)


def to_document(value: Any) -> Any:
    """``value`` as tagged JSON: JSON as itself, the tagged types as ``{"$": tag, "v": ...}``.

    A dict that has a ``$`` member is wrapped (``{"$": "map", "v": ...}``) so it never
    reads back as a tag.
    """
    try:
        return _document(value)
    except RecursionError:
        raise UnstorableResultError("the result is nested too deeply (or refers to itself) to be stored") from None


def _check_names(value: Any) -> None:
    """Refuses a dict member name that is not text, anywhere in ``value`` (JSON names are text)."""
    if isinstance(value, dict):
        for name, item in value.items():
            _name(name)
            if isinstance(item, (dict, list, tuple)):
                _check_names(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, (dict, list, tuple)):
                _check_names(item)


def _document(value: Any, member: bool = False) -> Any:
    """``value``'s tagged form; ``member``: ``value`` is a member of a set, so it must replay hashable."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if member:
        if isinstance(value, tuple):  # a list would replay unhashable: the tuple keeps its tag
            return {_TAG: "tup", "v": [_document(item, member=True) for item in value]}
        if isinstance(value, (set, Mapping)) or (dataclasses.is_dataclass(value) and not isinstance(value, type)) \
                or is_model(value):
            raise UnstorableResultError(f"a set in the result holds a {type(value).__name__}, which would replay "
                                        "as an unhashable dict or set: use a frozenset, a tuple or a list")
    if isinstance(value, Mapping):
        members = {_name(name): _document(item) for name, item in value.items()}
        return {_TAG: "map", "v": members} if _TAG in members else members
    if isinstance(value, (list, tuple)):  # a tuple as a list, as the C encoder writes it on the fast path
        return [_document(item) for item in value]
    if isinstance(value, Decimal):
        return {_TAG: "dec", "v": str(value)}
    if isinstance(value, datetime):
        return {_TAG: "dt", "v": value.isoformat()}
    if isinstance(value, date):
        return {_TAG: "date", "v": value.isoformat()}
    if isinstance(value, time):
        return {_TAG: "time", "v": value.isoformat()}
    if isinstance(value, UUID):
        return {_TAG: "uuid", "v": str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {_TAG: "b64", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        # Sorted by their stored text: the same set is stored the same way, whatever its iteration order.
        items = sorted((_document(item, member=True) for item in value), key=_encode_json)
        return {_TAG: "fset" if isinstance(value, frozenset) else "set", "v": items}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _document({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if is_model(value):
        return _document(value.model_dump(mode="python"))
    raise UnstorableResultError(
        f"a {type(value).__module__}.{type(value).__qualname__} in the result cannot be stored; return JSON, "
        "Decimal, datetime, date, time, UUID, bytes, set, a dataclass or a pydantic model, "
        "or pass serializer=")


def _name(name: Any) -> str:
    """A member name, which must be text: JSON would turn ``17`` into ``"17"`` (and merge ``1`` with ``"1"``)."""
    if isinstance(name, str):
        return name
    raise UnstorableResultError(f"a dict in the result has a {type(name).__name__} member name, which would "
                                "replay as text (or merge with a text name): use text names")


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "map": lambda members: {name: from_document(item) for name, item in members.items()},
    "dec": Decimal,
    "dt": datetime.fromisoformat,
    "date": date.fromisoformat,
    "time": time.fromisoformat,
    "uuid": UUID,
    "b64": base64.b64decode,
    "set": lambda items: {from_document(item) for item in items},
    "fset": lambda items: frozenset(from_document(item) for item in items),
    "tup": lambda items: tuple(from_document(item) for item in items),
}


def from_document(document: Any) -> Any:
    """The value :func:`to_document` encoded."""
    if isinstance(document, dict):
        tag = document.get(_TAG)
        if tag is not None:
            return _DECODERS[tag](document["v"])
        return {name: from_document(item) for name, item in document.items()}
    if isinstance(document, list):
        return [from_document(item) for item in document]
    return document
