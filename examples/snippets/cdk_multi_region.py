"""A global table in two regions: one strategy (home regions) for the functions of both, one outbox relay."""

from pathlib import Path
from typing import Any

from aws_cdk import Environment, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from retrysafe import HomeRegions, names

from constructs import Construct

HANDLERS = str(Path(__file__).parent)              # the folder with the handler modules

# --8<-- [start:stacks]
HOMES = HomeRegions("eu-west-1", tenants={"acme": "us-east-1"})  # the same mapping in every region's stack


class HomeStack(Stack):
    """eu-west-1: the table with its us-east-1 replica, the outbox relay, this region's functions."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, env=Environment(region="eu-west-1"), **kwargs)
        from retrysafe_cdk import IdempotencyTable, IdempotentFunction, Outbox, OutboxTarget

        text = dynamodb.AttributeType.STRING
        global_table = dynamodb.TableV2(  # the idempotency table's schema, with a replica in us-east-1
            self, "Table", table_name="idempotency", partition_key=dynamodb.Attribute(name="pk", type=text),
            time_to_live_attribute="exp", dynamo_stream=dynamodb.StreamViewType.NEW_IMAGE,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True),
            global_secondary_indexes=[dynamodb.GlobalSecondaryIndexPropsV2(
                index_name=names.OUTBOX_INDEX, partition_key=dynamodb.Attribute(name=names.UNPUBLISHED_ATTRIBUTE, type=text),
                sort_key=dynamodb.Attribute(name="at", type=text))],
            replicas=[dynamodb.ReplicaTableProps(region="us-east-1")])
        table = IdempotencyTable(self, "Idempotency", existing_table=global_table, home_regions=HOMES)
        Outbox(self, "Outbox", table=table, target=OutboxTarget.event_bus(events.EventBus(self, "Bus")))
        IdempotentFunction(self, "CreateOrder", table=table, code=lambda_.Code.from_asset(HANDLERS),
                           handler="http_atomic.handler")


class FarStack(Stack):
    """us-east-1: this region's functions on the replica here, routed to each tenant's home; no relay."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, env=Environment(region="us-east-1"), **kwargs)
        from retrysafe_cdk import IdempotencyTable, IdempotentFunction

        replica = dynamodb.Table.from_table_name(self, "Replica", "idempotency")
        table = IdempotencyTable(self, "Idempotency", existing_table=replica, home_regions=HOMES)
        IdempotentFunction(self, "CreateOrder", table=table, code=lambda_.Code.from_asset(HANDLERS),
                           handler="http_atomic.handler")
# --8<-- [end:stacks]
