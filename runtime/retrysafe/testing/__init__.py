"""Failure drills for retrysafe handlers, shipped with the library (see ``docs/drills.md``).

Nothing here is imported by ``import retrysafe``: the pytest plugin
(:mod:`retrysafe.testing.plugin`) imports pytest, and moto is imported only by
the fixtures that need it, so Lambda packages never load them.

- :class:`Drills` -- the failure drills of the contract (``docs/contract.md``) against one handler
- :func:`publish_twice` -- drill 6: outbox events published twice, consumed once
- :class:`Boundary`, :class:`SimulatedCrash` -- faults on a botocore client (crashes, lost responses,
  throttling, cancellation reasons) and the ledger of applied transactions
- :class:`DynamoSemantics` -- DynamoDB's documented semantics in front of moto (atomic calls,
  transactions, ``ClientRequestToken``); :class:`GlobalTables` -- replicas in several regions with
  replication lag (multi-Region eventual consistency); :func:`ttl_sweep`, :func:`instant_retries`
- :class:`Clock`, :class:`DrillFailed`, :class:`DrillReport`
"""

from __future__ import annotations

from .adapters import Answer, HttpAdapter, SqsAdapter, TaskAdapter, WebhookAdapter, engine_of
from .boundary import ALWAYS, Boundary, Commit, SimulatedCrash
from .drills import Clock, DrillFailed, DrillReport, Drills
from .dynamodb_semantics import DynamoSemantics, GlobalTables, instant_retries, ttl_sweep
from .outbox import outbox_stream_event, publish_twice

__all__ = [
    "ALWAYS",
    "Answer",
    "Boundary",
    "Clock",
    "Commit",
    "DrillFailed",
    "DrillReport",
    "Drills",
    "DynamoSemantics",
    "GlobalTables",
    "HttpAdapter",
    "SimulatedCrash",
    "SqsAdapter",
    "TaskAdapter",
    "WebhookAdapter",
    "engine_of",
    "instant_retries",
    "outbox_stream_event",
    "publish_twice",
    "ttl_sweep",
]
