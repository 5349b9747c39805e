"""The business tables both examples use: on-demand, encrypted, point-in-time recovery, kept on delete."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb

from constructs import Construct


def business_table(scope: Construct, construct_id: str, *,
                   stream: dynamodb.StreamViewType | None = None) -> dynamodb.Table:
    """A table keyed by ``pk`` (string) with the secure defaults cdk-nag asks for; ``stream``: its stream's view."""
    return dynamodb.Table(
        scope, construct_id, partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST, encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=True),
        stream=stream, removal_policy=RemovalPolicy.RETAIN)
