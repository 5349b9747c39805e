"""The migration guide's body-keyed port, side by side with Powertools on moto: the same requests to
Powertools' getting-started handler and to the same handler under ``@idempotent_http(key=...)``."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from retrysafe import DynamoStore, names
from retrysafe.testing._events import DrillContext, api_event


@pytest.fixture
def both(powertools_table: DynamoStore) -> Iterator[tuple[ModuleType, ModuleType]]:
    """Powertools' table and retrysafe's on moto; each snippet imported anew (a cold start on this moto)."""
    before = importlib.reload(importlib.import_module("examples.snippets.powertools_body_before"))
    after = importlib.reload(importlib.import_module("examples.snippets.powertools_body_key"))
    yield before, after


def order(**body: Any) -> dict[str, Any]:
    """A REST API request as Powertools' example gets it; each has its own requestId, as each retry does."""
    return api_event(json.dumps(body), headers={"Content-Type": "application/json"}, tenant=None, version="1.0")


def charges() -> int:
    from examples.snippets.payments import payments

    return payments.charge_count()


def test_the_body_keyed_handler_ports_with_the_decorator_line(both: tuple[ModuleType, ModuleType]) -> None:
    for module in both:
        start = charges()
        first = module.lambda_handler(order(user_id="u-1", product_id="p-1", amount=10), DrillContext())
        retry = module.lambda_handler(order(user_id="u-1", product_id="p-1", amount=10), DrillContext())
        assert first["statusCode"] == retry["statusCode"] == 201
        assert json.loads(retry["body"]) == json.loads(first["body"]) and charges() == start + 1
        other = module.lambda_handler(order(user_id="u-1", product_id="p-1", amount=20), DrillContext())
        assert other["statusCode"] == 201 and other["body"] != first["body"] and charges() == start + 2
    assert both[1].lambda_handler(order(user_id="u-1", product_id="p-1", amount=10), DrillContext())[
        "headers"][names.REPLAYED_HEADER] == "true"


def test_the_payload_subset_port_refuses_another_body_where_powertools_replays(
        both: tuple[ModuleType, ModuleType]) -> None:
    answers: list[dict[str, Any]] = []
    for module in both:
        start = charges()
        first = module.subscribe(order(user_id="u-2", product_id="p-1", amount=10), DrillContext())
        retry = module.subscribe(order(user_id="u-2", product_id="p-1", amount=10), DrillContext())
        assert json.loads(retry["body"]) == json.loads(first["body"]) and charges() == start + 1
        answers.append(module.subscribe(order(user_id="u-2", product_id="p-1", amount=99), DrillContext()))
        assert charges() == start + 1
    powertools, retrysafe = answers
    assert powertools["statusCode"] == 201  # Powertools answers the other amount with the first charge
    assert retrysafe["statusCode"] == 422  # retrysafe refuses it: the body is in the fingerprint
