"""Selectors: the part of an event (or of a function's argument) that is its key, or its fingerprint.

A selector is a JMESPath expression (``"detail.order_id"``, compiled once, when
the decorator is applied) or a callable given the value. Expressions may use
Powertools' JMESPath functions (``powertools_json``, ``powertools_base64``,
``powertools_base64_gzip``) to look inside JSON carried as text, e.g.
``"powertools_json(Records[0].Sns.Message).order_id"``.

Keys (:class:`KeySelector`): the selected value must be

- a non-empty string (Unicode text), or
- an integer: ``int`` (not ``bool``), or a ``Decimal`` with an integral value
  (how boto3 reads every DynamoDB number), written in decimal, so ``42``,
  ``Decimal("42")`` and ``"42"`` name the same intent; floats and fractional
  decimals are refused (``1.0`` and ``1`` have no single exact text), or
- a list of those (a composite key such as S3's bucket + object key +
  sequencer), encoded as its canonical JSON so no two lists share a key, or
- where the adapter takes whole documents as keys (``objects=True``: the HTTP
  adapter, whose Powertools users key on ``powertools_json(body)``), a JSON
  object, keyed by the hash of its canonical JSON as Powertools hashes it.

Nothing selected (``None``, or ``None`` inside a composite key) raises
:class:`~retrysafe.errors.KeyNotFoundError`; anything else raises :class:`~retrysafe.errors.InvalidKeyError`.

Fingerprints (:class:`FingerprintSelector`): the selected part is hashed with
the canonical JSON form of :mod:`retrysafe._fingerprint`. Selecting nothing
(``None``) raises :class:`~retrysafe.errors.InvalidInputError` rather than
hashing ``null``: a misspelled expression would otherwise let every request
reusing a key match.

Both take ``as_document``: how a value that is not JSON (a dataclass, a
pydantic model) becomes a document an expression searches; callables get the
value itself. A fingerprint selector's ``to_json`` turns the selected part into
JSON before it is hashed (``Decimal``, ``datetime``... as tagged JSON).
"""

from __future__ import annotations

import binascii
import json
import zlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ._fingerprint import canonical_value, fingerprint, is_unicode
from .errors import ConfigurationError, InvalidInputError, InvalidKeyError, KeyNotFoundError

#: A selector as the decorators take it: a JMESPath expression or a callable given the value.
Selector = str | Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


class _Compiled:
    """One selector, ready to apply: the expression compiled at decoration time, or the callable."""

    __slots__ = ("_search", "description", "expression")

    def __init__(self, selector: Selector, option: str) -> None:
        if isinstance(selector, str):
            self.expression = True
            self.description = f"{option}={selector!r}"
            self._search = _compile(selector, self.description)
        elif callable(selector):
            self.expression = False
            self.description = f"{option}={getattr(selector, '__qualname__', type(selector).__name__)}"
            self._search = selector
        else:
            raise ConfigurationError(f"{option} must be a JMESPath expression or a callable, "
                                     f"not a {type(selector).__name__}")

    def select(self, value: Any, as_document: Callable[[Any], Any]) -> tuple[Any, str | None]:
        """``(selected, None)``, or ``(None, why)`` when the selector failed on this value.

        ``why`` is a fixed text naming the function and the JSON type it found, never the value:
        the messages of jmespath's and Powertools' errors (and of a callable's) quote the data.
        The caller raises outside this ``except``, so the error carries no chained exception.
        """
        try:
            return self._search(as_document(value) if self.expression else value), None
        except _type_error() as error:  # evaluated only once something was raised
            return None, (f"{error.function_name}() got a JSON {error.actual_type}, "
                          f"expected {' or '.join(error.expected_types)}")
        except json.JSONDecodeError:
            return None, "powertools_json() got text that is not JSON"
        except binascii.Error:
            return None, "powertools_base64() got text that is not base64"
        except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
            return None, "powertools_base64_gzip() got data that is not gzip"
        except UnicodeDecodeError:
            return None, "the decoded bytes are not UTF-8 text"
        except Exception as error:  # noqa: BLE001 -- any other failure of the expression or the callable
            return None, f"it raised {type(error).__name__}"


def _type_error() -> Any:  # jmespath has no type hints: its exception class is Any to mypy
    """``JMESPathTypeError``. jmespath is imported by a decorator given an expression only (a callable
    selector, or none at all, never loads it): it was the largest part of an adapter's import. This runs only
    once a selector raised, when an expression's compilation has imported it already, or a callable raised
    (then it is imported on that error path)."""
    from jmespath.exceptions import JMESPathTypeError

    return JMESPathTypeError


def _compile(expression: str, description: str) -> Callable[[Any], Any]:
    import jmespath  # here, not at module level: see _type_error
    from jmespath.exceptions import JMESPathError

    try:
        compiled = jmespath.compile(expression)
    except JMESPathError as error:
        raise ConfigurationError(f"{description} is not a JMESPath expression: {error}") from None
    if "powertools_" not in expression:
        return compiled.search  # type: ignore[no-any-return]
    # Only expressions that call Powertools' functions pay for importing them (cold start).
    from aws_lambda_powertools.utilities.jmespath_utils import PowertoolsFunctions

    options = jmespath.Options(custom_functions=PowertoolsFunctions())
    return lambda document: compiled.search(document, options=options)


class KeySelector:
    """A key selector (see the module docstring for what a key may be)."""

    __slots__ = ("_compiled", "_objects")

    def __init__(self, selector: Selector, *, option: str = "key", objects: bool = False) -> None:
        self._compiled = _Compiled(selector, option)
        self._objects = objects

    @property
    def description(self) -> str:
        """The option as written (``key='detail.order_id'``), for error messages and logs."""
        return self._compiled.description

    def __call__(self, value: Any, as_document: Callable[[Any], Any] = _same) -> str:
        """The key ``value`` holds; raises :class:`~retrysafe.errors.KeyNotFoundError` or
        :class:`~retrysafe.errors.InvalidKeyError`."""
        selected, failure = self._compiled.select(value, as_document)
        if failure is not None:
            raise InvalidKeyError(f"{self.description} cannot be evaluated: {failure}")
        if isinstance(selected, list):
            if not selected:
                raise KeyNotFoundError(f"{self.description} selected an empty list")
            parts = [self._part(item) for item in selected]
            return canonical_value(parts).decode("utf-8")
        return self._part(selected)

    def _part(self, selected: Any) -> str:
        if selected is None:
            raise KeyNotFoundError(f"{self.description} found no key")
        if isinstance(selected, str):
            if not selected:
                raise InvalidKeyError(f"{self.description} selected an empty string")
            if not is_unicode(selected):
                raise InvalidKeyError(f"{self.description} selected a string that is not Unicode text")
            return selected
        if isinstance(selected, int) and not isinstance(selected, bool):
            return str(selected)
        if isinstance(selected, Decimal) and selected.is_finite() and selected == selected.to_integral_value():
            return str(int(selected))
        if self._objects and isinstance(selected, dict):
            try:
                return fingerprint_document(selected)
            except InvalidInputError:  # NaN, a lone surrogate: raised below, outside the except, so unchained
                pass
            raise InvalidKeyError(f"{self.description} selected an object with no canonical JSON form")
        kinds = "a string, an integer, a JSON object or a list of those" if self._objects else \
            "a string, an integer or a list of those"
        raise InvalidKeyError(f"{self.description} selected a {json_type(selected)}; a key is {kinds}")


class FingerprintSelector:
    """A fingerprint selector: hashes the canonical JSON of the selected part."""

    __slots__ = ("_compiled", "_to_json")

    def __init__(self, selector: Selector, *, option: str = "fingerprint",
                 to_json: Callable[[Any], Any] | None = None) -> None:
        self._compiled = _Compiled(selector, option)
        self._to_json = to_json or _same

    @property
    def description(self) -> str:
        """The option as written, for error messages."""
        return self._compiled.description

    def __call__(self, value: Any, as_document: Callable[[Any], Any] = _same) -> str:
        """The fingerprint of the part of ``value`` selected; raises :class:`InvalidInputError`."""
        selected, failure = self._compiled.select(value, as_document)
        if failure is not None:
            raise InvalidInputError(f"{self.description} cannot be evaluated: {failure}")
        if selected is None:
            raise InvalidInputError(f"{self.description} selected nothing to fingerprint")
        return fingerprint_document(self._to_json(selected))


def json_type(value: Any) -> str:
    """The JSON type of ``value`` (``JSON number``...), named in errors instead of the value itself."""
    if isinstance(value, bool):
        return "JSON boolean"
    if isinstance(value, (int, float, Decimal)):
        return "JSON number"
    for kind, name in ((str, "string"), (dict, "object"), (list, "array")):
        if isinstance(value, kind):
            return f"JSON {name}"
    return "null" if value is None else type(value).__name__


def fingerprint_document(document: Any) -> str:
    """The fingerprint of a JSON value (canonical form of :mod:`retrysafe._fingerprint`)."""
    return fingerprint(["select/v1", canonical_value(document)])
