"""``tenant=`` has one type on every adapter with a caller: ``None`` (one tenant for all), a name, a callable.

HTTP (decorator and middleware), Step Functions tasks and webhook receivers take a
``retrysafe.Tenant`` of their request. Each form is exercised on moto and read back from the
record it scoped: the record's id is the scope's, so finding it by the expected scope proves
whose it is.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
from retrysafe import Transaction, idempotent_http, idempotent_task, names
from retrysafe._keys import Scope
from retrysafe._tenant import NO_TENANT
from retrysafe.errors import ConfigurationError, TaskPayloadError
from retrysafe.http import HttpRequest
from retrysafe.stepfunctions import TaskRequest
from retrysafe.testing._events import DrillContext, http_event, rest_event
from retrysafe.webhook import GitHub, WebhookReceiver

from tests.helpers import STATE_MACHINE, outbox_items, payload, problem

SECRET = b"tenant-secret"


def record_of(store: Any, scope: Scope) -> Any:
    return store.get(scope.record_id)


def ok(runs: list[str]) -> Any:
    def handler(event: Any, context: Any, txn: Transaction) -> dict[str, Any]:
        runs.append(json.loads(event["body"])["order"])
        return {"statusCode": 201, "body": json.dumps({"run": len(runs)})}

    return handler


# -- HTTP -------------------------------------------------------------------------------------------------


def test_http_a_fixed_name_is_every_requests_tenant_whoever_calls(ddb: Any, store: Any) -> None:
    runs: list[str] = []
    handler = idempotent_http(operation="Pay", tenant="acme", subscriber="shop", store=store)(ok(runs))

    first = handler(rest_event({"order": "o-1"}, key="k-1", tenant="alice"), DrillContext())
    again = handler(rest_event({"order": "o-1"}, key="k-1", tenant=None), DrillContext())  # no authorizer at all

    assert first["statusCode"] == again["statusCode"] == 201
    # atomic: the retry's run was discarded, and the first run's answer replayed
    assert again["headers"][names.REPLAYED_HEADER] == "true" and json.loads(again["body"]) == {"run": 1}
    assert record_of(store, Scope("acme", "Pay", "k-1", adapter=names.HTTP_ADAPTER, subscriber="shop")) is not None


def test_http_none_is_one_tenant_for_all_and_a_callables_none_is_401(ddb: Any, store: Any) -> None:
    runs: list[str] = []
    public = idempotent_http(operation="Pay", tenant=None, subscriber="shop", store=store)(ok(runs))
    public(http_event({"order": "o-1"}, key="k-1", tenant="alice"), DrillContext())
    assert record_of(store, Scope(NO_TENANT, "Pay", "k-1", adapter=names.HTTP_ADAPTER, subscriber="shop"))

    def account(request: HttpRequest) -> str | None:
        return request.header("X-Gateway-Account")  # set by a gateway in front, never by the client

    by_header = idempotent_http(operation="Pay", tenant=account, subscriber="shop", store=store)(ok(runs))
    refused = by_header(http_event({"order": "o-2"}, key="k-2"), DrillContext())
    assert refused["statusCode"] == 401 and problem(refused)["type"].endswith("tenant-required")
    assert runs == ["o-1"]


@pytest.mark.parametrize("tenant", ["", " acme", 42])
def test_a_tenant_that_is_no_form_of_the_type_is_refused_at_cold_start(store: Any, tenant: Any) -> None:
    with pytest.raises(ConfigurationError, match="tenant="):
        idempotent_http(operation="Pay", tenant=tenant, store=store)(ok([]))
    with pytest.raises(ConfigurationError, match="tenant="):
        idempotent_task(tenant=tenant, store=store)(lambda task_input, context, txn: None)
    with pytest.raises(ConfigurationError, match="tenant="):
        WebhookReceiver(GitHub(), tenant=tenant, secrets=lambda: [SECRET], store=store)


# -- Step Functions ---------------------------------------------------------------------------------------


def task_handler(runs: list[Any]) -> Any:
    def charge(task_input: Any, context: Any, txn: Transaction) -> Any:
        runs.append(task_input)
        return {"run": len(runs)}

    return charge


def test_task_none_is_one_tenant_for_every_state_machine(ddb: Any, store: Any) -> None:
    runs: list[Any] = []
    handler = idempotent_task(tenant=None, subscriber="saga", store=store)(task_handler(runs))

    first = handler(payload("Charge", {"amount": 1}), DrillContext())
    other_machine = handler({**payload("Charge", {"amount": 1}), "stateMachine": STATE_MACHINE + "-v2"},
                            DrillContext())

    assert first == other_machine == {"run": 1} and len(runs) == 1
    request = TaskRequest.parse(payload("Charge", {"amount": 1}))
    assert record_of(store, Scope(NO_TENANT, "Charge", request.key(), adapter=names.TASK_ADAPTER, subscriber="saga"))


def test_task_default_is_the_state_machine_and_a_callable_reads_the_request(ddb: Any, store: Any) -> None:
    runs: list[Any] = []
    by_machine = idempotent_task(subscriber="saga", store=store)(task_handler(runs))
    by_machine(payload("Charge", {"amount": 1, "account": "acct-1"}), DrillContext())
    request = TaskRequest.parse(payload("Charge", {"amount": 1, "account": "acct-1"}))
    assert record_of(store, Scope(STATE_MACHINE, "Charge", request.key(), adapter=names.TASK_ADAPTER,
                                  subscriber="saga"))

    def account(task: TaskRequest) -> str | None:
        return task.input.get("account") if isinstance(task.input, dict) else None

    by_account = idempotent_task(tenant=account, subscriber="saga", operation="ChargeByAccount",
                                 store=store)(task_handler(runs))
    by_account(payload("Charge", {"amount": 1, "account": "acct-1"}), DrillContext())
    assert record_of(store, Scope("acct-1", "ChargeByAccount", request.key(), adapter=names.TASK_ADAPTER,
                                  subscriber="saga"))
    with pytest.raises(TaskPayloadError, match="tenant= callable found no tenant"):
        by_account(payload("Charge", {"amount": 2}), DrillContext())
    assert len(runs) == 2


# -- webhooks ---------------------------------------------------------------------------------------------


def delivery(body: str) -> dict[str, Any]:
    sig = "sha256=" + hmac.new(SECRET, body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-GitHub-Delivery": "d-1", "X-GitHub-Hook-ID": "h-1", "X-GitHub-Event": "push",
               "X-Hub-Signature-256": sig}
    return rest_event(raw_body=body, key=None, tenant=None, resource="/hooks/github", headers=headers)


def test_webhook_a_callable_reads_the_sender_from_the_verified_delivery(ddb: Any, store: Any) -> None:
    def organization(request: HttpRequest) -> str | None:
        org = json.loads(request.body).get("organization")
        return org.get("login") if isinstance(org, dict) else None

    receiver = WebhookReceiver(GitHub(), tenant=organization, secrets=lambda: [SECRET], store=store)

    accepted = receiver(delivery(json.dumps({"organization": {"login": "octo"}, "ref": "main"})), DrillContext())
    anonymous = receiver(delivery(json.dumps({"ref": "main"})), DrillContext())

    assert accepted["statusCode"] == 202
    assert anonymous["statusCode"] == 401 and problem(anonymous)["type"].endswith("tenant-required")
    receipts = [json.loads(item["payload"]["S"]) for item in outbox_items(ddb)]
    assert [receipt["source"] for receipt in receipts] == ["octo"]  # the receipt's sender is the one found


def test_webhook_none_is_the_providers_one_sender_and_a_name_is_a_sender_of_its_own(ddb: Any, store: Any) -> None:
    body = json.dumps({"ref": "main"})
    default = WebhookReceiver(GitHub(), secrets=lambda: [SECRET], store=store)
    named = WebhookReceiver(GitHub(), tenant="shop-b", secrets=lambda: [SECRET], store=store)

    assert default(delivery(body), DrillContext())["statusCode"] == 202
    replay = named(delivery(body), DrillContext())  # the same body from another sender: not a replay

    assert names.REPLAYED_HEADER not in replay["headers"]
    assert sorted(json.loads(item["payload"]["S"])["source"] for item in outbox_items(ddb)) == ["github", "shop-b"]


def test_what_a_callable_finds_must_be_unicode_text(ddb: Any, store: Any) -> None:
    """A tenant is hashed into the record id: a lone surrogate is refused, as the adapter refuses bad input."""
    runs: list[Any] = []
    http = idempotent_http(operation="Pay", tenant=lambda request: "caller-\udc80", store=store)(ok(runs))
    refused = http(http_event({"order": "o-1"}, key="k-1"), DrillContext())
    assert refused["statusCode"] == 400
    task = idempotent_task(tenant=lambda request: "caller-\udc80", store=store)(task_handler(runs))
    with pytest.raises(TaskPayloadError, match="not Unicode text"):
        task(payload("Charge", {"amount": 1}), DrillContext())
    receiver = WebhookReceiver(GitHub(), tenant=lambda request: "caller-\udc80", secrets=lambda: [SECRET],
                               store=store)
    assert receiver(delivery(json.dumps({"ref": "main"})), DrillContext())["statusCode"] == 400
    assert runs == [] and outbox_items(ddb) == []


def test_a_callable_that_answers_no_string_is_a_deployment_bug(ddb: Any, store: Any) -> None:
    http = idempotent_http(operation="Pay", tenant=lambda request: 42, store=store)(ok([]))  # mypy refuses it
    with pytest.raises(ConfigurationError, match="returned a int, not a str"):
        http(http_event({"order": "o-1"}, key="k-1"), DrillContext())
