"""Structured logs and CloudWatch metrics (EMF), without loading Powertools on the hot path.

Metrics are written as CloudWatch Embedded Metric Format lines directly, in the exact shape of a
Powertools ``EphemeralMetrics`` flush. Their namespace (``RETRYSAFE_METRICS_NAMESPACE``, default
``retrysafe``), names and dimensions (always ``service=retrysafe``, whatever
``POWERTOOLS_SERVICE_NAME`` says) are defined once in :mod:`retrysafe.metrics`, which the CDK
constructs' alarms read too. ``POWERTOOLS_METRICS_DISABLED`` / ``POWERTOOLS_DEV`` are honoured.
They never mix with the application's own metrics.

Logs go through a Powertools ``Logger`` (service ``RETRYSAFE_SERVICE``, level ``RETRYSAFE_LOG_LEVEL``,
Lambda's advanced logging level first), which is imported only when a record is actually logged at
the active level: routine outcomes are DEBUG, so a plain first request or replay loads nothing.
Raw idempotency keys are never logged: records are identified by their hash.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from . import metrics

# Outcome names. Each is logged; all but ``Executed`` are also CloudWatch metrics: a first
# execution is the normal case (Lambda's own Invocations metric counts it) and skipping its
# EMF blob keeps about 30 µs off every first request.
from .metrics import (
    EXECUTED,
    FENCING_REJECTED,
    IN_FLIGHT,
    KEY_MISMATCH,
    LEGACY_REPLAYED,
    NOT_STORED,
    RELEASE_FAILED,
    RELEASED,
    REPLAYED,
    TAKEOVER,
    UNKEYED,
    UNSTORABLE_RESULT,
)
from .names import LOG_LEVEL_ENV, SERVICE_ENV

__all__ = [
    "EXECUTED",
    "FENCING_REJECTED",
    "IN_FLIGHT",
    "KEY_MISMATCH",
    "LEGACY_REPLAYED",
    "NOT_STORED",
    "RELEASED",
    "RELEASE_FAILED",
    "REPLAYED",
    "TAKEOVER",
    "UNKEYED",
    "UNSTORABLE_RESULT",
    "Telemetry",
    "emf_line",
    "telemetry",
]

_ROUTINE = frozenset({EXECUTED, REPLAYED})
_NOT_A_METRIC = metrics.NOT_METRICS
_ALARMING = frozenset({FENCING_REJECTED, KEY_MISMATCH, RELEASE_FAILED, UNSTORABLE_RESULT, UNKEYED})


#: Lambda's advanced logging levels (``AWS_LAMBDA_LOG_LEVEL``), which take precedence, and Python's.
_LAMBDA_LEVELS = {"TRACE": 0, "DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}
_LEVELS = {"NOTSET": 0, "DEBUG": 10, "INFO": 20, "WARNING": 30, "WARN": 30, "ERROR": 40, "CRITICAL": 50, "FATAL": 50}
_DEBUG, _INFO, _WARNING = 10, 20, 30
_TRUE = frozenset({"1", "true", "yes", "y", "on", "t"})
_encode_compact = json.JSONEncoder(separators=(",", ":")).encode  # reused: no encoder per flush
#: Values of one metric in one EMF document (CloudWatch's limit).
MAX_VALUES = 100


def _threshold() -> int:
    """The level a ``Logger`` created now would have; 0 (log everything) when the name is not a standard one."""
    lambda_level = _LAMBDA_LEVELS.get(os.environ.get("AWS_LAMBDA_LOG_LEVEL", ""))
    if lambda_level is not None:
        return lambda_level
    return _LEVELS.get(os.environ.get(LOG_LEVEL_ENV, "INFO").upper(), 0)


def _metrics_disabled() -> bool:
    """Powertools' rule: ``POWERTOOLS_METRICS_DISABLED`` true, or ``POWERTOOLS_DEV`` true without it."""
    disabled = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    if disabled is not None:
        return disabled.strip().lower() in _TRUE
    return os.environ.get("POWERTOOLS_DEV", "false").strip().lower() in _TRUE


class Telemetry:
    """Counts engine outcomes and logs them; flushed once per invocation by the adapters."""

    def __init__(self) -> None:
        self._logger: Any = None
        self._threshold: int | None = None  # read from the environment once, as the Logger reads its level
        self._namespace: str | None = None  # read once, as Powertools' Metrics reads it
        self._counts: dict[str, int] = {}
        # Lambda runs one invocation at a time, but handlers may be driven from threads (tests, local servers).
        self._lock = threading.Lock()

    @property
    def logger(self) -> Any:
        """A Powertools ``Logger`` for the ``retrysafe`` service (imported on first use)."""
        if self._logger is None:
            from aws_lambda_powertools import Logger

            self._logger = Logger(service=os.environ.get(SERVICE_ENV, "retrysafe"),
                                  level=os.environ.get(LOG_LEVEL_ENV, "INFO"))
        return self._logger

    def count(self, name: str, operation: str, record_id: str, **fields: Any) -> None:
        """Record one outcome: a log line at its level (when enabled) and, except for ``Executed``, a metric."""
        level = _DEBUG if name in _ROUTINE else _WARNING if name in _ALARMING else _INFO
        if self._enabled(level):
            log = {_DEBUG: self.logger.debug, _INFO: self.logger.info, _WARNING: self.logger.warning}[level]
            log(name, extra={"operation": operation, "record": record_id, **fields})
        if name in metrics.NOT_METRICS:
            return
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + 1

    def _enabled(self, level: int) -> bool:
        if self._logger is not None:  # the logger's own level, which may have been changed since
            return bool(self._logger.isEnabledFor(level))
        if self._threshold is None:
            self._threshold = _threshold()
        return level >= self._threshold

    def flush(self) -> None:
        """Emit the outcomes counted since the last flush as one EMF line (nothing when none were counted)."""
        with self._lock:
            if not self._counts:
                return
            counts, self._counts = self._counts, {}
        if _metrics_disabled():
            return
        if self._namespace is None:
            self._namespace = metrics.namespace()
        namespace = self._namespace
        while counts:  # CloudWatch takes at most 100 values per metric and document, as Powertools flushes
            chunk = {name: min(n, MAX_VALUES) for name, n in counts.items()}
            counts = {name: n - MAX_VALUES for name, n in counts.items() if n > MAX_VALUES}
            sys.stdout.write(emf_line(chunk, namespace, metrics.DIMENSIONS) + "\n")


def emf_line(counts: dict[str, int], namespace: str, dimensions: Mapping[str, str]) -> str:
    """One CloudWatch EMF document for ``counts`` (outcome name -> occurrences), unit ``Count``.

    The document is encoded once per distinct ``counts``/namespace/dimensions (a replay writes the
    same one every time); each line only puts the current timestamp in front of the rest.
    """
    key = (tuple(counts.items()), namespace, tuple(dimensions.items()))
    rest = _EMF_TEMPLATES.get(key)
    if rest is None:
        document: dict[str, Any] = {
            "_aws": {"Timestamp": 0, "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [list(dimensions)],
                "Metrics": [{"Name": name, "Unit": metrics.UNIT} for name in counts],
            }]},
            **dimensions,
        }
        for name, occurrences in counts.items():
            document[name] = [1.0] * occurrences
        rest = _encode_compact(document)[len(_EMF_HEAD) + 1:]  # everything after the timestamp's "0"
        if len(_EMF_TEMPLATES) >= _EMF_TEMPLATE_LIMIT:
            _EMF_TEMPLATES.clear()
        _EMF_TEMPLATES[key] = rest
    return f"{_EMF_HEAD}{int(time.time() * 1000)}{rest}"


_EMF_HEAD = '{"_aws":{"Timestamp":'
_EMF_TEMPLATES: dict[tuple[Any, ...], str] = {}
_EMF_TEMPLATE_LIMIT = 64


telemetry = Telemetry()
