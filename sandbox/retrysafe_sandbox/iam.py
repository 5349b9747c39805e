"""IAM policy evaluation: does a set of policies allow an action on a resource, as AWS decides it.

The evaluation logic of one account: an explicit ``Deny`` in any applicable policy wins; otherwise
the request is allowed when an identity-based policy (within the permissions boundary, if the role
has one) or a resource-based policy naming the principal allows it; otherwise it is implicitly
denied. A statement applies when its ``Action``/``NotAction`` (case-insensitive, ``*`` and ``?``
wildcards), ``Resource``/``NotResource`` (case-sensitive wildcards), ``Principal``/``NotPrincipal``
(resource policies) and every ``Condition`` match.

Condition operators: the ``String*``, ``Arn*``, ``Numeric*``, ``Bool`` and ``Null`` families,
with ``...IfExists`` and the ``ForAnyValue:``/``ForAllValues:`` set qualifiers. Anything else
(date operators, IP addresses, policy variables) raises :class:`UnsupportedPolicy` naming it,
rather than guessing an answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

Context = Mapping[str, "str | Sequence[str]"]


class UnsupportedPolicy(ValueError):
    """A policy uses a construct the evaluator does not implement."""


@dataclass(frozen=True)
class Principal:
    """Who makes a request: an IAM role (``arn``) or an AWS service (``service``)."""

    arn: str = ""
    service: str = ""
    account: str = ""


@dataclass(frozen=True)
class Decision:
    """The outcome of one evaluation: allowed, or why not."""

    allowed: bool
    explicit_deny: bool = False
    reason: str = ""


@dataclass
class Policies:
    """The policies that apply to one principal: identity-based ones and an optional permissions boundary."""

    identity: list[Mapping[str, Any]] = field(default_factory=list)
    boundary: Mapping[str, Any] | None = None


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [] if value is None else [value]


@lru_cache(maxsize=4096)
def _compiled(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.compile(regex, re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard_match(pattern: str, value: str, ignore_case: bool = False) -> bool:
    """IAM's ``*`` (any run of characters, ``/`` and ``:`` included) and ``?`` (one character)."""
    return _compiled(pattern, ignore_case).fullmatch(value) is not None


def _matches_any(patterns: Iterable[str], value: str, ignore_case: bool = False) -> bool:
    return any(wildcard_match(str(p), value, ignore_case) for p in patterns)


def _principal_matches(spec: Any, principal: Principal) -> bool:
    if spec == "*":
        return True
    if not isinstance(spec, Mapping):
        return False
    for kind, values in spec.items():
        for value in _listed(values):
            value = str(value)
            if kind == "Service" and principal.service and value == principal.service:
                return True
            if kind == "AWS" and not principal.service and (
                    value == "*" or value == principal.arn or value in (principal.account,
                                                                        f"arn:aws:iam::{principal.account}:root")):
                return True
    return False


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return float("nan")


_COMPARE: dict[str, Callable[[str, str], bool]] = {
    "StringEquals": lambda a, b: a == b, "StringNotEquals": lambda a, b: a == b,
    "StringEqualsIgnoreCase": lambda a, b: a.lower() == b.lower(),
    "StringNotEqualsIgnoreCase": lambda a, b: a.lower() == b.lower(),
    "StringLike": lambda a, b: wildcard_match(b, a), "StringNotLike": lambda a, b: wildcard_match(b, a),
    "ArnEquals": lambda a, b: wildcard_match(b, a), "ArnNotEquals": lambda a, b: wildcard_match(b, a),
    "ArnLike": lambda a, b: wildcard_match(b, a), "ArnNotLike": lambda a, b: wildcard_match(b, a),
    "NumericEquals": lambda a, b: _number(a) == _number(b), "NumericNotEquals": lambda a, b: _number(a) == _number(b),
    "NumericLessThan": lambda a, b: _number(a) < _number(b),
    "NumericLessThanEquals": lambda a, b: _number(a) <= _number(b),
    "NumericGreaterThan": lambda a, b: _number(a) > _number(b),
    "NumericGreaterThanEquals": lambda a, b: _number(a) >= _number(b),
    "Bool": lambda a, b: a.lower() == b.lower(),
}
_NEGATED = frozenset({"StringNotEquals", "StringNotEqualsIgnoreCase", "StringNotLike", "ArnNotEquals",
                      "ArnNotLike", "NumericNotEquals"})


def _condition(operator: str, key: str, expected: Any, context: Context) -> bool:
    qualifier, _, operator = operator.rpartition(":")
    if_exists = operator.endswith("IfExists")
    operator = operator.removesuffix("IfExists")
    wanted = [str(v).lower() if isinstance(v, bool) else str(v) for v in _listed(expected)]
    present = key in context
    raw = context.get(key)
    values = [str(v) for v in _listed(raw)]
    if operator == "Null":
        return any((not present) == (w.lower() == "true") for w in wanted)
    if operator not in _COMPARE:
        raise UnsupportedPolicy(f"condition operator {operator!r} (on {key}) is not evaluated by the sandbox")
    negated = operator in _NEGATED
    if not present:
        return if_exists or negated or qualifier == "ForAllValues"
    compare = _COMPARE[operator]

    def hit(value: str) -> bool:
        matched = any(compare(value, w) for w in wanted)
        return not matched if negated else matched

    if qualifier == "ForAllValues":
        return all(hit(v) for v in values)
    if qualifier == "ForAnyValue" or len(values) != 1:
        return any(hit(v) for v in values) if not negated else all(hit(v) for v in values)
    return hit(values[0])


def _conditions(block: Any, context: Context) -> bool:
    if not block:
        return True
    return all(_condition(operator, key, expected, context)
               for operator, keys in block.items() for key, expected in keys.items())


def statement_applies(statement: Mapping[str, Any], action: str, resource: str, context: Context,
                      principal: Principal | None = None) -> bool:
    """Whether one statement covers this request (its effect aside)."""
    if "Action" in statement:
        if not _matches_any(_listed(statement["Action"]), action, ignore_case=True):
            return False
    elif "NotAction" in statement:
        if _matches_any(_listed(statement["NotAction"]), action, ignore_case=True):
            return False
    else:
        return False
    if "Resource" in statement:
        if not _matches_any(_listed(statement["Resource"]), resource):
            return False
    elif "NotResource" in statement:
        if _matches_any(_listed(statement["NotResource"]), resource):
            return False
    elif principal is None:
        return False  # an identity-based statement must name its resources
    if principal is not None:
        if "Principal" in statement and not _principal_matches(statement["Principal"], principal):
            return False
        if "NotPrincipal" in statement and _principal_matches(statement["NotPrincipal"], principal):
            return False
    return _conditions(statement.get("Condition"), context)


def _effects(documents: Iterable[Mapping[str, Any]], action: str, resource: str, context: Context,
             principal: Principal | None = None) -> set[str]:
    effects = set()
    for document in documents:
        for statement in _listed(document.get("Statement")):
            if statement_applies(statement, action, resource, context, principal):
                effects.add(str(statement.get("Effect")))
    return effects


def evaluate(policies: Policies, action: str, resource: str, context: Context | None = None,
             resource_policies: Sequence[Mapping[str, Any]] = (), principal: Principal | None = None) -> Decision:
    """Evaluate one request (``action`` on ``resource``) by ``principal`` holding ``policies``."""
    context = context or {}
    who = principal or Principal()
    identity = _effects(policies.identity, action, resource, context)
    boundary = _effects([policies.boundary], action, resource, context) if policies.boundary else {"Allow"}
    on_resource = _effects(resource_policies, action, resource, context, who)
    if "Deny" in identity | on_resource | boundary:
        return Decision(False, True, "with an explicit deny in a policy")
    if "Allow" in on_resource:
        return Decision(True)
    if "Allow" in identity and "Allow" in boundary:
        return Decision(True)
    if "Allow" in identity:
        return Decision(False, reason="because no permissions boundary allows the action")
    return Decision(False, reason="because no identity-based policy allows the action")
