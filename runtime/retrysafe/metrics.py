"""The CloudWatch metrics the runtime emits: one definition shared by the runtime and the CDK constructs.

Every metric is a count in one namespace (``RETRYSAFE_METRICS_NAMESPACE``,
default ``retrysafe``) with exactly the dimensions :data:`DIMENSIONS`. The
``service`` dimension is always ``retrysafe``, also when the function sets
``POWERTOOLS_SERVICE_NAME`` (Powertools would otherwise put the function's
service name there, and an alarm declared without it would never see a
datapoint). The constructs import this module at synth time to build their
alarms and dashboards, so the two never drift apart. It imports nothing heavy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import names

DEFAULT_NAMESPACE = "retrysafe"
#: The value of the ``service`` dimension of every retrysafe metric.
SERVICE = "retrysafe"
#: The dimensions of every retrysafe metric (name -> value).
DIMENSIONS: Mapping[str, str] = {"service": SERVICE}
UNIT = "Count"

# Outcome names (see :mod:`retrysafe._observability`).
EXECUTED = "Executed"
REPLAYED = "Replayed"
KEY_MISMATCH = "KeyMismatch"
IN_FLIGHT = "InFlightConflict"
TAKEOVER = "Takeover"
FENCING_REJECTED = "FencingRejected"
RELEASED = "Released"
#: A claim could not be freed (DynamoDB unavailable): it stays until its lease lapses.
RELEASE_FAILED = "ReleaseFailed"
NOT_STORED = "NotStored"
#: A result that could not be stored (refused before any commit), or a retry of an intent parked for it.
UNSTORABLE_RESULT = "UnstorableResult"
#: An ``@idempotent``/``@idempotent_function`` call ran unprotected: no key, ``key_required=False``.
UNKEYED = "Unkeyed"
#: A first request answered from the record Powertools idempotency wrote (cut-over; it goes to zero
#: as the old records expire: then the cut-over can be removed).
LEGACY_REPLAYED = "ReplayedFromPowertools"
#: An outbox event its target refused permanently (parked by the publisher).
OUTBOX_EVENT_PARKED = "OutboxEventParked"

#: Outcomes that are logged but are not metrics: Lambda's ``Invocations`` counts first executions.
NOT_METRICS = frozenset({EXECUTED})
#: Every metric name the runtime can emit.
METRIC_NAMES = (REPLAYED, KEY_MISMATCH, IN_FLIGHT, TAKEOVER, FENCING_REJECTED, RELEASED, RELEASE_FAILED,
                NOT_STORED, UNSTORABLE_RESULT, UNKEYED, OUTBOX_EVENT_PARKED, LEGACY_REPLAYED)


def namespace(environ: Mapping[str, str] | None = None) -> str:
    """The namespace metrics go to (``RETRYSAFE_METRICS_NAMESPACE``, default ``retrysafe``)."""
    env = os.environ if environ is None else environ
    return env.get(names.METRICS_NAMESPACE_ENV) or DEFAULT_NAMESPACE

__all__ = [
    "DEFAULT_NAMESPACE",
    "DIMENSIONS",
    "EXECUTED",
    "FENCING_REJECTED",
    "IN_FLIGHT",
    "KEY_MISMATCH",
    "LEGACY_REPLAYED",
    "METRIC_NAMES",
    "NOT_METRICS",
    "NOT_STORED",
    "OUTBOX_EVENT_PARKED",
    "RELEASED",
    "RELEASE_FAILED",
    "REPLAYED",
    "SERVICE",
    "TAKEOVER",
    "UNIT",
    "namespace",
]
