"""A CDK Pipelines-shaped app: the service stack inside a ``cdk.Stage``, cdk-nag attached, one unacknowledged
finding (a queue without a DLQ or TLS). Run by the CLI in ``test_stage_nag.py``."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks

from app import feature_flags


def build() -> cdk.App:
    """The app (cdk-nag attached, not yet synthesized)."""
    app = cdk.App(context=feature_flags())
    stack = cdk.Stack(cdk.Stage(app, "Prod"), "Service")
    sqs.Queue(stack, "Unguarded")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build().synth()
