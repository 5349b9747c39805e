"""The snippets of the streams page and of the ALB and function URL page run here, against moto,
and do what the pages say next to them (DynamoDB round trips included)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import boto3
import pytest
from retrysafe import DynamoStore, names
from retrysafe.testing import engine_of
from retrysafe.testing._events import (
    DrillContext,
    alb_event,
    dynamodb_stream_record,
    function_url_event,
    kinesis_record,
)

from tests.helpers import CallCounter, create_business_table


def fresh(name: str) -> ModuleType:
    """The snippet module, imported anew (a cold start: its engine binds to this test's moto)."""
    return importlib.reload(importlib.import_module(f"examples.snippets.{name}"))


@pytest.fixture
def tables(lambda_container: None, retrysafe_table: DynamoStore) -> DynamoStore:
    for name in ("orders", "accounts", "search"):
        create_business_table(retrysafe_table.client, name)
    return retrysafe_table


def item(store: DynamoStore, table: str, pk: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = store.client.get_item(TableName=table, Key={"pk": {"S": pk}},
                                                         ConsistentRead=True).get("Item")
    return found


def test_the_kinesis_consumer_applies_each_record_once_in_order(tables: DynamoStore) -> None:
    snippet = fresh("kinesis_consumer")
    calls = CallCounter(engine_of(snippet.handler).store.client)
    records = [kinesis_record({"account": "a1", "amount": n}, sequence_number=str(n)) for n in (1, 2, 3)]
    assert snippet.handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert calls.calls == {"TransactWriteItems": 3}
    engine_of(snippet.handler).cache.clear()  # a container that has not seen the records
    calls.reset()
    assert snippet.handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}  # redelivered
    assert calls.calls == {"TransactWriteItems": 3}
    assert item(tables, "accounts", "account#a1")["balance"] == {"N": "6"}  # type: ignore[index]


def test_a_re_put_payment_is_applied_once_by_its_business_key(tables: DynamoStore) -> None:
    snippet = fresh("kinesis_consumer")
    first = kinesis_record({"payment_id": "p-1", "account": "a2", "amount": 5, "sent_at": "10:00"},
                           sequence_number="1")
    again = kinesis_record({"payment_id": "p-1", "account": "a2", "amount": 5, "sent_at": "10:05"},
                           sequence_number="2")
    assert snippet.by_payment({"Records": [first, again]}, DrillContext()) == {"batchItemFailures": []}
    assert item(tables, "accounts", "account#a2")["balance"] == {"N": "5"}  # type: ignore[index]


def test_the_dynamodb_stream_consumer_indexes_changes_and_skips_ttl_removals(tables: DynamoStore) -> None:
    snippet = fresh("dynamodb_stream_consumer")
    calls = CallCounter(engine_of(snippet.handler).store.client)
    key = {"pk": {"S": "o1"}}
    records = [dynamodb_stream_record("INSERT", key, new_image={**key, "total": {"N": "10"}}, sequence_number="1"),
               dynamodb_stream_record("MODIFY", key, old_image={**key, "total": {"N": "10"}},
                                      new_image={**key, "total": {"N": "12"}}, sequence_number="2")]
    assert snippet.handler({"Records": records}, DrillContext()) == {"batchItemFailures": []}
    assert item(tables, "search", "doc#o1")["total"] == {"N": "12"}  # type: ignore[index]
    expired = dynamodb_stream_record("REMOVE", key, old_image={**key, "total": {"N": "12"}}, sequence_number="3",
                                     ttl=True)
    calls.reset()
    assert snippet.handler({"Records": [expired]}, DrillContext()) == {"batchItemFailures": []}
    assert calls.total == 0 and item(tables, "search", "doc#o1") is not None
    deleted = dynamodb_stream_record("REMOVE", key, old_image={**key, "total": {"N": "12"}}, sequence_number="4")
    assert snippet.handler({"Records": [deleted]}, DrillContext()) == {"batchItemFailures": []}
    assert item(tables, "search", "doc#o1") is None


@pytest.mark.parametrize("multi_value", [False, True], ids=["single-value", "multi-value"])
def test_the_alb_handler_replays_in_the_requests_shape(tables: DynamoStore, multi_value: bool) -> None:
    snippet = fresh("alb_handler")
    calls = CallCounter(engine_of(snippet.handler).store.client)
    request = alb_event({"amount": 42}, key="order-1", multi_value=multi_value)
    first = snippet.handler(request, DrillContext())
    assert first["statusCode"] == 201 and calls.calls == {"TransactWriteItems": 1}
    engine_of(snippet.handler).cache.clear()
    calls.reset()
    replay = snippet.handler(alb_event({"amount": 42}, key="order-1", multi_value=multi_value), DrillContext())
    assert calls.calls == {"TransactWriteItems": 1} and replay["body"] == first["body"]
    headers = {k: v[0] for k, v in replay["multiValueHeaders"].items()} if multi_value else replay["headers"]
    assert headers[names.REPLAYED_HEADER] == "true" and replay["statusDescription"] == "201 Created"
    missing = snippet.handler(alb_event({"amount": 42}, key=None, multi_value=multi_value), DrillContext())
    assert missing["statusCode"] == 400 and ("multiValueHeaders" in missing) is multi_value


def test_the_function_url_handler_scopes_by_iam_caller_and_ignores_sent_at(tables: DynamoStore) -> None:
    snippet = fresh("function_url")
    role = "arn:aws:sts::123456789012:assumed-role/checkout/session-1"
    sent = [function_url_event({"amount": 999, "currency": "EUR", "sent_at": t}, key="k1", iam_caller=role)
            for t in ("10:00", "10:05")]
    first = snippet.handler(sent[0], DrillContext())
    again = snippet.handler(sent[1], DrillContext())
    assert first["statusCode"] == again["statusCode"] == 201
    assert again["headers"][names.REPLAYED_HEADER] == "true" and again["body"] == first["body"]
    public = snippet.handler(function_url_event({"amount": 1, "currency": "EUR"}, key="k2"), DrillContext())
    assert public["statusCode"] == 401  # AuthType NONE: no caller, and tenant=None was not chosen
    assert len(boto3.client("dynamodb").scan(TableName="orders")["Items"]) == 1


def test_the_function_url_role_tenant_survives_a_credential_refresh(tables: DynamoStore) -> None:
    """Two sessions of one role: new tenants by default (the retry runs again), one tenant by role."""
    snippet = fresh("function_url")
    sessions = [f"arn:aws:sts::123456789012:assumed-role/checkout/botocore-session-{n}" for n in (1700000000, 1700003600)]
    # The default rule: the session name is part of the tenant, so the retry after a refresh runs again.
    default = [snippet.handler(function_url_event({"amount": 5, "currency": "EUR"}, key="k-default", iam_caller=s),
                               DrillContext()) for s in sessions]
    assert [r["statusCode"] for r in default] == [201, 201]
    assert names.REPLAYED_HEADER not in default[1]["headers"]
    # role_tenant: one role, one tenant; the retry replays the first answer.
    by_role = [snippet.per_role(function_url_event({"amount": 5}, key="k-role", iam_caller=s), DrillContext())
               for s in sessions]
    assert by_role[1]["headers"][names.REPLAYED_HEADER] == "true" and by_role[1]["body"] == by_role[0]["body"]
    # Other roles stay other tenants; a non-assumed-role caller (an IAM user) keeps its ARN.
    other = snippet.per_role(function_url_event({"amount": 5}, key="k-role",
                                                iam_caller="arn:aws:sts::123456789012:assumed-role/refunds/s1"),
                             DrillContext())
    assert other["statusCode"] == 201 and names.REPLAYED_HEADER not in other.get("headers", {})
    assert len(boto3.client("dynamodb").scan(TableName="orders")["Items"]) == 4
