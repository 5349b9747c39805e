"""Structured logs and CloudWatch metrics (EMF) through Powertools, loaded on first use.

Powertools' Logger and Metrics are imported lazily so that importing a
decorated handler stays cheap; metrics go to an isolated
``EphemeralMetrics`` instance (namespace ``RETRYSAFE_METRICS_NAMESPACE``,
default ``retrysafe``) so they never mix with the application's own.
Raw idempotency keys are never logged: records are identified by their hash.
"""

from __future__ import annotations

import os
import threading
from typing import Any

#: Outcome names. Each is logged; all but ``Executed`` are also CloudWatch metrics: a first
#: execution is the normal case (Lambda's own Invocations metric counts it) and skipping its
#: EMF blob keeps about 30 µs off every first request.
EXECUTED = "Executed"
REPLAYED = "Replayed"
KEY_MISMATCH = "KeyMismatch"
IN_FLIGHT = "InFlightConflict"
TAKEOVER = "Takeover"
FENCING_REJECTED = "FencingRejected"
RELEASED = "Released"
NOT_STORED = "NotStored"

_ROUTINE = frozenset({EXECUTED, REPLAYED})
_NOT_A_METRIC = frozenset({EXECUTED})
_ALARMING = frozenset({FENCING_REJECTED, KEY_MISMATCH})


class Telemetry:
    """Counts engine outcomes and logs them; flushed once per invocation by the adapters."""

    def __init__(self) -> None:
        self._logger: Any = None
        self._metrics: Any = None
        self._pending = False
        # Lambda runs one invocation at a time, but handlers may be driven from threads (tests, local servers).
        self._lock = threading.Lock()

    @property
    def logger(self) -> Any:
        """A Powertools ``Logger`` for the ``retrysafe`` service."""
        if self._logger is None:
            from aws_lambda_powertools import Logger

            self._logger = Logger(service=os.environ.get("RETRYSAFE_SERVICE", "retrysafe"),
                                  level=os.environ.get("RETRYSAFE_LOG_LEVEL", "INFO"))
        return self._logger

    def count(self, name: str, operation: str, record_id: str, **fields: Any) -> None:
        """Record one outcome: a log line and (except for ``Executed``) a metric."""
        log = self.logger.debug if name in _ROUTINE else self.logger.warning if name in _ALARMING else self.logger.info
        log(name, extra={"operation": operation, "record": record_id, **fields})
        if name in _NOT_A_METRIC:
            return
        if self._metrics is None:
            from aws_lambda_powertools.metrics import EphemeralMetrics

            self._metrics = EphemeralMetrics(namespace=os.environ.get("RETRYSAFE_METRICS_NAMESPACE", "retrysafe"))
        with self._lock:
            self._metrics.add_metric(name=name, unit="Count", value=1)
            self._pending = True

    def flush(self) -> None:
        """Emit buffered metrics as one EMF blob (no-op when nothing was counted)."""
        with self._lock:
            if self._pending:
                self._pending = False
                self._metrics.flush_metrics()


telemetry = Telemetry()
