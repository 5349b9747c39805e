"""What the record codec stores for a result: its text, JSON plus tagged types.

JSON values are stored as they are, as compact JSON text. A result that also
holds ``Decimal`` (what boto3's resource API returns), ``datetime``, ``date``,
``time``, ``UUID``, ``bytes``/``bytearray`` or ``set``/``frozenset``
is stored as *tagged* JSON (``{"$": "dec", "v": "12.50"}``), marked by a
leading ``$`` on the stored text (no JSON text starts with one), and replays
as the same types. A dataclass instance or a pydantic model inside a result
is stored as its fields (a dict); a serializer (:mod:`retrysafe._results`) turns
it back into its class. Anything else (an arbitrary object, a circular structure)
cannot be stored: :class:`~retrysafe.errors.UnstorableResultError` when the handler
returns, before anything is committed (see the engine for what happens to the claim).

Every adapter's records go through this module, so it imports neither ``dataclasses``
(nor the ``inspect`` that comes with it), ``uuid`` nor pydantic: a dataclass, a UUID or a
model exists only once its module was imported, so each is looked up in ``sys.modules``.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Callable, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from .errors import UnstorableResultError

#: The first character of a stored result text holding tags (JSON text never starts with ``$``).
TAGGED = "$"
_TAG = "$"

_encode_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def is_model_class(cls: Any) -> bool:
    """True for a pydantic model class (without importing pydantic)."""
    pydantic = sys.modules.get("pydantic")  # a model class exists only once pydantic was imported
    return pydantic is not None and isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)


def is_model(value: Any) -> bool:
    """True for an instance of a pydantic model (without importing pydantic)."""
    return is_model_class(type(value))


def is_dataclass_instance(value: Any) -> bool:
    """True for an instance of a dataclass (without importing dataclasses)."""
    dataclasses = sys.modules.get("dataclasses")  # a dataclass exists only once dataclasses was imported
    return dataclasses is not None and not isinstance(value, type) and bool(dataclasses.is_dataclass(value))


def _is_uuid(value: Any) -> bool:
    uuid = sys.modules.get("uuid")  # a UUID exists only once uuid was imported
    return uuid is not None and isinstance(value, uuid.UUID)


def _uuid(text: str) -> Any:
    from uuid import UUID  # only a stored UUID needs the module: see the module docstring

    return UUID(text)


def _fields(value: Any) -> dict[str, Any]:
    """The fields of a dataclass instance, by name."""
    import dataclasses  # loaded already: ``value`` is an instance of a dataclass

    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


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
        if isinstance(value, (set, Mapping)) or is_dataclass_instance(value) or is_model(value):
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
    if _is_uuid(value):
        return {_TAG: "uuid", "v": str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {_TAG: "b64", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        # Sorted by their stored text: the same set is stored the same way, whatever its iteration order.
        items = sorted((_document(item, member=True) for item in value), key=_encode_json)
        return {_TAG: "fset" if isinstance(value, frozenset) else "set", "v": items}
    if is_dataclass_instance(value):
        return _document(_fields(value))
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
    "uuid": _uuid,
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
