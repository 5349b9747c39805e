"""The tests mirror the packages: a folder of tests/runtime names a room of the runtime, and nothing lives
in a folder the layout does not know (a test added to an old folder would be easy to miss)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT

TESTS = ROOT / "tests"
RUNTIME = ROOT / "runtime" / "retrysafe"
# What each top-level folder of tests/ holds.
FOLDERS = {
    "runtime": "the runtime (retrysafe): the core's contract and unit tests, a folder per transport room",
    "constructs": "the CDK constructs (retrysafe_cdk)",
    "sandbox": "the local sandbox (retrysafe_sandbox)",
    "examples": "the example apps in examples/: their handlers, stacks and saga",
    "drills": "the failure drills, the exploration and the soak (make soak)",
    "docs": "the documentation site, its snippets and the README",
    "bench": "the benchmark's DynamoDB model",
    "typing": "what mypy accepts and refuses of the public API (tests/typing/api.py: type-checked, never run)",
}


def folders(path: Path) -> list[str]:
    """The folders below ``path``, without what tools leave there (``.gitignore``: bytecode, an editable install's metadata)."""
    return sorted(p.name for p in path.iterdir() if p.is_dir() and p.name not in {"__pycache__", "http_api_handlers"}
                  and not p.name.endswith(".egg-info"))


def test_top_level_folders_are_the_known_ones() -> None:
    assert folders(TESTS) == sorted(FOLDERS), f"tests/ holds {folders(TESTS)}; its folders are {sorted(FOLDERS)}"


def test_every_runtime_test_folder_names_a_room_of_the_runtime() -> None:
    for name in folders(TESTS / "runtime"):
        # A room may be a private module (tests/runtime/generic for retrysafe/_generic.py).
        assert any(path.is_file() for path in (RUNTIME / name / "__init__.py", RUNTIME / f"{name}.py",
                                               RUNTIME / f"_{name}.py")), \
            f"tests/runtime/{name} mirrors no package or module of retrysafe"


def test_every_test_folder_is_a_package() -> None:
    # Test modules are imported by their dotted path (tests.runtime.http.test_tenant), so two files may share a name.
    for folder in [TESTS, *(p for p in TESTS.rglob("*") if p.is_dir() and any(p.glob("test_*.py")))]:
        assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"


#: The source roots (``package-dir`` in pyproject.toml) and the one import package each holds.
SOURCE_ROOTS = {"runtime": "retrysafe", "constructs": "retrysafe_cdk", "sandbox": "retrysafe_sandbox"}


def test_each_source_root_holds_its_one_package() -> None:
    # the sandbox (moto, its own extra) is its own room, not a folder of the constructs
    for root, package in SOURCE_ROOTS.items():
        assert folders(ROOT / root) == [package], f"{root}/ holds {folders(ROOT / root)}, not just {package}"
        assert (ROOT / root / package / "__init__.py").is_file()
    # one distribution per source root (docs/development.md, "Distributions"): the runtime's project is the
    # repository's top level, the others' their own folder
    for root, package in SOURCE_ROOTS.items():
        project = (ROOT / ("." if root == "runtime" else root) / "pyproject.toml").read_text()
        assert f'include = ["{package}", "{package}.*"]' in project, f"{root}'s distribution does not ship {package}"
    assert 'where = ["runtime"]' in (ROOT / "pyproject.toml").read_text()
