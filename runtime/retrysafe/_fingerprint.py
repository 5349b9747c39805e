"""Request fingerprints: a hash of a canonical form of what was asked (fingerprint scheme 2).

Only the hash is stored, never the payload. Two inputs that a handler would
read as different never share a canonical form; two serialisations of the
same JSON document always do.

JSON is canonicalised per RFC 8785 (JCS): no insignificant whitespace, object
members sorted by the UTF-16 code units of their names, strings escaped as
ECMAScript's ``JSON.stringify`` does, numbers in ECMAScript's Number-to-String
layout. RFC 8785 leaves three things open; here they are decided so:

* **Numbers** are written as the *exact* decimal value of their text in that
  layout. For every number written as the shortest decimal of an IEEE double
  (what JCS serialises) this is RFC 8785's output; numbers a double cannot hold
  (``9007199254740993``, ``0.10000000000000001``, ``1e400``) keep their exact
  value instead of collapsing onto a neighbour (``1.0``, ``1`` and ``1e0`` are one
  number).
* **Duplicate object names** and **lone surrogates** (``"\\ud800"``: not
  Unicode text) have no canonical form: :class:`~retrysafe.errors.InvalidInputError`.
* **Nesting** deeper than the interpreter's recursion limit allows:
  :class:`~retrysafe.errors.InvalidInputError`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterable
from typing import Any

from .errors import InvalidInputError

#: The fingerprint scheme this module implements (documented in the README; not part of the hash input).
SCHEME = 2

_encode_string = json.encoder.encode_basestring  # ECMAScript JSON.stringify escaping for valid text


def _not_encodable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is left to the full serialiser")


#: The C encoder behind ``JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True,
#: separators=(",", ":"))``, made once: ``encode()`` builds a new one per call, with a dict of the
#: containers being written to detect cycles, which a parsed document never has (1.6 of the 5.8 µs
#: that writing a 280-byte request body took).
_make_c_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_c_encoder = None if _make_c_encoder is None else \
    _make_c_encoder(None, _not_encodable, _encode_string, None, ":", ",", True, False, False)
_dumps_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"),
                                  check_circular=False, default=_not_encodable)


def _dumps(document: Any) -> str:
    if _c_encoder is None:  # an interpreter without the C accelerator
        return _dumps_encoder.encode(document)
    return "".join(_c_encoder(document, 0))


class _Number:
    """A number whose canonical text the C encoder cannot produce (exponent layout, huge integers)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _NotJson(Exception):
    pass


def _parse_int(text: str) -> Any:
    # Up to 21 digits ECMAScript writes an integer positionally, exactly as Python's int does.
    return int(text) if len(text) <= 21 else _exact(text)


def _parse_float(text: str) -> Any:
    if len(text) <= 16 and text[-1] != "0" and "e" not in text and "E" not in text and "0.000" not in text[:6]:
        # At most 15 digits, not integral, at least 1e-4, positional: a double holds this decimal as its
        # shortest form (15 digits round-trip), and Python's repr writes it as ECMAScript does.
        return float(text)
    return _exact(text)


def _exact(text: str) -> Any:
    """The exact value of a JSON number text, as the value the C encoder writes canonically if there is one."""
    negative, digits, exponent = _decimal(text)
    if not digits:
        return 0
    if exponent >= 0 and len(digits) + exponent <= 21:
        value = int(digits) * 10 ** exponent
        return -value if negative else value
    canonical = _layout(negative, digits, exponent)
    value = float(canonical)
    return value if repr(value) == canonical else _Number(canonical)


def _decimal(text: str) -> tuple[bool, str, int]:
    """(negative, significant digits without leading or trailing zeros, power of ten of the last digit)."""
    negative = text.startswith("-")
    mantissa, _, power = text.lstrip("-").lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent = (int(power) if power else 0) - len(fraction)
    stripped = digits.rstrip("0")
    return negative, stripped, exponent + len(digits) - len(stripped)


def _layout(negative: bool, digits: str, exponent: int) -> str:
    """ECMAScript's Number::toString layout of ``digits`` x 10^``exponent`` (ECMA-262, Number::toString)."""
    k = len(digits)
    n = exponent + k
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e >= 0 else "e-") + str(abs(e))
    return "-" + text if negative else text


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        # The repeated name is not quoted: it is a fragment of the payload (errors never carry one).
        raise InvalidInputError("the JSON document repeats an object member name")
    return obj


def _not_json(name: str) -> Any:
    raise _NotJson(name)


_decoder = json.JSONDecoder(object_pairs_hook=_object, parse_float=_parse_float, parse_int=_parse_int,
                            parse_constant=_not_json)


def parse_json(text: str | bytes) -> tuple[bool, Any]:
    """``(True, document)`` for a JSON text, ``(False, None)`` for anything else.

    The document's numbers keep their exact value (see the module docstring);
    pass it, or any part of it, to :func:`canonical_document`. Raises :class:`InvalidInputError` for
    duplicate member names and nesting too deep to parse.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return False, None
    try:
        return True, _decoder.decode(text)
    except RecursionError:
        raise InvalidInputError("the JSON document is nested too deeply") from None
    except (ValueError, _NotJson):  # not JSON (an InvalidInputError is not a ValueError: it propagates)
        return False, None


def canonical_json(text: str | bytes) -> bytes | None:
    """The canonical UTF-8 form of a JSON text, or ``None`` if ``text`` is not JSON."""
    is_json, document = parse_json(text)
    return canonical_document(document) if is_json else None


def canonical_document(document: Any) -> bytes:
    """The canonical UTF-8 form of a document from :func:`parse_json` (or a part of one).

    Fast path: the C encoder, whose output is canonical for the numbers
    :func:`parse_json` leaves as ``int``/``float`` and for names within the BMP.
    """
    try:
        text = _dumps(document)
    except (TypeError, ValueError, RecursionError):  # exact numbers (or nesting): the full serialiser decides
        return canonical_value(document)
    if not (text.isascii() or max(text) <= "\uffff"):  # names beyond the BMP sort by UTF-16 code units
        return canonical_value(document)
    return _utf8(text)


def canonical_value(value: Any) -> bytes:
    """The canonical UTF-8 form of any JSON value (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``).

    Floats are written as their shortest round-trip decimal. Raises
    :class:`InvalidInputError` for lone surrogates, NaN or infinities,
    non-string member names and nesting too deep.
    """
    out: list[str] = []
    try:
        _write(value, out)
    except RecursionError:
        raise InvalidInputError("the JSON document is nested too deeply") from None
    except ValueError:  # int-to-text conversion limit
        raise InvalidInputError("a JSON number has too many digits") from None
    return _utf8("".join(out))


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("a string holds a lone surrogate; it is not Unicode text") from None


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_encode_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value) if -10 ** 21 < value < 10 ** 21 else _layout(*_decimal(str(value))))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError("NaN and infinities are not JSON numbers")
        negative, digits, exponent = _decimal(repr(value))
        out.append(_layout(negative, digits, exponent) if digits else "0")
    elif isinstance(value, _Number):
        out.append(value.text)
    elif isinstance(value, dict):
        if any(not isinstance(name, str) for name in value):
            raise InvalidInputError("a JSON object member name is not a string")
        out.append("{")
        for i, name in enumerate(sorted(value, key=_utf16)):
            if i:
                out.append(",")
            out.append(_encode_string(name))
            out.append(":")
            _write(value[name], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise InvalidInputError(f"a {type(value).__name__} is not a JSON value")


def _utf16(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def is_unicode(text: str) -> bool:
    """True when ``text`` is Unicode text (no lone surrogate), so it can be hashed into a record id."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fingerprint(parts: Iterable[bytes | str]) -> str:
    """Hash length-prefixed ``parts`` into a short, printable fingerprint (SHA-256, base64url).

    Raises :class:`InvalidInputError` when a text part is not Unicode text (a lone surrogate).
    """
    buffer = bytearray()
    for part in parts:
        try:
            data = part.encode("utf-8") if isinstance(part, str) else part
        except UnicodeEncodeError:
            raise InvalidInputError("the request holds a lone surrogate; it is not Unicode text") from None
        buffer += len(data).to_bytes(8, "big")
        buffer += data
    return base64.urlsafe_b64encode(hashlib.sha256(buffer).digest()).rstrip(b"=").decode("ascii")
