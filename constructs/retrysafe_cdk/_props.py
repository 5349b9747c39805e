"""The one props convention of the constructs, and its one check.

A construct that can take an existing resource has the pair ``existing_<x>`` (use this
resource) and ``<x>_props`` (settings for the ``<x>`` the construct creates), as AWS
Solutions Constructs do. Given together, the props would silently not apply, so
:func:`refuse_ignored` refuses them with the names of the ignored props and the fix.
Every construct (and every new one) calls it; no construct writes its own copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from constructs import Construct


def given(value: object) -> bool:
    """Whether a prop was passed: not ``None`` and not an empty collection."""
    if value is None:
        return False
    if isinstance(value, (Mapping, list, tuple, set, frozenset, str)):
        return len(value) > 0
    return True


def refuse_ignored(scope: Construct, existing: str, resource: object | None, props: Mapping[str, object],
                   fix: str, *, otherwise: str = "to let the construct create it") -> None:
    """Refuse (``ValueError``) props that only apply to a resource the construct creates, next to ``existing``.

    ``existing``: the prop name (``existing_queue``); ``resource``: its value (nothing is refused when it is
    ``None``; named by its construct path when it is a construct); ``props``: prop name -> value for every
    prop that would be ignored; ``fix``: where those settings go instead (e.g. "set them on that queue");
    ``otherwise``: what omitting ``existing`` does instead (when the construct then does more than create it).
    """
    ignored = [name for name, value in props.items() if given(value)]
    if resource is None or not ignored:
        return
    where = resource.node.path if isinstance(resource, Construct) else type(resource).__name__
    raise ValueError(f"{scope.node.path}: {existing}={where} is given, so {', '.join(ignored)} would not apply "
                     f"(they configure a resource the construct creates). Fix: {fix}, and omit "
                     f"{', '.join(ignored)} here; or omit {existing} {otherwise}.")


def refuse_owned(scope: Construct, props_name: str, values: Mapping[str, object], owned: Mapping[str, str]) -> None:
    """Refuse (``ValueError``) fields of a ``<x>_props`` struct that the construct decides itself.

    ``values``: the struct's set fields (:func:`struct_values`); ``owned``: field name -> where it goes instead.
    """
    refused = [name for name in owned if given(values.get(name))]
    if refused:
        raise ValueError(f"{scope.node.path}: {props_name} cannot set {', '.join(refused)}. Fix: "
                         + "; ".join(f"{name}: {owned[name]}" for name in refused) + ".")


def struct_values(props: object | None) -> dict[str, Any]:
    """The fields set on a jsii props struct (``lambda_.FunctionOptions(...)``), by their Python names."""
    if props is None:
        return {}
    values = getattr(props, "_values", None)
    if not isinstance(values, dict):
        raise TypeError(f"expected a props struct (e.g. aws_lambda.FunctionOptions(...)), got {type(props).__name__}")
    return dict(values)


def pin_logical_id(resource: Construct, logical_id: str | None) -> None:
    """Pin the CloudFormation logical id of ``resource``'s L1 (when ``logical_id`` is given).

    CDK derives a logical id from the construct path, so moving or renaming a construct replaces
    its resources; a stateful one (table, queue, stream, topic, bucket) is then created anew, empty.
    """
    if logical_id is not None:
        resource.node.default_child.override_logical_id(logical_id)  # type: ignore[union-attr]
