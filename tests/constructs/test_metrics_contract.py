"""The alarms watch exactly the metrics the runtime emits: namespace, name and dimensions from one definition."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from retrysafe import metrics, names
from retrysafe._observability import Telemetry
from retrysafe_cdk import IdempotencyTable


def _emitted(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, Any]:
    """Count ``name`` once through the runtime and return (namespace, metric, dimensions) of its EMF blob."""
    telemetry = Telemetry()
    telemetry.count(name, "op", "record-hash")
    telemetry.flush()
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (blob,) = blobs
    (directive,) = blob["_aws"]["CloudWatchMetrics"]
    (dimension_names,) = directive["Dimensions"]
    return {"namespace": directive["Namespace"], "metric": directive["Metrics"][0]["Name"],
            "dimensions": {d: blob[d] for d in dimension_names}}


def _alarm(table_alarm: str) -> dict[str, Any]:
    stack = cdk.Stack(cdk.App(), "Alarms")
    table = IdempotencyTable(stack, "Table")
    getattr(table, table_alarm)()
    (alarm,) = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm").values()
    props = alarm["Properties"]
    return {"namespace": props["Namespace"], "metric": props["MetricName"],
            "dimensions": {d["Name"]: d["Value"] for d in props.get("Dimensions", [])}}


@pytest.mark.parametrize("service", ["orders", None])
def test_fencing_alarm_matches_the_emf_the_runtime_writes(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str],
                                                          service: str | None) -> None:
    monkeypatch.delenv(names.METRICS_NAMESPACE_ENV, raising=False)
    if service is None:
        monkeypatch.delenv("POWERTOOLS_SERVICE_NAME", raising=False)
    else:  # common in Powertools apps: it used to add a `service` dimension the alarm did not have
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", service)
    emitted = _emitted(capsys, metrics.FENCING_REJECTED)
    assert emitted == _alarm("add_fencing_alarm")
    assert emitted["dimensions"] == dict(metrics.DIMENSIONS)


def test_every_table_metric_uses_the_runtime_definition() -> None:
    stack = cdk.Stack(cdk.App(), "Metrics")
    table = IdempotencyTable(stack, "Table")
    for metric in (table.metric_fencing_rejections(), table.metric_key_mismatches(), table.metric_replays(),
                   table.metric_in_flight_conflicts(), table.metric_parked_events(),
                   table.metric_replayed_from_powertools()):
        assert metric.namespace == metrics.DEFAULT_NAMESPACE
        assert metric.metric_name in metrics.METRIC_NAMES
        assert metric.dimensions == dict(metrics.DIMENSIONS)
    custom = table.metric(metrics.TAKEOVER, period=cdk.Duration.minutes(1), statistic="Maximum", label="takeovers")
    assert (custom.metric_name, custom.period.to_seconds(), custom.statistic, custom.label) == (
        metrics.TAKEOVER, 60, "Maximum", "takeovers")
    with pytest.raises(TypeError):
        table.metric(metrics.TAKEOVER, not_an_option=1)
