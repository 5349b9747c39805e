"""The transport seam: faults injected at a transport's attempt seam, whatever the transport.

Two things are pinned here. A fault injected through :class:`~retrysafe.testing.Boundary` (at the
seam) reaches the engine exactly as the same fault written as a raw botocore ``before-send`` hook
did (a lost answer after DynamoDB applied the write; a transaction cancelled with
``CancellationReasons``). And the seam serves a DynamoDB transport that is not botocore's client:
the fast transport (:mod:`retrysafe._crt`, awscrt, speaking DynamoDB's JSON protocol to moto's
server itself, every attempt through its own :class:`~retrysafe._transport.Attempts`) gives the
same outcome and the same round trips in the same drills as botocore's client.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from retrysafe import Engine, idempotent_http
from retrysafe._store import DynamoStore
from retrysafe.errors import StoreUnavailableError
from retrysafe.names import RECORD_PREFIX, REPLAYED_HEADER
from retrysafe.testing import ALWAYS, Boundary, DynamoSemantics, instant_retries
from retrysafe.testing._boundary import completes_record
from retrysafe.testing._events import DrillContext, rest_event
from retrysafe.testing._plugin import create_table

from tests.helpers import ORDERS, TABLE, create_business_table


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    made = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    made.start()
    host, port = made.get_host_and_port()
    yield f"http://{host}:{port}"
    # the server's tables are moto's in-process ones: leave none behind for the next module's server
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")).close()
    made.stop()


@pytest.fixture
def endpoint(server: str) -> str:
    """moto's server with the tables (made again when missing: the server shares moto's in-process backends,
    which a ``mock_aws`` test resets when it ends)."""
    import boto3

    admin = boto3.client("dynamodb", endpoint_url=server, region_name="eu-west-1", aws_access_key_id="testing",
                         aws_secret_access_key="testing")
    tables = admin.list_tables()["TableNames"]
    if TABLE not in tables:
        create_table(admin, TABLE)
    if ORDERS not in tables:
        create_business_table(admin, ORDERS)
    return server


def botocore_client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="eu-west-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing",
                          config=Config(retries={"mode": "standard", "total_max_attempts": 3}))
    instant_retries(client)
    return client


def crt_transport(endpoint: str) -> Any:
    """The fast transport (:mod:`retrysafe._crt`), with the attempts and instant retries of the others."""
    from awscrt import auth
    from retrysafe._crt import CrtTransport

    return CrtTransport("eu-west-1", endpoint, credentials=auth.AwsCredentialsProvider.new_static("testing", "testing"),
                        max_attempts=3, quota=2**62, sleep=lambda _: None)


TRANSPORTS: dict[str, Callable[[str], Any]] = {"botocore": botocore_client, "crt": crt_transport}


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest, endpoint: str) -> Iterator[Any]:
    made = TRANSPORTS[request.param](endpoint)
    semantics = DynamoSemantics().install(made)
    yield made
    semantics.uninstall(made)


def quote_handler(runs: list[int]) -> Callable[..., dict[str, Any]]:
    def quote(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        runs.append(1)
        return {"statusCode": 201, "body": json.dumps({"quote": f"q-{len(runs)}"})}

    return quote


def order_handler(runs: list[int]) -> Callable[..., dict[str, Any]]:
    def order(event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        runs.append(1)
        txn.put({"pk": f"order#{uuid.uuid4().hex}", "n": 1}, table=ORDERS)
        return {"statusCode": 201, "body": "{}"}

    return order


def test_a_lost_answer_on_any_transport_is_retried_and_answers_the_handlers_own_response(transport: Any) -> None:
    """The completing put applied, its answer lost: the transport's own retry meets its own record."""
    boundary = Boundary(transport)
    runs: list[int] = []
    handler = idempotent_http(quote_handler(runs), operation=f"Lost-{uuid.uuid4().hex}",
                              engine=Engine(DynamoStore(TABLE, client=transport)))
    boundary.lose_response("PutItem", match=completes_record)
    answer = handler(rest_event({"amount": 50}), DrillContext())
    boundary.close()
    assert answer["statusCode"] == 201 and REPLAYED_HEADER not in answer.get("headers", {}) and runs == [1]
    assert boundary.fired == [("PutItem", "lost response")]
    # two attempts: the applied one (its answer lost) and the retry, answered with its own record (ALL_OLD)
    assert boundary.calls == {"PutItem": 1}
    [sent, resent] = boundary.sent
    assert sent == resent and str(sent[1]).startswith(RECORD_PREFIX)
    [commit] = boundary.effects()
    assert commit.completes and commit.record_id == sent[1]


def test_every_answer_lost_on_any_transport_is_unavailable_after_its_retries(transport: Any) -> None:
    boundary = Boundary(transport)
    runs: list[int] = []
    handler = idempotent_http(quote_handler(runs), operation=f"Gone-{uuid.uuid4().hex}",
                              engine=Engine(DynamoStore(TABLE, client=transport)))
    boundary.lose_response("PutItem", match=completes_record, times=ALWAYS)
    answer = handler(rest_event({"amount": 50}), DrillContext())
    boundary.close()
    assert answer["statusCode"] == 503
    assert boundary.fired == [("PutItem", "lost response")] * 3 and len(boundary.sent) == 3


def test_a_transaction_cancelled_for_throttling_on_any_transport_stores_nothing(transport: Any) -> None:
    boundary = Boundary(transport)
    runs: list[int] = []
    store = DynamoStore(TABLE, client=transport)
    handler = idempotent_http(order_handler(runs), operation=f"Cancel-{uuid.uuid4().hex}", engine=Engine(store))
    boundary.cancel(("ThrottlingError",))
    answer = handler(rest_event({"amount": 5}), DrillContext())
    boundary.close()
    assert answer["statusCode"] == 503 and answer["headers"]["Retry-After"]
    assert boundary.fired == [("TransactWriteItems", "error")] and boundary.commits == []
    assert boundary.calls == {}  # DynamoDB answered nothing: the cancellation came from the seam


def test_a_raced_put_on_any_transport_is_resent_by_its_retries(transport: Any) -> None:
    boundary = Boundary(transport)
    runs: list[int] = []
    handler = idempotent_http(quote_handler(runs), operation=f"Raced-{uuid.uuid4().hex}",
                              engine=Engine(DynamoStore(TABLE, client=transport)))
    boundary.fail("PutItem", 400, "TransactionConflictException", "Transaction is ongoing for the item", times=2)
    answer = handler(rest_event({"amount": 50}), DrillContext())
    boundary.close()
    assert answer["statusCode"] == 201 and runs == [1]
    assert boundary.fired == [("PutItem", "error")] * 2 and boundary.calls == {"PutItem": 1}


def test_the_default_transport_is_botocores_client_with_nothing_on_it(aws: None) -> None:
    """Nothing stands between the store and botocore until a test plugs something into the seam."""
    from retrysafe.testing._boundary import _BotocoreSeam

    client = DynamoStore(TABLE, region_name="eu-west-1").client
    assert type(client).__module__ == "botocore.client" and client.meta.service_model.service_name == "dynamodb"
    assert _BotocoreSeam.ATTRIBUTE not in client.__dict__
    boundary = Boundary(client)
    assert _BotocoreSeam.ATTRIBUTE in client.__dict__
    boundary.close()
    assert _BotocoreSeam.ATTRIBUTE not in client.__dict__


# -- the seam against the raw botocore hook it replaces ------------------------------------------------


def _http_error(code: str, message: str, extra: dict[str, Any]) -> Any:
    """An error answer as a raw botocore ``before-send`` hook had to write it."""
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, **_: Any) -> Any:
            yield json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message,
                              **extra}).encode()

    return AWSResponse("https://dynamodb", 400, {"x-amzn-requestid": "x"}, Raw())


def _raw_hook(client: Any, operation: str, answer: Callable[[Any, str], Any]) -> None:
    """The botocore-hook form: ``answer(request, event_name)`` answers every ``operation`` attempt.

    botocore runs every ``before-send`` handler (the first response wins): moto's must come off the
    client, or it would apply the request the hook answers; every other call is forwarded to it."""
    from moto.core.models import botocore_stubber

    def hook(request: Any, event_name: str, **_: Any) -> Any:
        if event_name.endswith(f".{operation}"):
            return answer(request, event_name)
        return botocore_stubber(event_name=event_name, request=request)

    client.meta.events.unregister("before-send", botocore_stubber)
    client.meta.events.register_first("before-send.dynamodb", hook)


def _in_process_client() -> Any:
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "total_max_attempts": 3}))
    instant_retries(client)
    return client


def _cancellation(client: Any) -> Any:
    from botocore.exceptions import ClientError

    items = [{"ConditionCheck": {"TableName": TABLE, "Key": {"pk": {"S": "x"}},
                                 "ConditionExpression": "attribute_not_exists(pk)"}},
             {"Put": {"TableName": ORDERS, "Item": {"pk": {"S": "order#1"}}}}]
    with pytest.raises(ClientError) as raised:
        client.transact_write_items(TransactItems=items)
    with pytest.raises(StoreUnavailableError) as failed:
        DynamoStore(TABLE, client=client).transact(items)
    response = {k: v for k, v in raised.value.response.items() if k != "ResponseMetadata"}
    return response, str(failed.value), failed.value.code


def test_a_cancellation_at_the_seam_reaches_the_engine_as_the_raw_hook_did(ddb: Any) -> None:
    reasons = [{"Code": "ThrottlingError", "Message": "ThrottlingError (simulated)"}, {"Code": "None"}]
    message = "Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError, None]"
    hooked = _in_process_client()
    _raw_hook(hooked, "TransactWriteItems",
              lambda request, event_name: _http_error("TransactionCanceledException", message,
                                                      {"CancellationReasons": reasons}))
    seamed = _in_process_client()
    boundary = Boundary(seamed)
    boundary.cancel(("ThrottlingError",), times=ALWAYS)
    raw, at_seam = _cancellation(hooked), _cancellation(seamed)
    boundary.close()
    assert raw == at_seam
    assert at_seam[0]["CancellationReasons"] == reasons and at_seam[0]["Error"]["Code"] == "TransactionCanceledException"
    assert ddb.scan(TableName=ORDERS)["Items"] == []


def test_a_lost_answer_at_the_seam_reaches_the_engine_as_the_raw_hook_did(ddb: Any) -> None:
    from botocore.exceptions import ReadTimeoutError
    from moto.core.models import botocore_stubber

    def outcome(client: Any, attempts: Callable[[], int]) -> tuple[Any, ...]:
        runs: list[int] = []
        handler = idempotent_http(quote_handler(runs), operation=f"Same-{uuid.uuid4().hex}",
                                  engine=Engine(DynamoStore(TABLE, client=client)))
        answer = handler(rest_event({"amount": 50}), DrillContext())
        return answer["statusCode"], REPLAYED_HEADER in answer.get("headers", {}), json.loads(answer["body"]), runs, attempts()

    hooked = _in_process_client()
    raw_attempts: list[str] = []

    def lose_first(request: Any, event_name: str) -> Any:
        response = botocore_stubber(event_name=event_name, request=request)  # DynamoDB applies it
        raw_attempts.append(event_name)
        if len(raw_attempts) == 1:  # atomic mode's lone put is the only call: lose its first answer
            raise ReadTimeoutError(endpoint_url=request.url)
        return response

    _raw_hook(hooked, "PutItem", lose_first)
    raw = outcome(hooked, lambda: len(raw_attempts))
    seamed = _in_process_client()
    boundary = Boundary(seamed)
    boundary.lose_response("PutItem", match=completes_record)
    at_seam = outcome(seamed, lambda: len(boundary.sent))
    boundary.close()
    assert raw == at_seam == (201, False, {"quote": "q-1"}, [1], 2)


def test_ordered_writes_recognise_a_stale_version_on_any_transport(transport: Any) -> None:
    """``put_if_newer`` tells a failed condition by its error code, not by botocore's client's exception classes."""
    from retrysafe import put_if_newer

    key = f"ordered#{uuid.uuid4().hex}"
    assert put_if_newer({"pk": key, "version": 2}, table=ORDERS, client=transport) is True
    assert put_if_newer({"pk": key, "version": 1}, table=ORDERS, client=transport) is False
    assert put_if_newer({"pk": key, "version": 3}, table=ORDERS, client=transport) is True
