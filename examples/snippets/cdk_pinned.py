"""The example's table and inventory queue after a refactor moved them under ``Service`` (the constructs page)."""

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

HANDLERS = str(Path(__file__).parent)              # the folder with the handler modules


class MovedStack(Stack):
    """The stateful resources keep the logical ids they had at the top of the stack."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentQueueConsumer

        code = lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"])
        service = Construct(self, "Service")               # the refactor: everything moves in here
        # --8<-- [start:pinned]
        table = IdempotencyTable(service, "Idempotency", logical_id="IdempotencyTable48612DF4")
        reserve = IdempotentFunction(service, "ReserveStock", table=table, code=code,
                                     handler="sqs_consumer.handler")
        IdempotentQueueConsumer(service, "InventoryQueue", function=reserve,
                                subscriber="InventoryQueue",  # what it was before the move
                                queue_logical_id="InventoryQueue9CB6A1E3",
                                dead_letter_queue_logical_id="InventoryQueueDeadLetterQueue0100568D")
        # --8<-- [end:pinned]
