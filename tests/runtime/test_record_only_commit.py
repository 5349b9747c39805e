"""Work that writes nothing but the record: one conditional ``PutItem``, no transaction.

Transactional writes cost double, so a first request whose handler buffered no write and no event
completes its record with ``PutItem``. Atomic mode conditions it ``attribute_not_exists(pk) OR #exp < :now``
(``ALL_OLD`` on a failed condition): still one round trip, and a replay on another container gets the
stored record from that same call. Claim-first mode claims as always, then completes with a ``PutItem``
conditioned on its owner token, as its transaction's ``Put`` is (fencing): two round trips, two write
units instead of three. A ``PutItem`` carries no ``ClientRequestToken``: a retried put that meets its
own completed record must be recognised by its writer token, as a retried transaction is.
Each lost-response test runs on DynamoDB's semantics layer and on bare moto.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from retrysafe import Engine, Mode, RecordCache, Transaction, idempotent_http, metrics, names
from retrysafe._engine import Completion, Intent
from retrysafe._keys import Scope
from retrysafe._observability import FENCING_REJECTED, TAKEOVER, telemetry
from retrysafe._record import PENDING, Record
from retrysafe._store import DynamoStore
from retrysafe.errors import FencingError
from retrysafe.names import RECORD_PREFIX, REPLAYED_HEADER
from retrysafe.testing import ALWAYS, Boundary, Clock, DynamoSemantics, instant_retries
from retrysafe.testing._boundary import attempts_of, completes_record
from retrysafe.testing._events import DrillContext, rest_event

from tests.helpers import ORDERS, TABLE, problem


class Quotes:
    """An atomic handler that writes nothing: its answer (a quote number per run) is its only effect."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        self.runs += 1
        amount = json.loads(event["body"])["amount"]
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"quote": f"q-{self.runs}", "fee": amount // 10})}


@pytest.fixture(params=[True, False], ids=["semantics", "bare-moto"])
def boundary(request: pytest.FixtureRequest, ddb: Any) -> Iterator[Boundary]:
    """A client of its own (standard retries, no back-off sleeps) with a fault boundary."""
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 2}))
    instant_retries(client)
    if request.param:
        DynamoSemantics().install(client)
    made = Boundary(client)
    yield made
    made.close()


@pytest.fixture
def sent(boundary: Boundary) -> list[tuple[str, dict[str, Any]]]:
    """Every attempt the client's transport sends (operation, parameters as the store built them), retries
    included: recorded at the transport's attempt seam, whatever the transport."""
    calls: list[tuple[str, dict[str, Any]]] = []

    class Recorder:
        def before_attempt(self, operation: str, params: Any) -> None:
            calls.append((operation, dict(params)))

        def after_attempt(self, operation: str, params: Any, reply: Any, applied: bool) -> None:
            return None

    attempts_of(boundary.client).interceptors.insert(0, Recorder())  # before the boundary: every attempt
    return calls


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    original = telemetry.count
    monkeypatch.setattr(telemetry, "count", lambda name, *a, **kw: (names.append(name), original(name, *a, **kw))[1])
    return names


def engines(boundary: Boundary, clock: Any = None) -> tuple[Engine, Engine]:
    """Two containers on one table: each with its own record cache."""
    store = DynamoStore(TABLE, client=boundary.client)
    made = [Engine(store, cache=RecordCache(), **({"clock": clock} if clock else {})) for _ in range(2)]
    return made[0], made[1]


def records(ddb: Any) -> list[dict[str, Any]]:
    return [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(RECORD_PREFIX)]


def test_a_first_request_without_writes_is_one_conditional_put(ddb, boundary, sent):
    quotes = Quotes()
    here, there = engines(boundary)
    first = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert first["statusCode"] == 201 and REPLAYED_HEADER not in first["headers"]
    assert [operation for operation, _ in sent] == ["PutItem"]
    (_, put), = sent
    assert put["ConditionExpression"] == "attribute_not_exists(pk) OR #exp < :now"
    assert put["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD" and put["Item"]["st"]["S"] == "completed"
    [record] = records(ddb)
    assert record["st"]["S"] == "completed"

    sent.clear()  # the same container: its record cache answers, no call
    again = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert sent == [] and again["headers"][REPLAYED_HEADER] == "true"

    # Another container: the same one PutItem, refused with the stored record (ALL_OLD), replayed.
    other = idempotent_http(quotes, operation="Quote", engine=there)(rest_event({"amount": 50}), DrillContext())
    assert [operation for operation, _ in sent] == ["PutItem"]
    assert other["headers"][REPLAYED_HEADER] == "true" and json.loads(other["body"]) == json.loads(first["body"])
    assert len(records(ddb)) == 1


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_a_business_write_still_commits_in_one_transaction(ddb, boundary, sent, mode):
    def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.put({"pk": "order#1", "n": 1}, table=ORDERS)
        return {"statusCode": 201, "body": "{}"}

    here, _ = engines(boundary)
    assert idempotent_http(api, mode=mode, engine=here)(rest_event({"amount": 5}), DrillContext())["statusCode"] == 201
    expected = ["TransactWriteItems"] if mode is Mode.ATOMIC else ["PutItem", "TransactWriteItems"]
    assert [operation for operation, _ in sent] == expected


def test_lost_put_response_answers_the_handlers_own_response(ddb, boundary, sent, counted):
    """The put applied, its answer was lost and botocore re-sent it: the retry meets its own record."""
    quotes = Quotes()
    here, there = engines(boundary)
    boundary.lose_response("PutItem", match=completes_record)
    response = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert [operation for operation, kind in boundary.fired] == ["PutItem"]
    assert response["statusCode"] == 201 and REPLAYED_HEADER not in response["headers"]
    assert json.loads(response["body"])["quote"] == "q-1" and quotes.runs == 1
    assert [operation for operation, _ in sent] == ["PutItem", "PutItem"]  # one API call, two attempts
    assert sent[0][1] == sent[1][1]  # the retry resent the very request DynamoDB had applied
    assert metrics.EXECUTED in counted and metrics.REPLAYED not in counted and FENCING_REJECTED not in counted
    other = idempotent_http(quotes, operation="Quote", engine=there)(rest_event({"amount": 50}), DrillContext())
    assert other["headers"][REPLAYED_HEADER] == "true" and json.loads(other["body"])["quote"] == "q-1"


def test_every_put_answer_lost_is_a_503_and_the_retry_replays_what_was_stored(ddb, boundary):
    quotes = Quotes()
    here, there = engines(boundary)
    boundary.lose_response("PutItem", match=completes_record, times=ALWAYS)
    response = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert response["statusCode"] == 503 and problem(response)["status"] == 503
    boundary.revive()  # a new invocation: the faults are disarmed
    retry = idempotent_http(quotes, operation="Quote", engine=there)(rest_event({"amount": 50}), DrillContext())
    assert retry["statusCode"] == 201 and retry["headers"][REPLAYED_HEADER] == "true"
    assert json.loads(retry["body"])["quote"] == "q-1"  # the first run's answer, stored by its applied put


def test_a_throttled_put_stores_nothing_and_the_retry_executes(ddb, boundary):
    quotes = Quotes()
    here, _ = engines(boundary)
    boundary.throttle("PutItem", code="ProvisionedThroughputExceededException", times=ALWAYS)
    response = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"]
    assert records(ddb) == []
    boundary.revive()  # a new invocation: the faults are disarmed
    retry = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert retry["statusCode"] == 201 and REPLAYED_HEADER not in retry["headers"]
    assert json.loads(retry["body"])["quote"] == "q-2"


def test_a_put_that_met_a_running_transaction_is_sent_again(ddb, boundary):
    """``TransactionConflictException`` on the put (a transaction held the item): raced, sent again."""
    quotes = Quotes()
    here, _ = engines(boundary)
    boundary.fail("PutItem", 400, "TransactionConflictException", "Transaction is ongoing for the item", times=3)
    response = idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    assert response["statusCode"] == 201, response["body"]
    assert [kind for _, kind in boundary.fired] == ["error"] * 3 and len(records(ddb)) == 1


def test_key_reuse_with_another_payload_is_refused_by_the_same_put(ddb, boundary, sent):
    quotes = Quotes()
    here, there = engines(boundary)
    idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    sent.clear()
    reused = idempotent_http(quotes, operation="Quote", engine=there)(rest_event({"amount": 70}), DrillContext())
    assert reused["statusCode"] == 422 and [operation for operation, _ in sent] == ["PutItem"]
    assert len(records(ddb)) == 1


def test_an_expired_record_is_replaced_by_the_put(ddb, boundary):
    """Expiry is compared in the condition (TTL deletion lags): a late request after ``exp`` runs again."""
    import time

    clock = Clock(time.time())
    quotes = Quotes()
    here, there = engines(boundary, clock)
    idempotent_http(quotes, operation="Quote", engine=here)(rest_event({"amount": 50}), DrillContext())
    [record] = records(ddb)
    clock.now = int(record["exp"]["N"]) + 1
    late = idempotent_http(quotes, operation="Quote", engine=there)(rest_event({"amount": 50}), DrillContext())
    assert late["statusCode"] == 201 and REPLAYED_HEADER not in late["headers"]
    assert json.loads(late["body"])["quote"] == "q-2"
    [replaced] = records(ddb)
    assert int(replaced["exp"]["N"]) > int(record["exp"]["N"])


# -- claim first -------------------------------------------------------------
OWNER_CONDITION = "#ow = :ow AND #st = :pending"
SCOPE = Scope("tenant-a", "Quote", "key-1", adapter=names.HTTP_ADAPTER)


def claim_first(quotes: Quotes, engine: Engine, amount: int = 50) -> dict[str, Any]:
    handler = idempotent_http(quotes, operation="Quote", mode=Mode.CLAIM_FIRST, engine=engine)
    response: dict[str, Any] = handler(rest_event({"amount": amount}), DrillContext())
    return response


def test_claim_first_without_writes_claims_then_completes_with_one_conditional_put(ddb, boundary, sent):
    quotes = Quotes()
    here, there = engines(boundary)
    first = claim_first(quotes, here)
    assert first["statusCode"] == 201 and REPLAYED_HEADER not in first["headers"]
    assert [operation for operation, _ in sent] == ["PutItem", "PutItem"]  # the claim, the completion
    (_, claim), (_, put) = sent
    assert claim["Item"]["st"]["S"] == "pending"
    assert put["ConditionExpression"] == OWNER_CONDITION and put["Item"]["st"]["S"] == "completed"
    assert put["ExpressionAttributeValues"][":ow"] == claim["Item"]["ow"] == put["Item"]["ow"]
    assert put["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD" and "ClientRequestToken" not in put
    [record] = records(ddb)
    assert record["st"]["S"] == "completed" and "le" not in record  # the claim's lease went with it

    sent.clear()  # another container: its claim is refused with the stored record (ALL_OLD), replayed
    other = claim_first(quotes, there)
    assert [operation for operation, _ in sent] == ["PutItem"]
    assert other["headers"][REPLAYED_HEADER] == "true" and json.loads(other["body"]) == json.loads(first["body"])
    assert quotes.runs == 1


def test_claim_first_lost_put_response_answers_the_handlers_own_response(ddb, boundary, sent, counted):
    """The completing put applied, its answer was lost and botocore re-sent it: the retry meets its own record."""
    quotes = Quotes()
    here, there = engines(boundary)
    boundary.lose_response("PutItem", match=completes_record)
    response = claim_first(quotes, here)
    assert [operation for operation, kind in boundary.fired] == ["PutItem"]
    assert response["statusCode"] == 201 and REPLAYED_HEADER not in response["headers"]
    assert json.loads(response["body"])["quote"] == "q-1" and quotes.runs == 1
    assert [operation for operation, _ in sent] == ["PutItem"] * 3  # two API calls, three attempts
    assert sent[1][1] == sent[2][1]  # the retry resent the very request DynamoDB had applied
    assert metrics.EXECUTED in counted and metrics.REPLAYED not in counted and FENCING_REJECTED not in counted
    other = claim_first(quotes, there)
    assert other["headers"][REPLAYED_HEADER] == "true" and json.loads(other["body"])["quote"] == "q-1"


def test_claim_first_every_put_answer_lost_is_recognised_by_the_release(ddb, boundary, sent, counted):
    """Every attempt of the completing put applied (the first) or met its own record, every answer lost:
    the release that follows the error is refused with the completed record of this owner, so the
    invocation answers its own response, as after a transaction whose answers were all lost."""
    quotes = Quotes()
    here, there = engines(boundary)
    boundary.lose_response("PutItem", match=completes_record, times=ALWAYS)
    response = claim_first(quotes, here)
    assert response["statusCode"] == 201 and REPLAYED_HEADER not in response["headers"], response["body"]
    assert json.loads(response["body"])["quote"] == "q-1"
    # the claim; the completing put's three attempts (max_attempts=2 counts retries); the release
    assert [operation for operation, _ in sent] == ["PutItem"] + ["PutItem"] * 3 + ["DeleteItem"]
    assert FENCING_REJECTED not in counted
    boundary.revive()
    retry = claim_first(quotes, there)
    assert retry["headers"][REPLAYED_HEADER] == "true" and json.loads(retry["body"])["quote"] == "q-1"
    assert quotes.runs == 1


def test_claim_first_throttled_put_releases_the_claim_and_the_retry_executes(ddb, boundary, sent):
    quotes = Quotes()
    here, _ = engines(boundary)
    boundary.throttle("PutItem", code="ProvisionedThroughputExceededException", match=completes_record,
                      times=ALWAYS)
    response = claim_first(quotes, here)
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"]
    # the claim; the completing put's three attempts (max_attempts=2 counts retries); the release
    assert [operation for operation, _ in sent] == ["PutItem"] + ["PutItem"] * 3 + ["DeleteItem"]
    assert records(ddb) == []  # unapplied, and the claim released
    boundary.revive()
    retry = claim_first(quotes, here)
    assert retry["statusCode"] == 201 and REPLAYED_HEADER not in retry["headers"]
    assert json.loads(retry["body"])["quote"] == "q-2"


def test_claim_first_put_that_met_a_running_transaction_is_sent_again(ddb, boundary):
    quotes = Quotes()
    here, _ = engines(boundary)
    boundary.fail("PutItem", 400, "TransactionConflictException", "Transaction is ongoing for the item",
                  match=completes_record, times=3)
    response = claim_first(quotes, here)
    assert response["statusCode"] == 201, response["body"]
    assert [kind for _, kind in boundary.fired] == ["error"] * 3
    [record] = records(ddb)
    assert record["st"]["S"] == "completed"


def test_claim_first_expired_record_is_claimed_and_completed_again(ddb, boundary, sent):
    import time

    clock = Clock(time.time())
    quotes = Quotes()
    here, there = engines(boundary, clock)
    claim_first(quotes, here)
    [record] = records(ddb)
    clock.now = int(record["exp"]["N"]) + 1
    sent.clear()
    late = claim_first(quotes, there)
    assert late["statusCode"] == 201 and REPLAYED_HEADER not in late["headers"]
    assert json.loads(late["body"])["quote"] == "q-2"
    assert [operation for operation, _ in sent] == ["PutItem", "PutItem"]
    [replaced] = records(ddb)
    assert replaced["st"]["S"] == "completed" and int(replaced["exp"]["N"]) > int(record["exp"]["N"])


def intent() -> Intent:
    return Intent(scope=SCOPE, fingerprint="fp-1", mode=Mode.CLAIM_FIRST, lease_seconds=5.0)


def test_claim_first_zombie_put_is_fenced_and_replays_its_successors_record(ddb, boundary, sent, counted):
    """A's lease lapses, B takes over and completes: A's completing put is refused with B's record, replayed."""
    import time

    clock = Clock(time.time())
    engine = Engine(DynamoStore(TABLE, client=boundary.client), cache=None, clock=clock)
    successor: list[Any] = []

    def a_work(txn: Transaction) -> Completion:
        clock.advance(6)  # A stalls past its lease, B takes over and completes
        successor.append(engine.execute(intent(), lambda txn: Completion({"quote": "by-B"})))
        return Completion({"quote": "by-A"})

    outcome = engine.execute(intent(), a_work)
    assert outcome.replayed and outcome.result == {"quote": "by-B"} and successor[0].result == {"quote": "by-B"}
    assert [operation for operation, _ in sent] == ["PutItem", "PutItem", "UpdateItem", "PutItem", "PutItem"]
    assert TAKEOVER in counted and FENCING_REJECTED in counted
    [record] = records(ddb)
    assert record["st"]["S"] == "completed" and json.loads(record["r"]["S"]) == {"quote": "by-B"}


def test_claim_first_zombie_put_is_fenced_while_its_successor_still_holds_the_key(ddb, boundary, counted):
    import time

    clock = Clock(time.time())
    store = DynamoStore(TABLE, client=boundary.client)
    engine = Engine(store, cache=None, clock=clock)

    def a_work(txn: Transaction) -> Completion:
        clock.advance(6)
        now = clock()
        store.claim(Record(SCOPE.record_id, PENDING, "fp-1", int(now) + 86400, int(now * 1000), "Quote",
                           owner="owner-B", lease_until_ms=int((now + 30) * 1000)), now)
        return Completion({"quote": "by-A"})

    with pytest.raises(FencingError):
        engine.execute(intent(), a_work)
    assert FENCING_REJECTED in counted
    [record] = records(ddb)
    assert record["st"]["S"] == "pending" and record["ow"]["S"] == "owner-B"
