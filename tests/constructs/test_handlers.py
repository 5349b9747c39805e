"""The handler paths the constructs deploy from the runtime layer are exactly retrysafe.names.HANDLERS."""

from __future__ import annotations

from typing import Any

from retrysafe import names

from tests.helpers import Synthesized

#: Handlers in the runtime layer are ``retrysafe.<module>.<function>``; the examples' own are not.
RUNTIME_PACKAGE = "retrysafe."


def runtime_handlers(app: Synthesized) -> set[str]:
    """``Handler`` of every function in every stack of ``app`` that runs a runtime-layer handler."""
    found = set()
    for path in app.outdir.glob("*.template.json"):
        resources: dict[str, Any] = app.template(path.name.removesuffix(".template.json"))["Resources"]
        found |= {str(r["Properties"]["Handler"]) for r in resources.values()
                  if r["Type"] == "AWS::Lambda::Function"
                  and str(r["Properties"].get("Handler", "")).startswith(RUNTIME_PACKAGE)}
    return found


def test_the_deployed_runtime_handlers_are_the_named_ones(example: Synthesized, composed: Synthesized) -> None:
    assert runtime_handlers(example) | runtime_handlers(composed) == set(names.HANDLERS)
