"""An HTTP API (v2) app on the sandbox: v2 events, its authorizers from the template, replay and 422 over real HTTP.

Three routes to one idempotent function, each behind another authorizer kind: IAM (SigV4 with
the local secret), a Lambda REQUEST authorizer with simple responses and a result cache, and
a JWT authorizer with a scope (tokens minted with the sandbox's local key).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from retrysafe import names
from retrysafe_sandbox import Options, Sandbox
from retrysafe_sandbox.tokens import LOCAL_SECRET_KEY, mint

HANDLERS = Path(__file__).parent / "http_api_handlers"
ISSUER, AUDIENCE = "https://issuer.example", "notes-app"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app built from the constructs and CDK's HTTP API authorizers, synthesized once."""
    import aws_cdk as cdk
    from aws_cdk import aws_apigatewayv2 as apigwv2
    from aws_cdk import aws_apigatewayv2_authorizers as authorizers
    from aws_cdk import aws_apigatewayv2_integrations as integrations
    from aws_cdk import aws_lambda as lambda_
    from retrysafe_cdk import IdempotencyTable, IdempotentFunction, IdempotentHttpApi, python_function

    from app import feature_flags
    from constructs import Construct

    outdir = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(context=feature_flags(), outdir=str(outdir))
    stack = cdk.Stack(app, "Notes")
    table = IdempotencyTable(stack, "Idempotency")
    code = lambda_.Code.from_asset(str(HANDLERS), exclude=["__pycache__", "*.pyc"])
    notes = IdempotentFunction(stack, "CreateNote", table=table, code=code, handler="echo.handler")
    api = IdempotentHttpApi(stack, "Api", authorizer=authorizers.HttpIamAuthorizer())
    api.add_route("POST", "/notes", notes)
    gate, _, _ = python_function(Construct(stack, "Gate"), code=code, handler="gate.handler")
    integration = integrations.HttpLambdaIntegration("Notes", notes.function)
    api.http_api.add_routes(path="/keyed", methods=[apigwv2.HttpMethod.POST], integration=integration,
                            authorizer=authorizers.HttpLambdaAuthorizer(
                                "Key", gate, identity_source=["$request.header.X-Api-Key"],
                                response_types=[authorizers.HttpLambdaResponseType.SIMPLE],
                                results_cache_ttl=cdk.Duration.minutes(5)))
    api.http_api.add_routes(path="/signed", methods=[apigwv2.HttpMethod.POST], integration=integration,
                            authorization_scopes=["notes/write"],
                            authorizer=authorizers.HttpJwtAuthorizer("Jwt", ISSUER, jwt_audience=[AUDIENCE]))
    app.synth()
    return outdir


def post(url: str, key: str, body: dict[str, Any], headers: dict[str, str] | None = None,
         sign_as: str | None = None) -> tuple[int, dict[str, str], dict[str, Any]]:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", names.IDEMPOTENCY_KEY_HEADER: key, **(headers or {})}
    if sign_as is not None:  # SigV4 for execute-api with the sandbox's local secret
        signed = AWSRequest(method="POST", url=url, data=data, headers=headers)
        SigV4Auth(Credentials(sign_as, LOCAL_SECRET_KEY), "execute-api", "eu-west-1").add_auth(signed)
        headers = dict(signed.headers.items())
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def test_http_api_routes_get_v2_events_and_their_authorizers(assembly: Path, tmp_path: Path) -> None:
    with Sandbox(Options(assembly=assembly, tenant="acme", log_dir=tmp_path), lambda _: None) as sandbox:
        [api] = sandbox.apis
        url = api.url.rstrip("/")
        status, _, first = post(f"{url}/notes", "note-1", {"text": "hello"}, sign_as="acme")
        again_status, headers, again = post(f"{url}/notes", "note-1", {"text": "hello"}, sign_as="acme")
        other_status, other_headers, problem = post(f"{url}/notes", "note-1", {"text": "changed"}, sign_as="acme")
        unsigned, _, unsigned_body = post(f"{url}/notes", "note-2", {"text": "x"})
        forged, _, _ = post(f"{url}/notes", "note-2", {"text": "x"},
                            {"Authorization": "AWS4-HMAC-SHA256 Credential=acme/20260101/eu-west-1/execute-api/"
                                              "aws4_request, SignedHeaders=host;x-amz-date, Signature=00",
                             "X-Amz-Date": "20260101T000000Z"})

        keyed = [post(f"{url}/keyed", f"k-{n}", {"text": "k"}, {"X-Api-Key": "ok-globex"})[0] for n in range(3)]
        refused, _, refused_body = post(f"{url}/keyed", "k-x", {"text": "k"}, {"X-Api-Key": "no-globex"})
        keyless, _, _ = post(f"{url}/keyed", "k-y", {"text": "k"})

        token = mint("initech", ISSUER, [AUDIENCE], ["notes/write"])
        jwt_ok, _, _ = post(f"{url}/signed", "j-1", {"text": "j"}, {"Authorization": f"Bearer {token}"})
        no_scope = mint("initech", ISSUER, [AUDIENCE])
        jwt_scope, _, _ = post(f"{url}/signed", "j-2", {"text": "j"}, {"Authorization": f"Bearer {no_scope}"})
        other_aud = mint("initech", ISSUER, ["elsewhere"], ["notes/write"])
        jwt_aud, _, _ = post(f"{url}/signed", "j-3", {"text": "j"}, {"Authorization": other_aud})

        dynamodb = sandbox.client("dynamodb")
        # the embedded AWS may still hold other tests' tables: this stack's are named "Notes-..."
        [table] = [t for t in dynamodb.list_tables()["TableNames"] if t.startswith("Notes-")]
        notes = dynamodb.scan(TableName=table)["Items"]
        ledger = sandbox.ledger
    assert status == 201 and first["version"] == "2.0"
    assert again_status == 201 and again == first and headers.get(names.REPLAYED_HEADER) == "true"
    assert other_status == 422 and other_headers["Content-Type"] == "application/problem+json"
    assert problem["type"] == "urn:retrysafe:problem:idempotency-key-reused"
    assert (unsigned, unsigned_body, forged) == (403, {"message": "Missing Authentication Token"}, 403)
    # the Lambda authorizer ran once for the key (cached 5 minutes), refused the other, never saw the keyless one
    assert keyed == [201, 201, 201] and (refused, refused_body, keyless) == (403, {"message": "Forbidden"}, 401)
    assert {k: n for k, n in ledger.authorizers.items() if k.endswith(": invoked")}.popitem()[1] == 2
    assert (jwt_ok, jwt_scope, jwt_aud) == (201, 403, 401)
    tenants = sorted(n["tenant"]["S"] for n in notes if n["pk"]["S"].startswith("note#"))
    # the tenant each authorizer reported: the SigV4 caller, the Lambda context's tenantId, the JWT's tenant_id
    assert tenants == ["arn:aws:iam::123456789012:user/acme", "globex", "globex", "globex", "initech"]
    assert not ledger.denied and ledger.iam["allowed"] >= 5
