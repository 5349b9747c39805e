"""The orders function deployed with the cut-over from Powertools on (the snippet of the migration guide)."""

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

HANDLERS = str(Path(__file__).parent)              # the folder with the handler modules


class CutoverStack(Stack):
    """The stack after the switch: retrysafe's table, and Powertools' table read during the window."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # --8<-- [start:cutover]
        from retrysafe_cdk import CutoverFromPowertools, IdempotencyTable, IdempotentFunction

        self.orders = IdempotentFunction(
            self, "Orders", table=IdempotencyTable(self, "Idempotency"),
            code=lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"]),
            handler="powertools_cutover.handler",
            powertools_cutover=CutoverFromPowertools(
                # the table the old DynamoDBPersistenceLayer wrote to: kept, and only read
                table=dynamodb.Table.from_table_name(self, "PowertoolsTable", "orders-idempotency"),
                # the old function (or its name): Powertools began every key with it, this one has another
                function="orders",
                # the deploy ends by 12:00 UTC, the old expires_after_seconds was 3600: one hour later
                until=datetime(2027, 1, 8, 13, 0, tzinfo=UTC)))
        # --8<-- [end:cutover]
