"""An HTTP API (v2) app on the sandbox: v2 events, the authorizer's tenant, replay and 422 over real HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from retrysafe_cdk.sandbox import Options, Sandbox

HANDLERS = Path(__file__).parent / "http_api_handlers"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-route HTTP API app built from the constructs, synthesized once."""
    import aws_cdk as cdk
    from aws_cdk import aws_apigatewayv2_authorizers as authorizers
    from aws_cdk import aws_lambda as lambda_
    from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentHttpApi

    from app import feature_flags

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context=feature_flags(), outdir=str(outdir))
    stack = cdk.Stack(app, "Notes")
    table = IdempotencyTable(stack, "Idempotency")
    code = lambda_.Code.from_asset(str(HANDLERS), exclude=["__pycache__", "*.pyc"])
    notes = IdempotentFunction(stack, "CreateNote", table=table, code=code, handler="echo.handler")
    IdempotentHttpApi(stack, "Api", authorizer=authorizers.HttpIamAuthorizer()).add_route("POST", "/notes", notes)
    app.synth()
    return outdir


def post(url: str, key: str, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Idempotency-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_http_api_routes_get_v2_events_and_the_contract(assembly: Path, tmp_path: Path) -> None:
    with Sandbox(Options(assembly=assembly, tenant="acme", log_dir=tmp_path), lambda _: None) as sandbox:
        [api] = sandbox.apis
        url = api.url.rstrip("/") + "/notes"
        status, _, first = post(url, "note-1", {"text": "hello"})
        again_status, headers, again = post(url, "note-1", {"text": "hello"})
        other_status, other_headers, problem = post(url, "note-1", {"text": "changed"})
        dynamodb = sandbox.client("dynamodb")
        # the embedded AWS may still hold other tests' tables: this stack's are named "Notes-..."
        [table] = [t for t in dynamodb.list_tables()["TableNames"] if t.startswith("Notes-")]
        notes = dynamodb.scan(TableName=table)["Items"]
    assert status == 201 and first["version"] == "2.0"
    assert again_status == 201 and again == first and headers.get("Idempotent-Replayed") == "true"
    assert other_status == 422 and other_headers["Content-Type"] == "application/problem+json"
    assert problem["type"] == "urn:retrysafe:problem:idempotency-key-reused"
    stored = [n for n in notes if n["pk"]["S"].startswith("note#")]
    # IAM authorization: the tenant is the calling principal the sandbox emulates for tenant "acme"
    assert len(stored) == 1 and stored[0]["tenant"]["S"].endswith(":user/acme")

