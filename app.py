#!/usr/bin/env python3
"""CDK app: the example orders service and order saga (``cdk synth`` / ``cdk deploy``).

Environment-agnostic and free of context lookups, so synthesis needs no AWS
credentials and no network. The feature flags come from ``cdk.json`` also when
the app runs without the CLI (``python app.py``, tests), so every path
synthesizes the same template. cdk-nag's AwsSolutions pack runs as a validation
plugin: any unacknowledged finding fails synthesis.
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from examples.orders.stack import OrdersStack
from examples.saga.stack import SagaStack

ROOT = Path(__file__).resolve().parent


def feature_flags() -> dict[str, object]:
    """The context (feature flags) pinned in ``cdk.json``."""
    context: dict[str, object] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return context


def build(outdir: str | None = None) -> cdk.App:
    """The app with the example stacks and cdk-nag attached (not yet synthesized)."""
    app = cdk.App(context=feature_flags(), outdir=outdir)
    OrdersStack(app, "RetrysafeOrders", description="retrysafe example: idempotent orders service")
    SagaStack(app, "RetrysafeSaga", description="retrysafe example: order saga on Step Functions")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build().synth()
