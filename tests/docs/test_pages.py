"""The documentation pages: every Python block is an include of a tested snippet, and every include resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
INCLUDE = re.compile(r'^--8<-- "([^":]+)(?::([\w-]+))?"$')


def python_blocks(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


def test_the_site_has_pages_with_python_blocks() -> None:
    assert len(PAGES) >= 14
    assert sum(len(python_blocks(page)) for page in PAGES) >= 10


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_only_include_snippet_files(page: Path) -> None:
    for block in python_blocks(page):
        for line in block.strip().splitlines():
            match = INCLUDE.match(line.strip())
            assert match, f"{page.name}: inline Python is untested; include it from examples/snippets/: {line!r}"
            path, section = match.groups()
            assert path.startswith("examples/snippets/"), f"{page.name}: {path} is not a tested snippet file"
            source = (ROOT / path).read_text(encoding="utf-8")
            if section:
                assert f"# --8<-- [start:{section}]" in source and f"# --8<-- [end:{section}]" in source, \
                    f"{page.name}: {path} has no section {section!r}"


def test_every_snippet_file_is_shown_somewhere() -> None:
    shown = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    helpers = {"__init__.py", "payments.py"}
    for snippet in sorted((ROOT / "examples" / "snippets").iterdir()):
        if snippet.suffix in {".py", ".json"} and snippet.name not in helpers:
            assert f"examples/snippets/{snippet.name}" in shown, f"{snippet.name} is not included by any page"


def test_the_docs_and_the_shipped_code_cite_only_files_in_the_repository() -> None:
    # Names of files outside the repository (built, so that this guard does not itself cite them).
    outside = tuple(f"{name}.md" for name in ("CONTRACT", "DRILLS")) + ("/work/",)
    roots = [ROOT / "docs", ROOT / "runtime", ROOT / "constructs", ROOT / "examples",
             ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml"]
    files = [p for root in roots for p in ([root] if root.is_file() else root.rglob("*"))
             if p.is_file() and p.suffix in {".md", ".py", ".yml", ".json"}]
    cited = [f"{p.relative_to(ROOT)}: {name}" for p in files for name in outside
             if name in p.read_text(encoding="utf-8", errors="replace")]
    assert not cited
