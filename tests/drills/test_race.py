"""64 concurrent identical requests against moto's server (real HTTP, real threads): exactly one effect,
on botocore's client and on the fast transport (:mod:`retrysafe._crt`).

moto's server is not DynamoDB: its ``UpdateItem`` is not atomic under threads
(a claim can pass its condition twice, a reader can see a bare item) and a
cancelled ``TransactWriteItems`` restores a table copy taken before it started
(a concurrently committed write is lost: the order item lost its counter, a
flake on a loaded machine). The client therefore goes through
:class:`~retrysafe.testing.DynamoSemantics`, which gives DynamoDB's documented
guarantees (each request atomic, transactions all-or-nothing); the requests
still interleave freely between DynamoDB calls, which is the race that matters.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from retrysafe import Engine, Transaction, idempotent_http, names
from retrysafe._store import DynamoStore
from retrysafe.testing import Boundary, DynamoSemantics
from retrysafe.testing._adapters import classify_http
from retrysafe.testing._events import DrillContext, api_event
from retrysafe.testing._plugin import create_table

from tests.helpers import create_business_table

N = 64


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """moto's server on 127.0.0.1 with the race's tables."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    admin = boto3.client("dynamodb", endpoint_url=endpoint, region_name="eu-west-1", aws_access_key_id="testing",
                         aws_secret_access_key="testing")
    create_table(admin, "race-idempotency")
    create_business_table(admin, "race-orders")
    yield endpoint
    server.stop()


@pytest.fixture(scope="module", params=["botocore", "crt"])
def server_client(request: pytest.FixtureRequest, server: str) -> Any:
    """The store's transport, with the engine's retries: botocore's client, or the fast transport (awscrt)."""
    if request.param == "crt":
        from awscrt import auth
        from retrysafe._crt import CrtTransport

        return CrtTransport("eu-west-1", server, credentials=auth.AwsCredentialsProvider.new_static("testing", "testing"))
    return boto3.client("dynamodb", endpoint_url=server, region_name="eu-west-1", aws_access_key_id="testing",
                        aws_secret_access_key="testing",
                        config=Config(max_pool_connections=N, retries={"mode": "standard", "max_attempts": 4}))


@pytest.mark.parametrize("mode", ["atomic", "claim_first"])
def test_64_concurrent_identical_requests_make_one_effect(server_client: Any, mode: str) -> None:
    runs: Counter[str] = Counter()

    def create(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        runs["handler"] += 1
        order = txn.derive_key("order")[:16]
        txn.update({"pk": f"order#{order}"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1},
                   table="race-orders")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"order": order})}

    semantics = DynamoSemantics().install(server_client)
    store = DynamoStore("race-idempotency", client=server_client)
    transport = type(server_client).__name__  # each transport races on a key of its own, in the same tables
    handler = idempotent_http(create, operation=f"Race-{mode}-{transport}", mode=mode, engine=Engine(store))
    boundary = Boundary(server_client)
    event = api_event(json.dumps({"amount": 1}), headers={names.IDEMPOTENCY_KEY_HEADER: f"race-key-{transport}"})
    barrier = threading.Barrier(N)
    answers = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait()
        answer = classify_http(handler(event, DrillContext()))
        with lock:
            answers.append(answer)

    try:
        threads = [threading.Thread(target=one) for _ in range(N)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        final = classify_http(handler(event, DrillContext()))
    finally:
        boundary.close()
        semantics.uninstall(server_client)
    kinds = Counter(a.describe() for a in answers)
    print(f"{mode}: {dict(kinds)}; handler ran {runs['handler']} times")
    assert len(answers) == N
    allowed = {"executed", "replayed"} if mode == "atomic" else {"executed", "replayed", "in_flight"}
    assert {a.kind for a in answers} <= allowed, kinds
    assert sum(1 for a in answers if a.kind == "executed") == 1, kinds
    effects = boundary.effects()
    assert len(effects) == 1, effects
    item = server_client.get_item(TableName="race-orders", Key={"pk": {"S": effects[0].writes[0][1][3:]}},
                                  ConsistentRead=True)["Item"]
    assert item["n"]["N"] == "1"
    assert final.kind == "replayed" and final.value == json.loads(effects[0].result["b"])
    for answer in answers:
        if answer.kind in ("executed", "replayed"):
            assert answer.value == final.value
