"""An API whose function starts from a SnapStart snapshot (the snippet of the SnapStart page)."""

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

HANDLERS = str(Path(__file__).parent)              # the folder with the handler modules


class SnapStartStack(Stack):
    """One route, served by the published version behind the alias ``live``."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # --8<-- [start:snapstart]
        from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentRestApi

        table = IdempotencyTable(self, "Idempotency")
        create = IdempotentFunction(self, "CreateOrder", table=table, handler="http_atomic.handler",
                                    code=lambda_.Code.from_asset(HANDLERS, exclude=["__pycache__", "*.pyc"]),
                                    snap_start=True)            # publishes a version, alias "live"
        api = IdempotentRestApi(self, "Api", iam_authorization=True)
        api.add_route("POST", "/orders", create)                 # the route invokes create.alias
        # --8<-- [end:snapstart]
        self.function = create
