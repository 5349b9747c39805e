"""Retry hints on HTTP: a request the client marks as a retry claims first in a cold container.

The hints: retrysafe's ``Retry-Attempt`` header (2 or more) and the header the AWS SDKs send on
every attempt, ``amz-sdk-request: attempt=N; max=M`` (N above 1). Round trips are counted at the
transport's attempt seam.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from retrysafe import IdempotencyMiddleware, Mode, idempotent_http, names
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import ORDERS


class Api:
    """An atomic handler writing one order (a non-idempotent ``ADD``); counts its runs."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, event: dict[str, Any], context: Any, txn: Any) -> dict[str, Any]:
        self.runs += 1
        txn.update({"pk": "order#1"}, "ADD n :one", values={":one": 1}, table=ORDERS)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"run": self.runs})}


def placed(ddb: Any) -> int:
    item = ddb.get_item(TableName=ORDERS, Key={"pk": {"S": "order#1"}}, ConsistentRead=True).get("Item")
    return int(item["n"]["N"]) if item else 0


HINTS = [{names.RETRY_ATTEMPT_HEADER: "2"}, {names.RETRY_ATTEMPT_HEADER.lower(): "7"},
         {names.AWS_SDK_REQUEST_HEADER: "attempt=2; max=3"},
         {names.AWS_SDK_REQUEST_HEADER.title(): "ttl=20250101T000000Z; attempt=3; max=3"}]
NOT_HINTS = [{}, {names.RETRY_ATTEMPT_HEADER: "1"}, {names.RETRY_ATTEMPT_HEADER: "two"},
             {names.RETRY_ATTEMPT_HEADER: "-2"}, {names.AWS_SDK_REQUEST_HEADER: "attempt=1; max=3"},
             {names.AWS_SDK_REQUEST_HEADER: "attempt=; max=3"}, {names.AWS_SDK_REQUEST_HEADER: "max=3"}]


@pytest.mark.parametrize("hint", HINTS, ids=lambda h: "; ".join(f"{k}: {v}" for k, v in h.items()))
def test_hinted_replay_in_a_cold_container_is_one_put_and_no_handler_run(store, ddb, calls, hint):
    first = idempotent_http(Api(), store=store)(rest_event({"total": 42}), DrillContext())
    assert first["statusCode"] == 201 and calls.calls == {"TransactWriteItems": 1}
    calls.reset()
    api = Api()
    replay = idempotent_http(api, store=store)(rest_event({"total": 42}, headers=hint), DrillContext())
    assert replay["statusCode"] == 201 and replay["headers"][names.REPLAYED_HEADER] == "true"
    assert json.loads(replay["body"]) == {"run": 1}
    assert calls.calls == {"PutItem": 1} and api.runs == 0 and placed(ddb) == 1


@pytest.mark.parametrize("hint", HINTS[:1] + HINTS[2:3], ids=[names.RETRY_ATTEMPT_HEADER, names.AWS_SDK_REQUEST_HEADER])
def test_hinted_first_request_claims_then_commits(store, ddb, calls, hint):
    api = Api()
    response = idempotent_http(api, store=store)(http_event({"total": 42}, headers=hint), DrillContext())
    assert response["statusCode"] == 201 and names.REPLAYED_HEADER not in response["headers"]
    assert calls.calls == {"PutItem": 1, "TransactWriteItems": 1} and api.runs == 1 and placed(ddb) == 1


@pytest.mark.parametrize("headers", NOT_HINTS, ids=lambda h: "; ".join(f"{k}: {v}" for k, v in h.items()) or "none")
def test_an_unhinted_first_request_keeps_one_round_trip(store, calls, headers):
    response = idempotent_http(Api(), store=store)(rest_event({"total": 42}, headers=headers), DrillContext())
    assert response["statusCode"] == 201 and calls.calls == {"TransactWriteItems": 1}


def test_retry_hints_false_runs_the_handler_and_keeps_one_transaction(store, ddb, calls):
    idempotent_http(Api(), store=store)(rest_event({"total": 42}), DrillContext())
    calls.reset()
    api = Api()
    handler = idempotent_http(api, retry_hints=False, store=store)
    replay = handler(rest_event({"total": 42}, headers={names.RETRY_ATTEMPT_HEADER: "2"}), DrillContext())
    assert replay["headers"][names.REPLAYED_HEADER] == "true"
    assert calls.calls == {"TransactWriteItems": 1} and api.runs == 1 and placed(ddb) == 1


def test_a_hinted_request_with_another_body_is_refused_without_running(store, ddb, calls):
    idempotent_http(Api(), store=store)(rest_event({"total": 42}), DrillContext())
    calls.reset()
    api = Api()
    refused = idempotent_http(api, store=store)(rest_event({"total": 43}, headers={names.RETRY_ATTEMPT_HEADER: "2"}),
                                                DrillContext())
    assert refused["statusCode"] == 422 and calls.calls == {"PutItem": 1} and api.runs == 0


def test_claim_first_mode_is_unchanged_by_a_hint(store, calls):
    handler = idempotent_http(Api(), mode=Mode.CLAIM_FIRST, store=store)
    handler(rest_event({"total": 42}, headers={names.RETRY_ATTEMPT_HEADER: "2"}), DrillContext())
    assert calls.calls == {"PutItem": 1, "TransactWriteItems": 1}


def test_the_middleware_takes_the_option(store):
    assert IdempotencyMiddleware(store=store).idempotency.retry_hints is True
    assert IdempotencyMiddleware(retry_hints=False, store=store).idempotency.retry_hints is False
