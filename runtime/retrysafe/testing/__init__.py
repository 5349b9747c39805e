"""Failure drills for retrysafe handlers, shipped with the library (see ``docs/drills.md``).

Nothing here is imported by ``import retrysafe``: the pytest plugin
imports pytest, and moto is imported only by
the fixtures that need it, so Lambda packages never load them.

- :class:`Drills` -- the failure drills of the contract (``docs/contract.md``) against one handler
- :func:`publish_twice` -- drill 6: outbox events published twice, consumed once
- :class:`Boundary`, :class:`SimulatedCrash` -- faults at a DynamoDB transport's attempt seam, under its
  retries (crashes, lost responses, throttling, cancellation reasons), on botocore's client or a
  transport of your own, and the ledger of applied transactions
- :class:`DynamoSemantics` -- DynamoDB's documented semantics in front of moto (atomic calls,
  transactions, ``ClientRequestToken``); :class:`GlobalTables` -- replicas in several regions with
  replication lag (multi-Region eventual consistency); :func:`ttl_sweep`, :func:`instant_retries`
- :func:`use_store` -- point an already-decorated handler at a test table or client; :func:`engine_of`
- :class:`Clock`, :class:`DrillFailed`, :class:`DrillReport`
- Lambda events and contexts for your own tests: :class:`DrillContext` (fixed remaining time),
  :func:`api_event`, :func:`http_event`, :func:`rest_event` (API Gateway v2 / v1),
  :func:`sqs_record`, :func:`sqs_event`, :func:`queue_arn`, :func:`task_payload` (Step Functions)

The pytest plugin (fixtures ``retrysafe_table``, ``retrysafe_clock``, ``retrysafe_drills``) is
registered through the ``pytest11`` entry point and needs no import.
"""

from __future__ import annotations

from ._adapters import (
    Answer,
    EventAdapter,
    FunctionAdapter,
    HttpAdapter,
    SqsAdapter,
    TaskAdapter,
    WebhookAdapter,
    engine_of,
    use_store,
)
from ._boundary import ALWAYS, Boundary, Commit, SimulatedCrash
from ._drills import Clock, DrillFailed, DrillReport, Drills
from ._dynamodb_semantics import DynamoSemantics, GlobalTables, instant_retries, ttl_sweep
from ._events import (
    DrillContext,
    api_event,
    http_event,
    queue_arn,
    rest_event,
    sqs_event,
    sqs_record,
    task_payload,
)
from ._outbox import outbox_stream_event, publish_twice

__all__ = [
    "ALWAYS",
    "Answer",
    "Boundary",
    "Clock",
    "Commit",
    "DrillContext",
    "DrillFailed",
    "DrillReport",
    "Drills",
    "DynamoSemantics",
    "EventAdapter",
    "FunctionAdapter",
    "GlobalTables",
    "HttpAdapter",
    "SimulatedCrash",
    "SqsAdapter",
    "TaskAdapter",
    "WebhookAdapter",
    "api_event",
    "engine_of",
    "http_event",
    "instant_retries",
    "outbox_stream_event",
    "publish_twice",
    "queue_arn",
    "rest_event",
    "sqs_event",
    "sqs_record",
    "task_payload",
    "ttl_sweep",
    "use_store",
]
