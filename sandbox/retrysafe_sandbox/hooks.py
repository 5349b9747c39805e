"""What the app tells the sandbox: its demo scenarios, and how a client passes its Lambda authorizers.

The sandbox runs any synthesized app; what only the app knows comes from the app's ``cdk.json``,
in its context under ``retrysafe_sandbox``, each entry a ``module:function`` importable from the
directory holding ``cdk.json``::

    "context": {
      "retrysafe_sandbox": {
        "scenarios": ["examples.orders.scenario:run", "examples.saga.scenario:run"],
        "authorization": "examples.orders.scenario:authorization"
      }
    }

- ``scenarios``: what ``demo`` runs, in order; each a :data:`~.scenarios.Scenario`.
- ``authorization`` (optional): ``(sandbox, tenant, path) -> str``, an ``Authorization`` header value
  the Lambda authorizer guarding ``path`` accepts for ``tenant`` (``LookupError`` when it cannot
  make one); ``serve`` prints one per Lambda authorizer.

``--scenario`` (repeatable) and ``--authorization`` on the command line replace them.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runner import Sandbox
    from .scenarios import Scenario

CONTEXT_KEY = "retrysafe_sandbox"
#: ``(sandbox, tenant, path) -> Authorization header value``.
Authorization = Callable[["Sandbox", str, str], str]


class HookError(ValueError):
    """A hook named in ``cdk.json`` or on the command line is malformed or cannot be imported."""


@dataclass(frozen=True)
class Hooks:
    """The app's hooks, as ``module:function`` names, and the directory they are imported from."""

    scenarios: tuple[str, ...] = ()
    authorization: str | None = None
    base: Path | None = None

    @classmethod
    def from_cdk_json(cls, path: Path) -> Hooks:
        """The hooks in ``path``'s context (none when the file or the entry is absent)."""
        if not path.is_file():
            return cls()
        try:
            entry = json.loads(path.read_text()).get("context", {}).get(CONTEXT_KEY, {})
        except (ValueError, AttributeError) as error:
            raise HookError(f"{path}: not a cdk.json with a context object: {error}") from error
        if not isinstance(entry, dict):
            raise HookError(f"{path}: context.{CONTEXT_KEY} must be an object, not {type(entry).__name__}")
        scenarios, authorization = entry.get("scenarios", []), entry.get("authorization")
        if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
            raise HookError(f"{path}: context.{CONTEXT_KEY}.scenarios must be a list of 'module:function' strings")
        if authorization is not None and not isinstance(authorization, str):
            raise HookError(f"{path}: context.{CONTEXT_KEY}.authorization must be a 'module:function' string")
        return cls(tuple(scenarios), authorization, path.resolve().parent)

    def replaced(self, scenarios: Sequence[str], authorization: str | None) -> Hooks:
        """These hooks with the command line's, where it gives any."""
        return Hooks(tuple(scenarios) or self.scenarios, authorization or self.authorization, self.base)

    def scenario_functions(self) -> list[Scenario]:
        """The scenarios, imported."""
        return [_load(name, self.base) for name in self.scenarios]

    def authorization_function(self) -> Authorization | None:
        """The authorization hook, imported (``None`` when there is none)."""
        return _load(self.authorization, self.base) if self.authorization else None


def _load(name: str, base: Path | None) -> Any:
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise HookError(f"{name!r}: expected 'module:function', e.g. 'examples.orders.scenario:run'")
    if base is not None and str(base) not in sys.path:
        sys.path.insert(0, str(base))
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise HookError(f"{name!r}: {error}") from error
    if not callable(found):
        raise HookError(f"{name!r} is not callable")
    return found
