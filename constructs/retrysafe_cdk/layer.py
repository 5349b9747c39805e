"""The retrysafe runtime as a Lambda layer, built from the package's own sources without Docker.

The layer holds ``python/retrysafe`` (this project's runtime) and, unless the
functions use the public Powertools layer instead, the installed pure-Python
``aws_lambda_powertools`` with its ``typing_extensions`` dependency (boto3 and
jmespath come with the Lambda Python runtime). ``__pycache__``, ``*.pyc`` and
the test plugin ``retrysafe.testing`` are never copied, so the asset hash only
changes when the code does.

Bytecode: when an interpreter of the functions' Python version is available
(``RETRYSAFE_LAYER_PYTHON``, else ``python3.14`` on ``PATH``), the copied sources
are compiled with it (``compileall``, unchecked-hash ``.pyc``: valid whatever the
files' times in the zip), which saves the cold start from compiling them. Without
one the layer ships sources only; Docker bundling through a Lambda build image
(``BundlingOptions(image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"))``)
is the conventional route where Docker exists.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import cast

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling, Stack
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

#: The Python runtime the constructs deploy (cdk-nag L1 wants the latest).
RUNTIME = lambda_.Runtime.PYTHON_3_14
#: The runtimes the layer supports (retrysafe needs Python 3.11+); bytecode is compiled for :data:`RUNTIME`.
COMPATIBLE_RUNTIMES = (lambda_.Runtime.PYTHON_3_11, lambda_.Runtime.PYTHON_3_12, lambda_.Runtime.PYTHON_3_13,
                       RUNTIME)
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")
#: ``retrysafe.testing`` is the pytest plugin for users' test suites: it never runs in Lambda.
_IGNORE_RUNTIME = shutil.ignore_patterns("__pycache__", "*.pyc", "testing")
_LAYER_ID = "RetrysafeRuntimeLayer"
_LAYER_ID_WITHOUT_POWERTOOLS = "RetrysafeRuntimeLayerNoPowertools"
#: Names an interpreter to compile the layer's bytecode with (it must be the functions' Python version).
LAYER_PYTHON_ENV = "RETRYSAFE_LAYER_PYTHON"
WITH_POWERTOOLS = ("retrysafe", "aws_lambda_powertools", "typing_extensions")


def matching_interpreter() -> str | None:
    """An interpreter of :data:`RUNTIME`'s Python version (``RETRYSAFE_LAYER_PYTHON`` or on PATH), if any."""
    wanted = RUNTIME.name.removeprefix("python")  # e.g. "3.14"
    candidate = os.environ.get(LAYER_PYTHON_ENV) or shutil.which(f"python{wanted}")
    if not candidate:
        return None
    try:
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    return candidate if done.returncode == 0 and done.stdout.strip() == wanted else None


def compile_bytecode(directory: Path, interpreter: str) -> None:
    """Compile every module under ``directory`` with ``interpreter`` (unchecked-hash pycs, deterministic)."""
    subprocess.run([interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
                    str(directory)], check=True, timeout=300, capture_output=True)


def _location(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"cannot build the retrysafe layer: {module!r} is not installed (pip install -e '.[cdk]')")
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


@jsii.implements(ILocalBundling)
class _CopySources:
    """Local bundling: copy the packages into ``python/`` (no Docker, no pip, no network)."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        self.modules = modules

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        for module in self.modules:
            source = _location(module)
            if source.is_dir():
                ignore = _IGNORE_RUNTIME if module == "retrysafe" else _IGNORE
                shutil.copytree(source, target / source.name, ignore=ignore, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target / source.name)
        interpreter = matching_interpreter()
        if interpreter is not None:
            compile_bytecode(target, interpreter)
        return True


def runtime_code(with_powertools: bool = True) -> lambda_.Code:
    """The layer's code asset (hashed by content of the bundled output)."""
    modules = WITH_POWERTOOLS if with_powertools else ("retrysafe",)
    return lambda_.Code.from_asset(
        str(_location("retrysafe")),
        asset_hash_type=AssetHashType.OUTPUT,
        exclude=["**/__pycache__", "*.pyc"],
        bundling=BundlingOptions(image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
                                 local=cast(ILocalBundling, _CopySources(modules))),
    )


def runtime_layer(scope: Construct, *, with_powertools: bool = True) -> lambda_.ILayerVersion:
    """The stack's retrysafe runtime layer (created on first use, shared by every function).

    ``with_powertools=False``: the layer without Powertools, for functions that add the public
    Powertools layer themselves (a second, smaller layer of the stack).
    """
    stack = Stack.of(scope)
    layer_id = _LAYER_ID if with_powertools else _LAYER_ID_WITHOUT_POWERTOOLS
    existing = stack.node.try_find_child(layer_id)
    if isinstance(existing, lambda_.LayerVersion):
        return existing
    return lambda_.LayerVersion(
        stack, layer_id, code=runtime_code(with_powertools), compatible_runtimes=list(COMPATIBLE_RUNTIMES),
        compatible_architectures=[lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64],
        description="retrysafe runtime + aws-lambda-powertools" if with_powertools else
        "retrysafe runtime (Powertools from its public layer)",
    )
