"""The runtime's layers, enforced on its import graph (every import, lazy ones inside functions included).

    root      retrysafe (the package): lazy re-exports of what handlers write; may import anything
    tools     retrysafe.testing (drills and fixtures) and the operator's command line (retrysafe._cli,
              retrysafe.__main__): may import every layer below
    rooms     one per trigger: http, sqs, stepfunctions, webhook, outbox, generic (any event, plain functions),
              streams (Kinesis, DynamoDB Streams); each imports the core, never
              another room (one exception, below) nor the tools or the root
    core      the engine, store, records, keys, transaction, wire names...: imports only the core

An import under ``if TYPE_CHECKING:`` obeys the layers too, but never runs, so it does not make a
cycle. Importing ``retrysafe.http._core`` also runs ``retrysafe/http/__init__.py``: that edge counts.
A new module must be classified here (in ``CORE`` or ``ROOMS``) before the test passes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "runtime" / "retrysafe"

CORE = frozenset({
    "retrysafe._adapter", "retrysafe._async", "retrysafe._botodata", "retrysafe._cache", "retrysafe._claimcheck", "retrysafe._codec", "retrysafe._config", "retrysafe._crt", "retrysafe._cutover",
    "retrysafe._engine", "retrysafe._events", "retrysafe._fingerprint", "retrysafe._keys", "retrysafe._limits",
    "retrysafe._observability", "retrysafe._ordering", "retrysafe._record", "retrysafe._regions", "retrysafe._replay", "retrysafe._results", "retrysafe._select", "retrysafe._tagged",
    "retrysafe._snapstart", "retrysafe._invocation", "retrysafe._tenant",
    "retrysafe._store", "retrysafe._transaction", "retrysafe._transport", "retrysafe._value", "retrysafe.errors",
    "retrysafe.metrics",
    "retrysafe.names",
})
#: Room -> the module or package it is.
ROOMS = {
    "http": "retrysafe.http",
    "sqs": "retrysafe.sqs",
    "stepfunctions": "retrysafe.stepfunctions",
    "webhook": "retrysafe.webhook",
    "outbox": "retrysafe.outbox",
    "generic": "retrysafe._generic",
    "streams": "retrysafe.streams",
}
#: The tools: the testing package, and the command line (it drives the outbox room's parked events).
TOOLS = ("retrysafe.testing", "retrysafe._cli", "retrysafe.__main__")
#: The one room that may import another, and the modules it may import there. The webhook receiver is an
#: HTTP endpoint: it parses API Gateway events, answers problem+json and replays stored responses with the
#: HTTP room's wire layer (never its decorator or middleware).
EXCEPTION = ("webhook", "http", frozenset({"retrysafe.http", "retrysafe.http._core", "retrysafe.http._request",
                                           "retrysafe.http._problem"}))


def module_name(path: Path) -> str:
    parts = ["retrysafe", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    if module == "retrysafe":
        return "root"
    if any(module == tool or module.startswith(tool + ".") for tool in TOOLS):
        return "tools"
    for room, prefix in ROOMS.items():
        if module == prefix or module.startswith(prefix + "."):
            return room
    if module in CORE:
        return "core"
    raise AssertionError(f"{module} is in no layer: add it to CORE or ROOMS in {Path(__file__).name}")


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(module: str, source: str) -> Iterator[tuple[str, int, bool]]:
    """(imported retrysafe module, line, runs) for every import in ``source``; ``runs`` is False under TYPE_CHECKING."""
    tree = ast.parse(source)
    typing_only = _type_checking_lines(tree)
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                targets.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        for target in targets:
            if target != "retrysafe" and not target.startswith("retrysafe."):
                continue
            # Importing a.b.c runs a.b's __init__ first (the root's is lazy and imports nothing at run time).
            parts = target.split(".")
            for cut in range(2, len(parts) + 1):
                prefix = ".".join(parts[:cut])
                if prefix in MODULES and prefix != module and not module.startswith(prefix + "."):
                    yield prefix, node.lineno, node.lineno not in typing_only
            if target == "retrysafe" and module != "retrysafe":
                yield target, node.lineno, node.lineno not in typing_only


def graph() -> dict[str, list[tuple[str, int, bool]]]:
    return {module: sorted(set(imports(module, path.read_text(encoding="utf-8")))) for module, path in MODULES.items()}


def violations(edges: dict[str, list[tuple[str, int, bool]]]) -> list[str]:
    found = []
    for module, targets in edges.items():
        source = layer(module)
        for target, line, _ in targets:
            where = f"{MODULES[module].relative_to(ROOT)}:{line}: {module} imports {target}"
            goal = layer(target)
            if source == "root" or source == goal:
                continue
            if source == "core":
                found.append(f"{where} (the core imports only the core)")
            elif source == "tools":
                if goal == "root":
                    found.append(f"{where} (the tools import the layers, not the package's lazy exports)")
            elif goal in ("root", "tools"):
                found.append(f"{where} (a room imports the core only)")
            elif goal != "core" and not ((source, goal) == EXCEPTION[:2] and target in EXCEPTION[2]):
                found.append(f"{where} (a room imports no other room)")
    return found


def cycles(edges: dict[str, list[tuple[str, int, bool]]]) -> list[list[str]]:
    """Every elementary cycle's members found by a depth-first search over the imports that run."""
    running = {module: sorted({t for t, _, runs in targets if runs}) for module, targets in edges.items()}
    found: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def visit(start: str, node: str, path: list[str]) -> None:
        for target in running.get(node, []):
            if target == start:
                key = frozenset(path)
                if key not in seen:
                    seen.add(key)
                    found.append([*path, start])
            elif target not in path and target > start:  # each cycle once, from its smallest member
                visit(start, target, [*path, target])

    for module in sorted(running):
        visit(module, module, [module])
    return found


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer(module)
    assert sorted(CORE - set(MODULES)) == [], "CORE names modules that do not exist"


def test_no_module_imports_across_the_layers() -> None:
    assert violations(graph()) == []


def test_there_is_no_import_cycle() -> None:
    assert cycles(graph()) == []


# -- the checks themselves, on made-up modules ------------------------------------------------------------

@pytest.mark.parametrize(("module", "source", "expected"), [
    ("retrysafe._store", "def f():\n    from .outbox import publisher\n", "the core imports only the core"),
    ("retrysafe.sqs", "from .webhook import WebhookReceiver\n", "a room imports no other room"),
    ("retrysafe.outbox.publisher", "from ..http._core import StoredResponse\n", "a room imports no other room"),
    ("retrysafe.webhook._receiver", "from ..http._decorator import idempotent_http\n",
     "a room imports no other room"),
    ("retrysafe.http._core", "from ..testing import Drills\n", "a room imports the core only"),
    ("retrysafe.sqs", "from retrysafe import idempotent_http\n", "a room imports the core only"),
])
def test_a_violation_is_reported(module: str, source: str, expected: str) -> None:
    edges = graph()
    edges[module] = sorted(set(imports(module, source)))
    assert any(expected in v and module in v for v in violations(edges)), violations(edges)


def test_the_one_exception_is_the_webhook_on_the_http_wire_layer() -> None:
    edges = {"retrysafe.webhook._receiver": sorted(set(imports(
        "retrysafe.webhook._receiver", "from ..http._core import to_proxy\nfrom ..http._request import parse_event\n")))}
    assert violations(edges) == []


def test_a_lazy_import_makes_a_cycle_and_a_type_checking_one_does_not() -> None:
    lazy = {"retrysafe._record": [("retrysafe._store", 1, True)], "retrysafe._store": [("retrysafe._record", 9, True)]}
    assert cycles(lazy) == [["retrysafe._record", "retrysafe._store", "retrysafe._record"]]
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._store import DynamoStore\n"
    assert all(not runs for _, _, runs in imports("retrysafe._record", source))
    inside = "def f():\n    from ._store import DynamoStore\n"
    assert all(runs for _, _, runs in imports("retrysafe._record", inside))
