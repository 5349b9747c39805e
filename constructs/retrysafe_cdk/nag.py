"""cdk-nag acknowledgments, always with the reason written next to the code that needs them."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations

from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge ``rule`` (e.g. ``AwsSolutions-IAM5``) on ``scope`` and its children."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))
