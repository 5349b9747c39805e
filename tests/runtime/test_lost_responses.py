"""Every record write whose response is lost (DynamoDB applied it, botocore retried) ends correct.

Each test runs twice: on the DynamoDB semantics layer (a retried ``ClientRequestToken`` is
answered with success, nothing applied twice) and on bare moto (tokens ignored), so the engine is
right whether or not a retried transaction is deduplicated. ``Boundary.lose_response`` applies a
call and answers with a read timeout, so botocore's own retry re-sends it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from retrysafe import Engine, Mode, Transaction, idempotent_http, metrics
from retrysafe._observability import FENCING_REJECTED, telemetry
from retrysafe.names import RECORD_PREFIX, REPLAYED_HEADER
from retrysafe.testing import ALWAYS, Boundary, DynamoSemantics, instant_retries
from retrysafe.testing._boundary import completes_record
from retrysafe.testing._events import DrillContext, rest_event

from tests.helpers import ORDERS, TABLE, outbox_items


@pytest.fixture(params=[True, False], ids=["token-honoured", "token-ignored"])
def lost(request: pytest.FixtureRequest, ddb: Any) -> Iterator[Boundary]:
    import boto3
    from botocore.config import Config

    client = boto3.client("dynamodb", region_name="eu-west-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 2}))
    instant_retries(client)
    if request.param:
        DynamoSemantics().install(client)
    boundary = Boundary(client)
    yield boundary
    boundary.close()


@pytest.fixture
def engine(lost: Boundary) -> Engine:
    from retrysafe._store import DynamoStore

    return Engine(DynamoStore(TABLE, client=lost.client))


def record_write(operation: str, params: Mapping[str, Any]) -> bool:
    """A single-item call on an idempotency record (claim, takeover, release)."""
    key = params.get("Key") or params.get("Item") or {}
    return str(key.get("pk", {}).get("S", "")).startswith(RECORD_PREFIX)


def checkpoints(operation: str, params: Mapping[str, Any]) -> bool:
    """A transaction that saves a checkpoint."""
    return any("#cp" in str(item.get("Update", {}).get("UpdateExpression", ""))
               for item in params.get("TransactItems") or [])


def lost_answers(boundary: Boundary) -> list[str]:
    return [operation for operation, kind in boundary.fired if kind == "lost response"]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    original = telemetry.count
    monkeypatch.setattr(telemetry, "count", lambda name, *a, **kw: (names.append(name), original(name, *a, **kw))[1])
    return names


class Charges:
    """A claim-first handler with a foreign call behind a recovery point and counted local effects."""

    def __init__(self, fail_after_step: int = 0) -> None:
        self.provider_calls = 0
        self.runs = 0
        self.fail_after_step = fail_after_step

    def __call__(self, event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        self.runs += 1
        amount = json.loads(event["body"])["amount"]
        # Local effects buffered before the step commit with its checkpoint; ADD is not idempotent.
        txn.update({"pk": "balance"}, "ADD charged :a", table=ORDERS, values={":a": amount})
        txn.append_event("ChargeRequested", {"amount": amount}, aggregate_type="Charge", aggregate_id="c-1")
        charge = txn.step("charge", self._charge)
        if self.fail_after_step:
            self.fail_after_step -= 1
            raise ConnectionError("the receipt service timed out")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "X-Run": str(self.runs)},
                "body": json.dumps(charge)}

    def _charge(self) -> dict[str, Any]:
        self.provider_calls += 1
        return {"charge": f"ch_{self.provider_calls}"}


def balance(ddb: Any) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "balance"}}).get("Item")
    return int(item["charged"]["N"]) if item else 0


def records(ddb: Any) -> list[dict[str, Any]]:
    return [i for i in ddb.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith(RECORD_PREFIX)]


def test_lost_claim_response_is_the_invocations_own_claim(ddb, lost, engine):
    """The retried claim meets its own owner token: it goes on (one run, 201), no 409 to itself."""
    api = Charges()
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    lost.lose_response("PutItem", match=record_write)
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert lost_answers(lost) == ["PutItem"]
    assert response["statusCode"] == 201, response["body"]
    assert api.runs == 1 and api.provider_calls == 1 and balance(ddb) == 5
    [record] = records(ddb)
    assert record["st"]["S"] == "completed"


@pytest.mark.parametrize("mode", [Mode.ATOMIC, Mode.CLAIM_FIRST])
def test_lost_commit_response_answers_the_handlers_own_response(ddb, lost, engine, mode):
    """The completing transaction applied; the caller still gets the handler's response, not a replay."""

    def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        txn.update({"pk": "balance"}, "ADD charged :a", table=ORDERS, values={":a": 5})
        txn.append_event("Charged", {"amount": 5}, aggregate_type="Charge", aggregate_id="c-1")
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "X-Run": "1"},
                "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]}, "body": "{}"}

    handler = idempotent_http(api, mode=mode, engine=engine)
    lost.lose_response("TransactWriteItems", match=completes_record)
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert lost_answers(lost) == ["TransactWriteItems"]
    assert response["statusCode"] == 201
    assert REPLAYED_HEADER not in response["headers"]
    assert response["headers"]["X-Run"] == "1" and response["multiValueHeaders"]["Set-Cookie"] == ["a=1", "b=2"]
    assert balance(ddb) == 5 and len(outbox_items(ddb)) == 1
    again = handler(rest_event({"amount": 5}), DrillContext())
    assert again["headers"][REPLAYED_HEADER] == "true" and balance(ddb) == 5


def test_lost_checkpoint_response_does_not_repeat_the_step_or_its_writes(ddb, lost, engine):
    """The checkpoint transaction applied; its retry must neither fail nor apply the writes again."""
    api = Charges()
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    lost.lose_response("TransactWriteItems", match=checkpoints)
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert lost_answers(lost) == ["TransactWriteItems"]
    assert response["statusCode"] == 201, response["body"]
    assert api.provider_calls == 1 and balance(ddb) == 5 and len(outbox_items(ddb)) == 1


def test_failure_after_a_lost_checkpoint_response_keeps_the_checkpoint(ddb, lost, engine):
    """The run fails after its checkpoint committed (response lost): the retry resumes, no second charge."""
    api = Charges(fail_after_step=1)
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    lost.lose_response("TransactWriteItems", match=checkpoints)
    with pytest.raises(ConnectionError):
        handler(rest_event({"amount": 5}), DrillContext())
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert response["statusCode"] == 201, response["body"]
    assert api.provider_calls == 1 and balance(ddb) == 5 and len(outbox_items(ddb)) == 1
    assert json.loads(response["body"]) == {"charge": "ch_1"}


def test_checkpoint_whose_outcome_is_unknown_is_never_deleted(ddb, lost, engine):
    """The checkpoint applied, then DynamoDB became unreachable: 503, and the retry resumes from the checkpoint."""
    api = Charges()
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    lost.lose_response("TransactWriteItems", match=checkpoints, times=ALWAYS)
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert response["statusCode"] == 503 and response["headers"]["Retry-After"]
    [record] = records(ddb)
    assert record["st"]["S"] == "pending" and "charge" in record["cp"]["M"]  # the lease ended, the record stays
    again = handler(rest_event({"amount": 5}), DrillContext())
    assert again["statusCode"] == 201, again["body"]
    assert api.provider_calls == 1 and balance(ddb) == 5 and len(outbox_items(ddb)) == 1


def test_lost_release_response_is_a_release(ddb, lost, engine, counted):
    """The DeleteItem that freed the claim applied; its retry finds nothing: released, not fenced."""

    def api(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        raise TimeoutError("payment provider timed out")

    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    lost.lose_response("DeleteItem", match=record_write)
    with pytest.raises(TimeoutError):
        handler(rest_event({"amount": 5}), DrillContext())
    assert lost_answers(lost) == ["DeleteItem"]
    assert FENCING_REJECTED not in counted and metrics.RELEASED in counted
    assert records(ddb) == []



def test_lost_takeover_response_holds_the_claim_with_its_checkpoints(ddb, lost, engine):
    """A crashed claim's lease ended; the takeover UpdateItem applied and its answer was lost: the retry holds it."""
    api = Charges(fail_after_step=1)
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    with pytest.raises(ConnectionError):  # checkpoint committed, then the run failed: the lease is ended
        handler(rest_event({"amount": 5}), DrillContext())
    lost.lose_response("UpdateItem", match=record_write)
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert lost_answers(lost) == ["UpdateItem"]
    assert response["statusCode"] == 201, response["body"]
    assert api.provider_calls == 1 and balance(ddb) == 5 and json.loads(response["body"]) == {"charge": "ch_1"}


def test_a_claim_whose_every_answer_was_lost_ends_its_lease_for_the_retry(ddb, lost, engine):
    """botocore's retries ran out on the claim (503): it was applied, so its lease is ended; the retry runs at once."""
    api = Charges()
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    lost.lose_response("PutItem", match=record_write, times=ALWAYS)
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert response["statusCode"] == 503 and api.runs == 0
    [record] = records(ddb)  # the lease is ended, not the record: a lost takeover may hold checkpoints
    assert record["st"]["S"] == "pending" and record["le"]["N"] == "0"
    lost.revive()  # the network is back
    again = handler(rest_event({"amount": 5}), DrillContext())  # no wait for a lease
    assert again["statusCode"] == 201, again["body"]
    assert api.runs == 1 and api.provider_calls == 1 and balance(ddb) == 5


def test_a_takeover_whose_every_answer_was_lost_keeps_the_checkpoints(ddb, lost, engine):
    """The takeover UpdateItem applied but every answer was lost (503): its checkpoints survive for the retry."""
    api = Charges(fail_after_step=1)
    handler = idempotent_http(api, mode=Mode.CLAIM_FIRST, engine=engine)
    with pytest.raises(ConnectionError):  # checkpoint committed, then the run failed: the lease is ended
        handler(rest_event({"amount": 5}), DrillContext())
    lost.lose_response("UpdateItem", match=record_write, times=ALWAYS)
    assert handler(rest_event({"amount": 5}), DrillContext())["statusCode"] == 503
    [record] = records(ddb)
    assert "charge" in record["cp"]["M"]
    lost.revive()
    response = handler(rest_event({"amount": 5}), DrillContext())
    assert response["statusCode"] == 201, response["body"]
    assert api.provider_calls == 1 and balance(ddb) == 5 and json.loads(response["body"]) == {"charge": "ch_1"}
