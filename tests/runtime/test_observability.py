"""Telemetry writes Powertools' EMF shape itself and loads Powertools' Logger only for a record it logs."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from typing import Any

import pytest
from retrysafe import names
from retrysafe._observability import Telemetry
from retrysafe.metrics import KEY_MISMATCH, REPLAYED


def _powertools_flush(counts: dict[str, int], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from aws_lambda_powertools.metrics import EphemeralMetrics

    # retrysafe.metrics: an explicit service, so POWERTOOLS_SERVICE_NAME never adds a dimension alarms lack
    metrics = EphemeralMetrics(namespace="retrysafe", service="retrysafe")
    for name, n in counts.items():
        for _ in range(n):
            metrics.add_metric(name=name, unit="Count", value=1)
    metrics.flush_metrics()
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def _ours(counts: dict[str, int], capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    telemetry = Telemetry()
    for name, n in counts.items():
        for _ in range(n):
            telemetry.count(name, "CreateOrder", "idem#abc")
    telemetry.flush()
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]


def _without_timestamp(document: dict[str, Any]) -> dict[str, Any]:
    document["_aws"].pop("Timestamp")
    return document


@pytest.mark.parametrize("service", [None, "orders"])
def test_emf_line_is_the_document_powertools_would_flush(service: str | None, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    if service:
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", service)
    else:
        monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    counts = {REPLAYED: 2, KEY_MISMATCH: 1}
    (ours,) = _ours(counts, capsys)
    assert _without_timestamp(ours) == _without_timestamp(_powertools_flush(counts, capsys))


def test_more_than_100_values_split_like_powertools(capsys: pytest.CaptureFixture[str]) -> None:
    documents = _ours({REPLAYED: 250}, capsys)
    assert [len(d[REPLAYED]) for d in documents] == [100, 100, 50]


def test_metrics_disabled_writes_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    assert _ours({REPLAYED: 1}, capsys) == []


def test_flush_without_outcomes_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    Telemetry().flush()
    assert capsys.readouterr().out == ""


def test_routine_outcomes_do_not_create_the_logger_at_info(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_LOG_LEVEL", raising=False)
    monkeypatch.setenv(names.LOG_LEVEL_ENV, "INFO")
    telemetry = Telemetry()
    telemetry.count("Executed", "CreateOrder", "idem#abc")
    telemetry.count(REPLAYED, "CreateOrder", "idem#abc")
    assert telemetry._logger is None


@pytest.mark.parametrize(("env", "logged"), [
    ({names.LOG_LEVEL_ENV: "DEBUG"}, True),
    ({names.LOG_LEVEL_ENV: "INFO", "AWS_LAMBDA_LOG_LEVEL": "DEBUG"}, True),  # Lambda's level wins, as in Powertools
    ({names.LOG_LEVEL_ENV: "INFO"}, False),
])
def test_a_replay_is_logged_exactly_when_the_active_level_allows(env: dict[str, str], logged: bool,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("AWS_LAMBDA_LOG_LEVEL", raising=False)
    monkeypatch.setenv(names.SERVICE_ENV, f"svc-{uuid.uuid4()}")  # a fresh Logger writing to this test's stdout
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    telemetry = Telemetry()
    telemetry.count(REPLAYED, "CreateOrder", "idem#abc")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert any(line.get("message") == REPLAYED and line.get("record") == "idem#abc" for line in lines) is logged


def test_warnings_are_logged_through_powertools(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("AWS_LAMBDA_LOG_LEVEL", raising=False)
    monkeypatch.setenv(names.LOG_LEVEL_ENV, "INFO")
    monkeypatch.setenv(names.SERVICE_ENV, "svc-warnings")
    Telemetry().count(KEY_MISMATCH, "CreateOrder", "idem#abc")
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (line["level"], line["message"], line["service"], line["operation"]) == (
        "WARNING", KEY_MISMATCH, "svc-warnings", "CreateOrder")


def test_a_first_request_and_its_replay_do_not_load_powertools() -> None:
    """Import + invocations of an HTTP handler, in a fresh process, leave Powertools unloaded."""
    script = """
import io, json, sys, contextlib
from moto import mock_aws
import boto3
from retrysafe.testing._events import api_event, DrillContext
with mock_aws():
    ddb = boto3.client("dynamodb", region_name="eu-west-1")
    ddb.create_table(TableName="t", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    from retrysafe import idempotent_http
    @idempotent_http(operation="CreateOrder")
    def handler(event, context, txn):
        return {"statusCode": 201, "body": "{}"}
    event = api_event('{"a": 1}', headers={"Idempotency-Key": "k-1"})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        first, again = handler(event, DrillContext()), handler(event, DrillContext())
    assert first["statusCode"] == again["statusCode"] == 201 and again["headers"]["Idempotent-Replayed"] == "true"
    assert '"Replayed":[1.0]' in out.getvalue()
    print(sorted(m for m in sys.modules if m.startswith("aws_lambda_powertools")))
"""
    env = {names.TABLE_ENV: "t", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x",
           "AWS_SECRET_ACCESS_KEY": "x", names.LOG_LEVEL_ENV: "INFO", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_emf_lines_reuse_the_encoded_document_with_a_fresh_timestamp(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    from retrysafe import metrics
    from retrysafe._observability import emf_line

    clock = iter([1_800_000_000.0, 1_800_000_001.5, 1_800_000_002.0])
    monkeypatch.setattr("retrysafe._observability.time", types.SimpleNamespace(time=lambda: next(clock)))
    first, second = (json.loads(emf_line({metrics.REPLAYED: 1}, "ns", metrics.DIMENSIONS)) for _ in range(2))
    assert (first["_aws"]["Timestamp"], second["_aws"]["Timestamp"]) == (1_800_000_000_000, 1_800_000_001_500)
    assert _without_timestamp(first) == _without_timestamp(second)
    other = json.loads(emf_line({metrics.KEY_MISMATCH: 2}, "other-ns", metrics.DIMENSIONS))
    assert other[metrics.KEY_MISMATCH] == [1.0, 1.0] and other["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "other-ns"
    assert metrics.REPLAYED not in other
