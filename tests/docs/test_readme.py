"""README.md: a pitch, the quick-start commands, one tested example and links into the documentation site.

GitHub shows the README without mkdocs' include syntax, so its Python block is a copy; these tests keep
the copy equal to a snippet section that mypy checks and ``tests/docs/test_snippets.py`` runs, every
``make`` command it shows a target of the Makefile, and every link a file (and anchor) of the repository.
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from pathlib import Path

from tests.helpers import ROOT

README = ROOT / "README.md"
SNIPPET_TESTS = ROOT / "tests" / "docs" / "test_snippets.py"
# A Python block is preceded by a comment naming the snippet section it copies.
SOURCE = re.compile(r"^<!-- This block is (examples/snippets/[\w/]+\.py), section \"([\w-]+)\"")
LINK = re.compile(r"\]\(([^)\s]+)\)")
MAKE = re.compile(r"`?make ([a-z][\w-]*)")


def readme() -> str:
    return README.read_text(encoding="utf-8")


def fenced_blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, the line before the fence, the block's text) for every fenced block."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```") and len(lines[i]) > 3:
            end = lines.index("```", i + 1)
            blocks.append((lines[i][3:].strip(), lines[i - 1] if i else "", "\n".join(lines[i + 1:end]) + "\n"))
            i = end
        i += 1
    return blocks


def snippet_section(path: Path, name: str) -> str:
    """The section between ``# --8<-- [start:name]`` and ``# --8<-- [end:name]``, dedented as the site shows it."""
    text = path.read_text(encoding="utf-8")
    start, end = f"# --8<-- [start:{name}]\n", f"# --8<-- [end:{name}]"
    assert start in text and end in text, f"{path.name} has no section {name!r}"
    body = text.split(start, 1)[1].split(end, 1)[0]
    return textwrap.dedent("".join(line for line in body.splitlines(keepends=True) if line.strip() != end))


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {name for line in makefile.splitlines()
            for name in re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", line)}


def heading_anchors(page: Path) -> set[str]:
    """The ids mkdocs (toc) and GitHub give the page's headings, plus explicit ``id=`` anchors."""
    text = page.read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([\w-]+)"', text))
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\s-]", "", heading.lower()).strip()
        anchors.add(re.sub(r"\s+", "-", slug))
    return anchors


def test_every_python_block_is_a_copy_of_a_snippet_section_the_suite_runs() -> None:
    python = [(before, block) for language, before, block in fenced_blocks(readme()) if language == "python"]
    assert python, "the README shows one short example"
    mypy_files = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]["files"]
    assert "examples" in mypy_files, "mypy no longer checks examples/snippets"
    for before, block in python:
        source = SOURCE.match(before)
        assert source, f"a Python block without its source comment: {block[:60]!r}"
        path, section = source.groups()
        assert block == snippet_section(ROOT / path, section), f"the README's copy of {path}:{section} differs"
        module = Path(path).stem
        assert f'fresh("{module}")' in SNIPPET_TESTS.read_text(encoding="utf-8"), \
            f"no test in tests/docs/test_snippets.py runs {path}"


def test_the_quick_start_commands_are_make_targets() -> None:
    text = readme()
    shell = [line for language, _, block in fenced_blocks(text) if language in {"bash", "sh", "shell"}
             for line in block.splitlines() if line.strip()]
    assert [line.split("#")[0].split() for line in shell] == [["make", "demo"], ["make", "test"],
                                                               ["make", "docs-serve"]]
    targets = make_targets()
    mentioned = set(MAKE.findall(text))
    assert {"demo", "test", "docs-serve", "docs"} <= mentioned
    assert mentioned <= targets, f"not Makefile targets: {sorted(mentioned - targets)}"


def test_links_point_at_files_and_anchors_in_the_repository() -> None:
    for target in LINK.findall(readme()):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).is_file(), f"README links to a missing file: {target}"
        if anchor:
            assert anchor in heading_anchors(ROOT / path), f"README links to a missing anchor: {target}"


def test_every_page_of_the_site_is_linked() -> None:
    linked = {target.partition("#")[0] for target in LINK.findall(readme())}
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    # The home page is this README's counterpart; the changelog page includes CHANGELOG.md, linked as such.
    assert pages - {"docs/index.md", "docs/changelog.md"} <= linked
    assert "CHANGELOG.md" in linked


def test_the_readme_stays_a_pitch() -> None:
    assert len(readme().splitlines()) <= 100
