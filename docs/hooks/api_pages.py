"""MkDocs hook: one API reference page per public module of ``retrysafe`` and ``retrysafe_cdk``.

The pages are generated from the source tree at build time (never written to disk), so a module
that is added, moved or renamed gets its page without editing the site. Private modules (a name
part starting with ``_``: the implementation) and ``__main__`` are left out; a public module of
``retrysafe`` documents every name in its ``__all__``, including those it re-exports from the
implementation (tests/runtime/test_exports.py keeps the public modules to the listed set). The
local sandbox (``retrysafe_sandbox``) is a development tool with its own page, not part of the API.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"retrysafe": ROOT / "runtime" / "retrysafe", "retrysafe_cdk": ROOT / "constructs" / "retrysafe_cdk"}
NAV_TITLE = "API reference"


def reexports_only(path: Path) -> bool:
    """Whether a module only re-exports names defined elsewhere."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return all(isinstance(node, (ast.Import, ast.ImportFrom)) or _is_docstring(node) or _is_all(node)
               for node in body)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _is_all(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]


def public_modules() -> dict[str, list[tuple[str, bool]]]:
    """Per top-level package: (dotted module name, shows only its docstring) of every public module, sorted.

    In ``retrysafe`` every public module shows its members (``__all__``: what it defines and what it
    re-exports from private modules, which have no page). In ``retrysafe_cdk``, packages and modules
    that only re-export show their docstring: the names are documented where they are defined.
    """
    found: dict[str, list[tuple[str, bool]]] = {}
    for top, folder in PACKAGES.items():
        modules: list[tuple[str, bool]] = []
        for path in sorted(folder.rglob("*.py")):
            parts = [top, *path.relative_to(folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            name = ".".join(parts)
            if any(p.startswith("_") for p in parts):
                continue
            modules.append((name, top != "retrysafe" and (is_package or reexports_only(path))))
        found[top] = sorted(modules)
    return found


def page(name: str, docstring_only: bool) -> str:
    """The Markdown of one reference page: the module's docstring and, unless ``docstring_only``, its members."""
    options = "      members: false\n" if docstring_only else ""
    return f"# `{name}`\n\n::: {name}\n    options:\n      show_root_heading: false\n{options}"


def on_config(config: MkDocsConfig, **_: Any) -> MkDocsConfig:
    """Replace the ``API reference`` nav entry (at any depth: it sits in the Reference section) by the pages."""
    sections = [{top: [{name: f"api/{name}.md"} for name, _ in modules]}
                for top, modules in public_modules().items()]
    _replace(config.nav or [], sections)
    return config


def _replace(nav: list[Any], sections: list[dict[str, Any]]) -> None:
    for index, entry in enumerate(nav):
        if isinstance(entry, dict) and NAV_TITLE in entry:
            nav[index] = {NAV_TITLE: sections}
        elif isinstance(entry, dict):
            for value in entry.values():
                if isinstance(value, list):
                    _replace(value, sections)


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    """Add the generated reference pages to the build."""
    for modules in public_modules().values():
        for name, docstring_only in modules:
            files.append(File.generated(config, f"api/{name}.md", content=page(name, docstring_only)))
    return files
