"""The retrysafe runtime as a Lambda layer, built from the package's own sources without Docker.

The layer holds ``python/retrysafe`` (this project's runtime) and the installed
pure-Python ``aws_lambda_powertools`` with its ``typing_extensions`` dependency
(boto3 and jmespath come with the Lambda Python runtime). ``__pycache__``,
``*.pyc`` and the test plugin ``retrysafe.testing`` are never copied, so the asset hash only changes when the code does.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import cast

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling, Stack
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

#: The Python runtime the constructs deploy (cdk-nag L1 wants the latest).
RUNTIME = lambda_.Runtime.PYTHON_3_14
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")
#: ``retrysafe.testing`` is the pytest plugin for users' test suites: it never runs in Lambda.
_IGNORE_RUNTIME = shutil.ignore_patterns("__pycache__", "*.pyc", "testing")
_LAYER_ID = "RetrysafeRuntimeLayer"


def _location(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"cannot build the retrysafe layer: {module!r} is not installed (pip install -e '.[cdk]')")
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


@jsii.implements(ILocalBundling)
class _CopySources:
    """Local bundling: copy the packages into ``python/`` (no Docker, no pip, no network)."""

    def try_bundle(self, output_dir: str, options: BundlingOptions) -> bool:
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        for module in ("retrysafe", "aws_lambda_powertools", "typing_extensions"):
            source = _location(module)
            if source.is_dir():
                ignore = _IGNORE_RUNTIME if module == "retrysafe" else _IGNORE
                shutil.copytree(source, target / source.name, ignore=ignore, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target / source.name)
        return True


def runtime_code() -> lambda_.Code:
    """The layer's code asset (hashed by content of the bundled output)."""
    return lambda_.Code.from_asset(
        str(_location("retrysafe")),
        asset_hash_type=AssetHashType.OUTPUT,
        exclude=["**/__pycache__", "*.pyc"],
        bundling=BundlingOptions(image=DockerImage.from_registry("public.ecr.aws/sam/build-python3.14"),
                                 local=cast(ILocalBundling, _CopySources())),
    )


def runtime_layer(scope: Construct) -> lambda_.ILayerVersion:
    """The stack's one retrysafe runtime layer (created on first use, shared by every function)."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(_LAYER_ID)
    if isinstance(existing, lambda_.LayerVersion):
        return existing
    return lambda_.LayerVersion(
        stack, _LAYER_ID, code=runtime_code(), compatible_runtimes=[RUNTIME],
        compatible_architectures=[lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64],
        description="retrysafe runtime + aws-lambda-powertools",
    )
