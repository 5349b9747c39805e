"""Lambda event filtering (``FilterCriteria``) for the patterns the constructs produce.

Supported conditions: exact values (strings, numbers, booleans, null), ``prefix``,
``suffix``, ``exists`` and ``anything-but`` (a value or a list of values). A record
matches a pattern when every key of the pattern matches; it passes the criteria when it
matches any of the filters. Other conditions raise ``ValueError`` when the pattern is read.
"""

from __future__ import annotations

import json
from typing import Any

_MISSING = object()
SUPPORTED = frozenset({"prefix", "suffix", "exists", "anything-but"})


def parse_criteria(criteria: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The patterns of a ``FilterCriteria`` property (empty: everything passes)."""
    patterns = [json.loads(f["Pattern"]) for f in (criteria or {}).get("Filters", [])]
    for pattern in patterns:
        _check(pattern)
    return patterns


def _check(pattern: dict[str, Any]) -> None:
    for value in pattern.values():
        if isinstance(value, dict):
            _check(value)
            continue
        if not isinstance(value, list):
            raise ValueError(  # noqa: TRY004 - an invalid pattern, reported like the others
                f"filter pattern values must be objects or arrays, got {value!r}")
        for condition in value:
            if isinstance(condition, dict) and not set(condition) <= SUPPORTED:
                raise ValueError(f"unsupported filter condition {condition}: the sandbox supports "
                                 f"exact values and {sorted(SUPPORTED)}")


def passes(record: dict[str, Any], patterns: list[dict[str, Any]]) -> bool:
    """Whether ``record`` passes the criteria (no patterns: always)."""
    return not patterns or any(matches(record, pattern) for pattern in patterns)


def matches(value: Any, pattern: dict[str, Any]) -> bool:
    """Whether ``value`` (a dict) matches one pattern."""
    if not isinstance(value, dict):
        return False
    for key, expected in pattern.items():
        actual = value.get(key, _MISSING)
        if isinstance(expected, dict):
            if not matches(actual, expected):
                return False
        elif not any(_condition(actual, condition) for condition in expected):
            return False
    return True


def _condition(actual: Any, condition: Any) -> bool:
    if isinstance(condition, dict):
        (kind, operand), = condition.items()
        if kind == "exists":
            return (actual is not _MISSING) == bool(operand)
        if actual is _MISSING:
            return False
        values = actual if isinstance(actual, list) else [actual]
        if kind == "anything-but":
            excluded = operand if isinstance(operand, list) else [operand]
            return all(v not in excluded for v in values)
        text = [v for v in values if isinstance(v, str)]
        return any(v.startswith(operand) if kind == "prefix" else v.endswith(operand) for v in text)
    if actual is _MISSING:
        return False
    values = actual if isinstance(actual, list) else [actual]
    return any(v == condition and type(v) is type(condition) for v in values)
