"""The getting-started page's ``on_replay`` snippet: the expiry header on replays only, at no DynamoDB cost."""

from __future__ import annotations

import importlib
import json

from retrysafe import DynamoStore, names
from retrysafe.testing._events import DrillContext, rest_event

from tests.helpers import TABLE, CallCounter, create_business_table


def test_the_expiry_header_is_on_replays_only(lambda_container: None, retrysafe_table: DynamoStore) -> None:
    create_business_table(retrysafe_table.client, "orders")
    snippet = importlib.reload(importlib.import_module("examples.snippets.replay_hook"))
    first = snippet.handler(rest_event({"total": 42}, key="order-7"), DrillContext())
    assert first["statusCode"] == 201 and "X-Idempotency-Expires" not in first["headers"]
    retrysafe_table.cache.clear()  # a retry reaching another container: it reads the record
    calls = CallCounter(retrysafe_table.client)
    again = snippet.handler(rest_event({"total": 42}, key="order-7"), DrillContext())
    assert dict(calls.calls) == {"TransactWriteItems": 1}  # the replay's one round trip; the hook adds none
    assert again["headers"][names.REPLAYED_HEADER] == "true" and again["body"] == first["body"]
    (item,) = retrysafe_table.client.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    assert again["headers"]["X-Idempotency-Expires"] == item[names.TTL_ATTRIBUTE]["N"]
    assert json.loads(again["body"]) == json.loads(first["body"])
