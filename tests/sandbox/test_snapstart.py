"""The sandbox ignores SnapStart: a stack whose functions have ``snap_start=True`` (routes and mappings naming
their alias) runs as the same stack without it, on each function's ``$LATEST``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from retrysafe import names
from retrysafe_sandbox import Options, Sandbox

from .test_http_api import HANDLERS, post


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import aws_cdk as cdk
    from aws_cdk import aws_apigatewayv2_authorizers as authorizers
    from aws_cdk import aws_lambda as lambda_
    from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentHttpApi, IdempotentQueueConsumer

    from app import feature_flags

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context=feature_flags(), outdir=str(outdir))
    stack = cdk.Stack(app, "Snapped")
    table = IdempotencyTable(stack, "Idempotency")
    code = lambda_.Code.from_asset(str(HANDLERS), exclude=["__pycache__", "*.pyc"])
    notes = IdempotentFunction(stack, "CreateNote", table=table, code=code, handler="echo.handler", snap_start=True)
    IdempotentHttpApi(stack, "Api", authorizer=authorizers.HttpIamAuthorizer()).add_route("POST", "/notes", notes)
    queued = IdempotentFunction(stack, "Queued", table=table, code=code, handler="queued.handler", snap_start=True)
    IdempotentQueueConsumer(stack, "Inbox", function=queued)
    app.synth()
    return outdir


def test_snapstart_functions_serve_routes_and_mappings_in_the_sandbox(assembly: Path, tmp_path: Path) -> None:
    with Sandbox(Options(assembly=assembly, tenant="acme", log_dir=tmp_path), lambda _: None) as sandbox:
        [api] = sandbox.apis
        url = api.url.rstrip("/")
        status, _, first = post(f"{url}/notes", "snap-1", {"text": "hello"}, sign_as="acme")
        again, headers, replayed = post(f"{url}/notes", "snap-1", {"text": "hello"}, sign_as="acme")
        sqs = sandbox.client("sqs")
        [queue] = [u for u in sqs.list_queues()["QueueUrls"] if "Snapped-InboxQueue" in u]
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"text": "queued"}))
        assert sandbox.settle(timeout=120)
        dynamodb = sandbox.client("dynamodb")
        [table] = [t for t in dynamodb.list_tables()["TableNames"] if t.startswith("Snapped-")]
        items = dynamodb.scan(TableName=table)["Items"]
        denied = sandbox.ledger.denied
    assert status == 201 and again == 201 and replayed == first and headers.get(names.REPLAYED_HEADER) == "true"
    assert [i["text"]["S"] for i in items if i["pk"]["S"].startswith("queued#")] == ["queued"]
    assert not denied
