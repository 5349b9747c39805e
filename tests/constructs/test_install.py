"""A user's install: three distributions, one import package each, one version; the layer is the runtime wheel's.

``retrysafe`` (the runtime, what a Lambda function runs), ``retrysafe-cdk`` and ``retrysafe-sandbox``
(docs/development.md, "Distributions"). The sandbox needs moto and joserfc, which only
``retrysafe-sandbox`` requires; ``pip install 'retrysafe[cdk]'`` gets neither, so no ``retrysafe_cdk``
module may import them, or import the sandbox.
"""

from __future__ import annotations

import ast
import email.message
import email.parser
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import retrysafe
from aws_cdk import BundlingOptions, DockerImage
from retrysafe_cdk.layer import _PinnedLayer

from tests.helpers import ROOT, built_once

SANDBOX_ONLY = ("moto", "joserfc")
#: Each distribution's project folder and its one import package.
PROJECTS = {"retrysafe": (".", "retrysafe"), "retrysafe-cdk": ("constructs", "retrysafe_cdk"),
            "retrysafe-sandbox": ("sandbox", "retrysafe_sandbox")}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, zipfile.ZipFile]:
    """The three wheels, built with pip from a copy of the sources (the checkout stays untouched), once per test
    run (shared by pytest-xdist's workers)."""

    def build(out: Path) -> str:
        source = tmp_path_factory.mktemp("source")
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for name in ("pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"):
            shutil.copy2(ROOT / name, source / name)
        for folder in ("runtime", "constructs", "sandbox"):
            shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out),
                        *(str(source / folder) for folder, _ in PROJECTS.values())],
                       check=True, capture_output=True, text=True, timeout=900)
        return ""

    out, _ = built_once(tmp_path_factory, "wheels", build)
    return {name: zipfile.ZipFile(next(out.glob(f"{name.replace('-', '_')}-*.whl"))) for name in PROJECTS}


def metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    """The wheel's METADATA."""
    [name] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(wheel.read(name).decode())


def test_each_distribution_holds_its_one_import_package(wheels: dict[str, zipfile.ZipFile]) -> None:
    for distribution, (_, package) in PROJECTS.items():
        names = wheels[distribution].namelist()
        assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {package}, distribution
        assert f"{package}/py.typed" in names
    assert {"retrysafe_sandbox/__main__.py", "retrysafe_sandbox/sfn_runner.mjs"} <= set(wheels["retrysafe-sandbox"]
                                                                                          .namelist())
    [entry_points] = [n for n in wheels["retrysafe"].namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "[pytest11]\nretrysafe = retrysafe.testing._plugin" in wheels["retrysafe"].read(entry_points).decode()


def test_one_version_and_the_others_require_exactly_that_retrysafe(wheels: dict[str, zipfile.ZipFile]) -> None:
    assert {metadata(wheel)["Version"] for wheel in wheels.values()} == {retrysafe.__version__}
    for distribution in ("retrysafe-cdk", "retrysafe-sandbox"):
        assert f"retrysafe=={retrysafe.__version__}" in metadata(wheels[distribution]).get_all("Requires-Dist", [])
    runtime = metadata(wheels["retrysafe"]).get_all("Requires-Dist", [])
    assert {'retrysafe-cdk; extra == "cdk"', 'retrysafe-cdk[nag]; extra == "nag"',
            'retrysafe-sandbox; extra == "sandbox"'} <= set(runtime)
    assert [r for r in runtime if "extra ==" not in r] == ["boto3>=1.34", "aws-lambda-powertools<4,>=3.0"]


def test_moto_and_joserfc_come_only_with_the_sandbox(wheels: dict[str, zipfile.ZipFile]) -> None:
    for distribution, wheel in wheels.items():
        requirements = metadata(wheel).get_all("Requires-Dist", [])
        extras_of = {package: {r.partition("extra == ")[2].strip("\"' ") for r in requirements
                               if r.startswith(package)} for package in SANDBOX_ONLY}
        expected = {"retrysafe": {"moto": {"dev"}, "joserfc": set()}, "retrysafe-cdk": {"moto": set(), "joserfc": set()},
                    "retrysafe-sandbox": {"moto": {""}, "joserfc": {""}}}[distribution]
        assert extras_of == expected, distribution


def test_the_layer_holds_the_runtime_wheels_files(wheels: dict[str, zipfile.ZipFile], tmp_path: Path) -> None:
    # the layer is built from the installed retrysafe package; the wheel is what installs it. The test
    # plugin (retrysafe/testing) is in the wheel for users' test suites and is the one part left out.
    _PinnedLayer(()).try_bundle(str(tmp_path), BundlingOptions(image=DockerImage.from_registry("unused")))
    layer = tmp_path / "python"
    shipped = {path.relative_to(layer).as_posix() for path in layer.rglob("*") if path.is_file()}
    in_wheel = {name for name in wheels["retrysafe"].namelist()
                if name.startswith("retrysafe/") and not name.startswith("retrysafe/testing/")}
    assert shipped == in_wheel
    assert any(name.startswith("retrysafe/testing/") for name in wheels["retrysafe"].namelist())


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
