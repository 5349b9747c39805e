"""Issue 24 item 16: the runtime layer's files come from the sources and the pins, not from the machine."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest
from aws_cdk import BundlingOptions, DockerImage
from retrysafe_cdk.layer import LAYER_PINS, WHEELS_ENV, Pin, _PinnedLayer, pinned_wheel, wheels_folder

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
