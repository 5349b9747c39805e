"""Bounded randomized fault simulation (``make soak`` runs 10,000+ schedules).

``RETRYSAFE_SIM_SEED=<seed>`` replays one schedule; ``RETRYSAFE_SIM_SCHEDULES`` sets how many run here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.drills.simulation import BOUNDARIES, run_schedule, setup


@pytest.fixture(scope="module")
def world() -> Iterator[Any]:
    from moto import mock_aws

    with mock_aws():
        yield setup()


def seeds() -> list[int]:
    if os.environ.get("RETRYSAFE_SIM_SEED"):
        return [int(os.environ["RETRYSAFE_SIM_SEED"])]
    return list(range(1, 1 + int(os.environ.get("RETRYSAFE_SIM_SCHEDULES", "150"))))


def test_randomized_schedules_keep_every_intent_at_most_once_and_replays_equal(world: Any) -> None:
    store, boundary = world
    crashes: set[tuple[str, str]] = set()
    for seed in seeds():
        simulation = run_schedule(seed, store, boundary)
        crashes |= simulation.crashed
    if not os.environ.get("RETRYSAFE_SIM_SEED"):
        # The schedules really crashed at every boundary (else the simulation proves little).
        missing = set(BOUNDARIES) - crashes
        assert not missing, f"no schedule crashed at {sorted(missing)}"


def test_the_simulation_catches_a_consumer_without_processed_message_tracking(world: Any) -> None:
    """Mutation check: the same flow with a consumer that applies every delivery must be caught."""
    from retrysafe import names
    from retrysafe._keys import Scope

    from tests.drills import simulation as sim

    store, boundary = world

    class Unguarded(sim.Simulation):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            engine = self.consume.consumer.engine
            consume = self._consume

            def apply_every_delivery(event: dict[str, Any], context: Any) -> dict[str, Any]:
                from aws_lambda_powertools.utilities.data_classes import SQSRecord
                from retrysafe._engine import Completion
                from retrysafe.sqs import Message, unwrap

                record = SQSRecord(event["Records"][0])
                message = Message(record, record.message_id, unwrap(record.body)[0])
                engine.execute_unkeyed(Scope("-", "unguarded", "", adapter=names.HTTP_ADAPTER),
                                       lambda txn: Completion(consume(message, txn)))
                return {"batchItemFailures": []}

            self.consume = apply_every_delivery

    caught = []
    for seed in range(1, 41):
        try:
            sim.run_schedule(seed, store, boundary, Unguarded)
        except sim.Violation as violation:
            caught.append(str(violation))
    assert caught and "invoice lines; expected" in caught[0]
    assert "replay with RETRYSAFE_SIM_SEED=" in caught[0]
