"""Small construct builders shared by the in-process validation tests."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from retrysafe_cdk import IdempotencyTable, IdempotentFunction

DAY = 86_400


def new_stack(name: str) -> cdk.Stack:
    """A stack in a fresh app (no synthesis)."""
    return cdk.Stack(cdk.App(), name)


def inline_function(stack: cdk.Stack, table: IdempotencyTable, timeout: int = 10) -> IdempotentFunction:
    """An idempotent function with inline code and the given timeout (seconds)."""
    return IdempotentFunction(stack, f"Fn{timeout}", table=table, code=lambda_.Code.from_inline("x = 1"),
                              handler="index.handler",
                              function_props=lambda_.FunctionOptions(timeout=Duration.seconds(timeout)))
