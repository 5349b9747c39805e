"""The migration guide's snippets: the Powertools handler answers first, retrysafe with the cut-over answers its
retry from Powertools' record (no second charge), with the round trips the page states."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from retrysafe import DynamoStore, names
from retrysafe.testing import engine_of
from retrysafe.testing._events import DrillContext, api_event

from tests.helpers import ROOT, CallCounter

OLD_TABLE = "orders-idempotency"


@pytest.fixture
def cutover_env(lambda_container: None, retrysafe_table: DynamoStore,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoStore]:
    """Powertools' table on moto, and what IdempotentFunction(powertools_cutover=...) puts in the environment."""
    retrysafe_table.client.create_table(
        TableName=OLD_TABLE, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "orders")
    monkeypatch.setenv(names.POWERTOOLS_TABLE_ENV, OLD_TABLE)
    monkeypatch.setenv(names.POWERTOOLS_UNTIL_ENV, str(int(time.time()) + 3600))
    yield retrysafe_table


def old_code() -> ModuleType:
    """The "before" snippet, loaded as the module the old Lambda ran (handler ``orders_api.lambda_handler``)."""
    spec = importlib.util.spec_from_file_location("orders_api", ROOT / "examples" / "snippets" / "powertools_before.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def request(key: str, amount: int = 30) -> dict[str, Any]:
    return api_event(json.dumps({"amount": amount}), headers={names.IDEMPOTENCY_KEY_HEADER.lower(): key}, tenant=None)


def test_the_retry_of_a_powertools_request_is_answered_from_its_record(cutover_env: DynamoStore) -> None:
    from examples.snippets.payments import payments

    before = payments.charge_count()
    first = old_code().lambda_handler(request("k-1"), DrillContext())
    assert payments.charge_count() == before + 1

    new = importlib.reload(importlib.import_module("examples.snippets.powertools_cutover"))
    calls = CallCounter(engine_of(new.handler).store.client)
    retry = new.handler(request("k-1"), DrillContext())
    assert json.loads(retry["body"]) == json.loads(first["body"]) and retry["statusCode"] == 201
    assert retry["headers"][names.REPLAYED_HEADER] == "true"
    assert payments.charge_count() == before + 1
    assert calls.calls["GetItem"] == 1  # the one lookup in Powertools' table

    calls.reset()
    assert json.loads(new.handler(request("k-1"), DrillContext())["body"]) == json.loads(first["body"])
    assert calls.total == 0  # from the record cache: no lookup, no round trip


def test_a_new_request_during_the_window_pays_one_get_item(cutover_env: DynamoStore) -> None:
    from examples.snippets.payments import payments

    new = importlib.reload(importlib.import_module("examples.snippets.powertools_cutover"))
    calls = CallCounter(engine_of(new.handler).store.client)
    before = payments.charge_count()
    assert new.handler(request("k-new"), DrillContext())["statusCode"] == 201
    assert payments.charge_count() == before + 1
    assert calls.calls["GetItem"] == 1 and calls.total == 3  # claim, the lookup, the commit


def test_the_cutover_module_does_not_import_powertools_idempotency_until_a_lookup() -> None:
    """A cold start pays no Powertools idempotency import (about 150 ms): it comes with the first lookup."""
    code = ("import sys, examples.snippets.powertools_cutover; "
            "print(any(m.startswith('aws_lambda_powertools.utilities.idempotency') for m in sys.modules))")
    env = {**os.environ, names.POWERTOOLS_TABLE_ENV: OLD_TABLE, names.POWERTOOLS_UNTIL_ENV: "1900000000",
           "AWS_DEFAULT_REGION": "eu-west-1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.synth
def test_the_cdk_snippet_grants_get_item_on_the_old_table_and_sets_the_window() -> None:
    import aws_cdk as cdk
    from aws_cdk.assertions import Match, Template

    from examples.snippets.cdk_cutover import CutoverStack

    template = Template.from_stack(CutoverStack(cdk.App(), "DocsCutover"))
    template.has_resource_properties("AWS::Lambda::Function", {"Environment": {"Variables": Match.object_like({
        names.POWERTOOLS_TABLE_ENV: OLD_TABLE, names.POWERTOOLS_UNTIL_ENV: "1799413200"})}})
    statements = [s for p in template.find_resources("AWS::IAM::Policy").values()
                  for s in p["Properties"]["PolicyDocument"]["Statement"] if f"table/{OLD_TABLE}" in json.dumps(s)]
    assert [s["Action"] for s in statements] == ["dynamodb:GetItem"]
