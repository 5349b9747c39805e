"""A user's install: the wheel ships the sandbox as its own top-level package, and ``retrysafe_cdk`` needs no moto.

The sandbox (``retrysafe_sandbox``) needs moto and joserfc, which only the ``sandbox`` and ``dev``
extras install; ``pip install 'retrysafe[cdk]'`` gets neither, so no ``retrysafe_cdk`` module may
import them, or import the sandbox.
"""

from __future__ import annotations

import ast
import email.parser
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT

SANDBOX_ONLY = ("moto", "joserfc")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The project's wheel, built with pip from a copy of its sources (the checkout stays untouched)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    for folder in ("runtime", "constructs", "sandbox"):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
                   check=True, capture_output=True, text=True, timeout=600)
    [built] = out.glob("retrysafe-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_ships_the_sandbox_as_its_own_top_level_package(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"retrysafe", "retrysafe_cdk", "retrysafe_sandbox"}
    assert not [name for name in names if name.startswith("retrysafe_cdk/sandbox")]
    assert {"retrysafe_sandbox/__init__.py", "retrysafe_sandbox/__main__.py", "retrysafe_sandbox/sfn_runner.mjs",
            "retrysafe_sandbox/py.typed", "retrysafe_cdk/py.typed"} <= set(names)


def test_moto_and_joserfc_come_only_with_the_sandbox_extra(wheel: zipfile.ZipFile) -> None:
    [metadata_file] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    metadata = email.parser.Parser().parsestr(wheel.read(metadata_file).decode())
    assert "sandbox" in metadata.get_all("Provides-Extra", [])
    requirements = metadata.get_all("Requires-Dist", [])
    extras_of = {package: {r.partition("extra == ")[2].strip("\"' ") for r in requirements if r.startswith(package)}
                 for package in SANDBOX_ONLY}
    assert extras_of == {"moto": {"sandbox", "dev"}, "joserfc": {"sandbox"}}
    assert 'retrysafe[cdk,nag,sandbox]; extra == "dev"' in requirements


BLOCKED_IMPORT = textwrap.dedent('''
    import importlib, importlib.abc, pkgutil, sys

    BLOCKED = ("moto", "joserfc", "retrysafe_sandbox")

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"{name} is not installed (blocked)")
            return None

    sys.meta_path.insert(0, Blocker())
    try:
        import moto
    except ImportError:
        pass
    else:
        raise SystemExit("the blocker let moto through")
    import retrysafe_cdk
    modules = ["retrysafe_cdk"] + [m.name for m in pkgutil.walk_packages(retrysafe_cdk.__path__, "retrysafe_cdk.")]
    for name in modules:
        importlib.import_module(name)
    assert not [m for m in sys.modules if m.partition(".")[0] in BLOCKED]
    print("\\n".join(modules))
''')


def test_every_constructs_module_imports_without_moto_joserfc_or_the_sandbox(tmp_path: Path) -> None:
    # run outside the checkout, as a user's program would (the installed package, nothing from the cwd)
    done = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], capture_output=True, text=True, timeout=300,
                          check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    imported = set(done.stdout.split())
    expected = {"retrysafe_cdk." + ".".join(p.relative_to(ROOT / "constructs" / "retrysafe_cdk").with_suffix("").parts)
                for p in (ROOT / "constructs" / "retrysafe_cdk").rglob("*.py") if p.name != "__init__.py"}
    assert expected and expected <= imported, expected - imported


def test_the_examples_import_only_what_retrysafe_cdk_exports() -> None:
    import retrysafe_cdk

    for path in [ROOT / "app.py", *sorted((ROOT / "examples").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("retrysafe_cdk"):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                assert node.module == "retrysafe_cdk", f"{where}: imports from {node.module}, not from the package"
                missing = [a.name for a in node.names if a.name not in retrysafe_cdk.__all__]
                assert not missing, f"{where}: {missing} not exported by retrysafe_cdk"


def test_every_exported_name_is_documented() -> None:
    import retrysafe_cdk

    assert sorted(retrysafe_cdk.__all__) == retrysafe_cdk.__all__
    for name in retrysafe_cdk.__all__:
        assert (getattr(retrysafe_cdk, name).__doc__ or "").strip(), f"retrysafe_cdk.{name} has no docstring"
