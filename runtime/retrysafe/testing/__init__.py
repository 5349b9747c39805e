"""Failure drills for retrysafe handlers, shipped with the library (see ``runtime/DRILLS.md``).

Nothing here is imported by ``import retrysafe``: the pytest plugin
(:mod:`retrysafe.testing.plugin`) imports pytest, and moto is imported only by
the fixtures that need it, so Lambda packages never load them.

- :class:`Drills` -- the drills of CONTRACT.md against one handler
- :func:`publish_twice` -- drill 6: outbox events published twice, consumed once
- :class:`Boundary`, :class:`SimulatedCrash` -- crash points on a botocore client
- :class:`Clock`, :class:`DrillFailed`, :class:`DrillReport`
"""

from __future__ import annotations

from .adapters import Answer, HttpAdapter, SqsAdapter, TaskAdapter, WebhookAdapter, engine_of
from .boundary import Boundary, Commit, SimulatedCrash
from .drills import Clock, DrillFailed, DrillReport, Drills
from .outbox import outbox_stream_event, publish_twice

__all__ = [
    "Answer",
    "Boundary",
    "Clock",
    "Commit",
    "DrillFailed",
    "DrillReport",
    "Drills",
    "HttpAdapter",
    "SimulatedCrash",
    "SqsAdapter",
    "TaskAdapter",
    "WebhookAdapter",
    "engine_of",
    "outbox_stream_event",
    "publish_twice",
]
