"""The bounded exploration on the fast transport (:mod:`retrysafe._crt`, awscrt, to moto's server on 127.0.0.1).

``test_exploration.py`` explores every scope of :data:`tests.drills.explore.BOUNDED` on botocore's
client; here a representative subset runs on the fast transport (every fault kind on the request
paths of each trigger, two intents racing, expiry and TTL, a lapsed lease, two regions, a takeover,
the outbox), about a sixth of the bounded set's time. The whole set on it:
``python -m tests.drills.explore --set bounded --transport crt`` (about four minutes on a loaded 2-CPU
machine, as on botocore).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.drills.explore import BOUNDED, Scope, World, explore, world
from tests.drills.test_exploration import scope_id

#: The scopes explored on the fast transport too, by :func:`scope_id`.
CRT_SCOPES = (
    "http-atomic-A-f2", "http-atomic-AA-f1", "http-claim-first-A-f2", "http-claim-first-AA-f1",
    "http-atomic-AB-f0-expire+ttl-sequential", "http-claim-first-AA-f0-lapse", "sqs-A-f2", "sqs-AA-f1",
    "task-A-f1", "dynamodb-stream-A-f2", "kinesis-claim-first-AA-f1-sequential", "http-sqs-AB-f1", "outbox-E-f2",
    "http-claim-first-AA-f0-replicate-home=eu-west-1", "takeover-http-A-f1",
)
CRT_BOUNDED: tuple[Scope, ...] = tuple(scope for scope in BOUNDED if scope_id(scope) in CRT_SCOPES)


def test_the_subset_names_scopes_of_the_bounded_set() -> None:
    assert sorted(scope_id(scope) for scope in CRT_BOUNDED) == sorted(CRT_SCOPES)


@pytest.fixture(scope="module")
def crt_explorer() -> Iterator[World]:
    with world("crt") as made:
        yield made


@pytest.mark.parametrize("scope", CRT_BOUNDED, ids=scope_id)
def test_every_schedule_keeps_the_invariants_on_the_fast_transport(crt_explorer: World, scope: Scope) -> None:
    from retrysafe._crt import CrtTransport

    assert all(isinstance(slot.client, CrtTransport) for slot in crt_explorer.slots)
    result = explore(crt_explorer, scope)
    assert result.schedules > 0
    assert not result.violations, "\n\n".join(v.report(scope) for v in result.violations.values())
