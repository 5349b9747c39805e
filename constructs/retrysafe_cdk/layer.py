"""The retrysafe runtime as a Lambda layer, built without Docker, the same on every machine.

The layer holds ``python/retrysafe`` (this project's runtime, from its sources) and, unless the
functions use the public Powertools layer instead, ``aws_lambda_powertools`` with its
``typing_extensions`` dependency, unpacked from the wheels pinned in :data:`LAYER_PINS` (name,
version, SHA-256): not from whatever the synthesizing machine has installed. boto3 and jmespath
come with the Lambda Python runtime. ``__pycache__``, ``*.pyc``, ``*.dist-info`` and the test plugin
``retrysafe.testing`` are never copied, and by default nothing is compiled: the files, and so the asset
hash, depend only on the sources and the pins, whichever interpreters and packages the machine has.

Bytecode (``bytecode_for=``): Lambda's ``/opt`` is read-only, so a layer without bytecode has every
cold start compile the modules it imports, and keep nothing. A layer for one runtime can ship them
compiled: PEP 552 ``unchecked-hash`` bytecode (no timestamps, no check against the source, which never
changes inside a layer), compiled in a separate process with a fixed hash seed, so two builds give the
same files and the same asset hash. Bytecode is tied to the Python version that compiled it, so the
synthesizing interpreter must be the runtime's version; any other is refused (no silent difference
between machines).

The pinned wheels come from a cache folder (``RETRYSAFE_LAYER_WHEELS``, default
``~/.cache/retrysafe/layer-wheels``); a missing one is fetched once with ``pip download`` (pure-Python
``py3-none-any`` wheels; about 1 MB) and checked against its SHA-256 before use. For offline or
air-gapped builds, put the wheels in that folder. Docker bundling through a Lambda build image
(``BundlingOptions(image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"))``) is the
conventional route where Docker exists.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling, Stack
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

#: The Python runtime the constructs deploy (cdk-nag L1 wants the latest).
RUNTIME = lambda_.Runtime.PYTHON_3_14
#: The runtimes the layer supports (retrysafe needs Python 3.11+).
_COMPATIBLE_RUNTIMES = (lambda_.Runtime.PYTHON_3_11, lambda_.Runtime.PYTHON_3_12, lambda_.Runtime.PYTHON_3_13,
                       RUNTIME)
#: ``retrysafe.testing`` is the pytest plugin for users' test suites: it never runs in Lambda.
_IGNORE_RUNTIME = shutil.ignore_patterns("__pycache__", "*.pyc", "testing")
_LAYER_ID = "RetrysafeRuntimeLayer"
_LAYER_ID_WITHOUT_POWERTOOLS = "RetrysafeRuntimeLayerNoPowertools"
#: Where the pinned wheels are cached (and where offline builds put them).
WHEELS_ENV = "RETRYSAFE_LAYER_WHEELS"


@dataclass(frozen=True)
class Pin:
    """One wheel the layer ships: a pure-Python ``py3-none-any`` wheel of ``name==version`` with this SHA-256."""

    name: str
    version: str
    sha256: str

    @property
    def wheel(self) -> str:
        """The wheel's file name."""
        return f"{self.name.replace('-', '_')}-{self.version}-py3-none-any.whl"


#: What the layer ships besides retrysafe (upgrading them is a change of these lines, reviewed like code).
LAYER_PINS = (
    Pin("aws_lambda_powertools", "3.37.0", "92df3f790851a30cfb5ed45ff8e11f2de9b74e60aed0169d2a6b6da2362b45fb"),
    Pin("typing_extensions", "4.16.0", "481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8"),
)


def wheels_folder() -> Path:
    """The wheel cache: ``RETRYSAFE_LAYER_WHEELS``, else ``~/.cache/retrysafe/layer-wheels``."""
    configured = os.environ.get(WHEELS_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "retrysafe" / "layer-wheels"


def pinned_wheel(pin: Pin, folder: Path) -> Path:
    """The pinned wheel from ``folder``, downloaded there first when missing; refused if its SHA-256 differs."""
    wheel = folder / pin.wheel
    if not wheel.exists():
        folder.mkdir(parents=True, exist_ok=True)
        # Into a private folder first, then renamed: a synthesis running in parallel never reads half a wheel.
        with tempfile.TemporaryDirectory(dir=folder) as private:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                   "--only-binary=:all:", "--dest", private, f"{pin.name}=={pin.version}"],
                                  capture_output=True, text=True, timeout=300, check=False)
            fetched = Path(private) / pin.wheel
            if done.returncode != 0 or not fetched.exists():
                raise RuntimeError(f"cannot build the retrysafe layer: {pin.wheel} is not in {folder} and pip could "
                                   f"not download it ({done.stderr.strip()[-500:]}). Put the wheel there (or point "
                                   f"{WHEELS_ENV} at a folder that has it).")
            os.replace(fetched, wheel)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != pin.sha256:
        raise RuntimeError(f"cannot build the retrysafe layer: {wheel} has SHA-256 {digest}, the pin says "
                           f"{pin.sha256}. Delete the file to fetch it again, or fix the pin in retrysafe_cdk.layer.")
    return wheel


def unpack(wheel: Path, target: Path) -> None:
    """The wheel's modules into ``target`` (no ``*.dist-info``, no bytecode)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            top = member.filename.split("/", 1)[0]
            if member.is_dir() or top.endswith(".dist-info") or "__pycache__/" in member.filename \
                    or member.filename.endswith(".pyc"):
                continue
            destination = target / member.filename
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(archive.read(member))


def _runtime_sources() -> Path:
    spec = importlib.util.find_spec("retrysafe")
    if spec is None or spec.origin is None:
        raise RuntimeError("cannot build the retrysafe layer: 'retrysafe' is not installed (pip install -e '.[cdk]')")
    return Path(spec.origin).parent


@jsii.implements(ILocalBundling)
class _PinnedLayer:
    """Local bundling: retrysafe's sources and the pinned wheels into ``python/`` (no Docker)."""

    def __init__(self, pins: tuple[Pin, ...], bytecode: str | None = None) -> None:
        self.pins = pins
        self.bytecode = bytecode

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        source = _runtime_sources()
        shutil.copytree(source, target / source.name, ignore=_IGNORE_RUNTIME, dirs_exist_ok=True)
        folder = wheels_folder()
        for pin in self.pins:
            unpack(pinned_wheel(pin, folder), target)
        if self.bytecode is not None:
            compile_bytecode(target, self.bytecode)
        return True


def python_version(runtime: lambda_.Runtime) -> str:
    """The Python version (``3.14``) of a Lambda Python runtime; refused for any other runtime."""
    found = re.fullmatch(r"python(3\.\d+)", runtime.name)
    if found is None:
        raise ValueError(f"{runtime.name} is not a Lambda Python runtime")
    return found.group(1)


def compile_bytecode(target: Path, version: str) -> None:
    """Every module below ``target`` compiled to ``unchecked-hash`` bytecode for Python ``version``.

    Compiled by this interpreter, which must be that version (bytecode of another version is ignored
    by the runtime, or worse), in a fresh process with a fixed hash seed (the order of set constants
    follows string hashes) and the layer's own path recorded in the code objects: the same sources give
    the same bytes on every machine with that Python version.
    """
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here != version:
        raise RuntimeError(f"cannot compile the retrysafe layer's bytecode for Python {version}: this synthesis runs "
                           f"Python {here}, and bytecode is tied to the version that compiled it. Synthesize with "
                           f"Python {version}, or deploy the layer without bytecode (the default).")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash",
                    "-d", "/opt/python", str(target)],
                   env={**os.environ, "PYTHONHASHSEED": "0"}, check=True, capture_output=True, timeout=300)


def runtime_code(with_powertools: bool = True, bytecode_for: lambda_.Runtime | None = None) -> lambda_.Code:
    """The layer's code asset (hashed by content of the bundled output); see :func:`runtime_layer`."""
    bytecode = python_version(bytecode_for) if bytecode_for is not None else None
    return lambda_.Code.from_asset(
        str(_runtime_sources()),
        asset_hash_type=AssetHashType.OUTPUT,
        exclude=["**/__pycache__", "*.pyc"],
        bundling=BundlingOptions(image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
                                 local=cast(ILocalBundling,
                                            _PinnedLayer(LAYER_PINS if with_powertools else (), bytecode))),
    )


def runtime_layer(scope: Construct, *, with_powertools: bool = True,
                  bytecode_for: lambda_.Runtime | None = None) -> lambda_.ILayerVersion:
    """The stack's retrysafe runtime layer (created on first use, shared by every function).

    ``with_powertools=False``: the layer without Powertools, for functions that add the public
    Powertools layer themselves (a second, smaller layer of the stack). ``bytecode_for``: a layer
    for that runtime alone, with its modules compiled (see the module docstring); the synthesizing
    interpreter must be that runtime's Python version.
    """
    stack = Stack.of(scope)
    layer_id = _LAYER_ID if with_powertools else _LAYER_ID_WITHOUT_POWERTOOLS
    if bytecode_for is not None:
        layer_id += "Bytecode" + python_version(bytecode_for).replace(".", "")
    existing = stack.node.try_find_child(layer_id)
    if isinstance(existing, lambda_.LayerVersion):
        return existing
    description = ("retrysafe runtime + aws-lambda-powertools" if with_powertools else
                   "retrysafe runtime (Powertools from its public layer)")
    if bytecode_for is not None:
        description += f", compiled for {bytecode_for.name}"
    return lambda_.LayerVersion(
        stack, layer_id, code=runtime_code(with_powertools, bytecode_for),
        compatible_runtimes=[bytecode_for] if bytecode_for is not None else list(_COMPATIBLE_RUNTIMES),
        compatible_architectures=[lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64],
        description=description,
    )
