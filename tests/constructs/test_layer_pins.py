"""Issue 24 item 16: the runtime layer's files come from the sources and the pins, not from the machine."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from aws_cdk import BundlingOptions, DockerImage
from aws_cdk import aws_lambda as lambda_
from retrysafe_cdk.layer import (
    LAYER_PINS,
    WHEELS_ENV,
    Pin,
    _PinnedLayer,
    pinned_wheel,
    python_version,
    wheels_folder,
)

OPTIONS = BundlingOptions(image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"))


def _tree(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` with the SHA-256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _fake_interpreter(folder: Path) -> None:
    """A ``python3.14`` on PATH that would leave bytecode behind if anything ran it (the machine difference)."""
    folder.mkdir()
    script = folder / "python3.14"
    script.write_text("#!/bin/sh\necho 3.14\ntouch \"$(dirname \"$0\")/ran\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_two_machines_build_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert _PinnedLayer(LAYER_PINS).try_bundle(str(first), OPTIONS)
    _fake_interpreter(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert _PinnedLayer(LAYER_PINS).try_bundle(str(second), OPTIONS)
    assert not (tmp_path / "bin" / "ran").exists()
    files = _tree(first / "python")
    assert files == _tree(second / "python")
    assert not any(name.endswith(".pyc") or "__pycache__" in name or ".dist-info" in name for name in files)
    assert "retrysafe/_engine.py" in files and not any(name.startswith("retrysafe/testing/") for name in files)
    assert "typing_extensions.py" in files


def test_the_pinned_powertools_ships_whatever_is_installed(tmp_path: Path) -> None:
    """The installed Powertools may be any 3.x the extra allows: the layer carries the pinned one."""
    _PinnedLayer(LAYER_PINS).try_bundle(str(tmp_path), OPTIONS)
    (powertools,) = [p for p in LAYER_PINS if p.name == "aws_lambda_powertools"]
    version = (tmp_path / "python" / "aws_lambda_powertools" / "shared" / "version.py").read_text()
    assert f'VERSION = "{powertools.version}"' in version


def test_the_layer_without_powertools_is_retrysafe_alone(tmp_path: Path) -> None:
    _PinnedLayer(()).try_bundle(str(tmp_path), OPTIONS)
    assert sorted(p.name for p in (tmp_path / "python").iterdir()) == ["retrysafe"]


def test_a_wheel_that_does_not_match_its_pin_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (pin,) = [p for p in LAYER_PINS if p.name == "typing_extensions"]
    shutil.copy(pinned_wheel(pin, wheels_folder()), tmp_path / pin.wheel)
    monkeypatch.setenv(WHEELS_ENV, str(tmp_path))
    assert wheels_folder() == tmp_path
    tampered = Pin(pin.name, pin.version, "0" * 64)
    with pytest.raises(RuntimeError, match=f"{pin.wheel} has SHA-256 {pin.sha256}, the pin says 0000"):
        pinned_wheel(tampered, tmp_path)


def test_a_missing_wheel_is_fetched_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty cache (a clean clone): pip fetches the pinned wheel, checked against its SHA-256."""
    (pin,) = [p for p in LAYER_PINS if p.name == "typing_extensions"]
    wheel = pinned_wheel(pin, tmp_path)
    assert wheel == tmp_path / pin.wheel and hashlib.sha256(wheel.read_bytes()).hexdigest() == pin.sha256
    assert sorted(p.name for p in tmp_path.iterdir()) == [pin.wheel]  # no download folder left behind


# -- bytecode for one runtime (issue 34 item 1) -------------------------------------
#: The Lambda runtime of the interpreter running these tests (the only one it can compile for).
HERE_RUNTIME: lambda_.Runtime = getattr(lambda_.Runtime, f"PYTHON_{sys.version_info.major}_{sys.version_info.minor}")


def test_bytecode_for_the_synthesizing_python_is_the_same_on_every_build(tmp_path: Path) -> None:
    """Hash-based bytecode (no timestamps), compiled with a fixed hash seed: two builds, the same bytes."""
    version = python_version(HERE_RUNTIME)
    first, second = tmp_path / "first", tmp_path / "second"
    assert _PinnedLayer(LAYER_PINS, version).try_bundle(str(first), OPTIONS)
    (tmp_path / "later.py").write_text("x = 1\n")  # a second build, later, its files newer
    assert _PinnedLayer(LAYER_PINS, version).try_bundle(str(second), OPTIONS)
    files = _tree(first / "python")
    assert files == _tree(second / "python")
    tag = sys.implementation.cache_tag
    sources = [name for name in files if name.endswith(".py")]
    assert len(sources) > 100 and all(
        str(Path(name).parent / "__pycache__" / f"{Path(name).stem}.{tag}.pyc") in files for name in sources)
    flags = int.from_bytes((first / "python" / "retrysafe" / "__pycache__" / f"_engine.{tag}.pyc").read_bytes()[4:8],
                           "little")
    assert flags == 0b01  # PEP 552: hash-based, not checked against the source


def test_bytecode_for_another_python_is_refused(tmp_path: Path) -> None:
    other = lambda_.Runtime.PYTHON_3_14 if sys.version_info[:2] != (3, 14) else lambda_.Runtime.PYTHON_3_13
    with pytest.raises(RuntimeError, match=f"for Python {python_version(other)}: this synthesis runs Python"):
        _PinnedLayer((), python_version(other)).try_bundle(str(tmp_path), OPTIONS)
    with pytest.raises(ValueError, match="not a Lambda Python runtime"):
        python_version(lambda_.Runtime.NODEJS_22_X)


def _layer_of(app_dir: Path) -> dict[str, object]:
    """The bytecode layer's resource properties in a stack synthesized into ``app_dir``."""
    import json

    import aws_cdk as cdk
    from retrysafe_cdk import IdempotencyTable, IdempotentFunction

    app = cdk.App(outdir=str(app_dir))
    stack = cdk.Stack(app, "Bytecode")
    table = IdempotencyTable(stack, "Table")
    IdempotentFunction(stack, "Fn", table=table, code=lambda_.Code.from_inline("x = 1"), handler="index.handler",
                       runtime=HERE_RUNTIME, layer_bytecode=True)
    IdempotentFunction(stack, "Other", table=table, code=lambda_.Code.from_inline("x = 1"), handler="index.handler")
    template = json.loads((Path(app.synth().directory) / "Bytecode.template.json").read_text())
    layers = {name: r["Properties"] for name, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::LayerVersion"}
    assert len(layers) == 2  # the compiled layer is its own; the other function keeps the shared one
    (compiled,) = [props for name, props in layers.items() if "Bytecode" in name]
    return compiled


def test_the_compiled_layer_has_the_same_asset_hash_on_every_synthesis(tmp_path: Path) -> None:
    first, second = _layer_of(tmp_path / "a"), _layer_of(tmp_path / "b")
    assert first["CompatibleRuntimes"] == [HERE_RUNTIME.name]
    assert first["Content"] == second["Content"]  # the S3 key is the asset hash of the bundled files
