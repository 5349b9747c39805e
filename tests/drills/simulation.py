"""Randomized fault simulation over the whole flow: API -> outbox -> publisher -> queue -> consumer.

One schedule is a seeded random sequence of steps over a few intents: client
requests (atomic and claim-first APIs), outbox publishes of a random subset in
random order, deliveries in random order, duplicated messages, crashes at every
persistence boundary (before/after each DynamoDB call of the engine, the
publisher's send and its mark-published update), lease expiry, and record
expiry (after the queue is settled: records must outlive redelivery, docs/contract.md P5).

Invariants, checked after every step: at most one business effect per intent
(orders committed, invoice lines applied, provider charges), and every 2xx
answer for an intent equals the first one. After the schedule everything is
delivered to completion without faults, and then each intent has exactly one
effect of each kind. Each schedule runs on fresh tables.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrysafe import Engine, Transaction, idempotent_http, idempotent_sqs, names
from retrysafe._config import Retention
from retrysafe._store import DynamoStore
from retrysafe.names import LEASE_MARGIN_SECONDS
from retrysafe.outbox import OutboxMessage
from retrysafe.outbox.publisher import Publisher
from retrysafe.outbox.publisher import handler as publish_stream
from retrysafe.sqs import Message
from retrysafe.testing import Boundary, Clock, SimulatedCrash
from retrysafe.testing._adapters import Answer, classify_http
from retrysafe.testing._events import DrillContext, api_event, sqs_record

from tests.helpers import create_business_table

ORDERS = "orders"
#: The persistence boundaries a crash is injected at.
BOUNDARIES = [(op, when) for op in ("UpdateItem", "TransactWriteItems", "DeleteItem") for when in ("before", "after")]
LEASE_SECONDS = 30.0


class Violation(AssertionError):
    """An invariant broke; the message names the seed and the steps."""


class Provider:
    """A payment provider deduplicating on the key it is given; remembers which intent each charge was for."""

    def __init__(self) -> None:
        self.charges: dict[str, str] = {}

    def charge(self, key: str, intent: str) -> str:
        """Charge once per key."""
        self.charges.setdefault(key, intent)
        return f"ch_{key[:10]}"

    def count(self, intent: str) -> int:
        """Distinct charges made for ``intent``."""
        return sum(1 for owner in self.charges.values() if owner == intent)


class QueueTarget:
    """The publisher's target: an in-memory queue, which the schedule delivers from in any order."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def send(self, messages: Sequence[OutboxMessage]) -> set[str]:
        """Enqueue, then possibly crash before the publisher marks the items published."""
        for message in messages:
            self.sim.queue.append(sqs_record(message.body(), attributes={names.KEY_MESSAGE_ATTRIBUTE: message.event_id}))
        if self.sim.crash_after_send:
            self.sim.crash_after_send = False
            raise SimulatedCrash("SendMessageBatch", "after")
        return set()


@dataclass
class Intent:
    """One client intent and what the simulation observed about it."""

    key: str
    claim_first: bool
    amount: int
    first: Answer | None = None
    late: bool = False
    done: bool = False
    record_id: str | None = None
    answers: list[str] = field(default_factory=list)


class Simulation:
    """One seeded schedule on a shared store (``store``) and clock."""

    def __init__(self, seed: int, store: DynamoStore, boundary: Boundary, steps: int = 12) -> None:
        self.seed, self.store, self.boundary, self.steps = seed, store, boundary, steps
        self.rng = random.Random(seed)
        self.clock = Clock(1_800_000_000.0)
        self.provider = Provider()
        self.queue: list[dict[str, Any]] = []
        self.crash_after_send = False
        self.log: list[str] = []
        self.events: set[str] = set()
        #: ``(operation, when)`` of every crash injected.
        self.crashed: set[tuple[str, str]] = set()
        #: Committed business writes per item (``table``, ``pk=...``), across the whole schedule.
        self.writes: Counter[tuple[str, str]] = Counter()
        self.tenant = f"sim-{seed}"
        engine = Engine(store, clock=self.clock)
        retention = Retention().horizon_seconds
        self.horizon = retention
        self.create = idempotent_http(self._create, operation="CreateOrder", engine=engine)
        self.pay = idempotent_http(self._create, operation="PayOrder", mode="claim_first", engine=engine)
        self.consume = idempotent_sqs(self._consume, subscriber="billing", engine=engine)
        self.publisher = Publisher(QueueTarget(self), store)
        self.intents = [Intent(f"k{i}", self.rng.random() < 0.5, self.rng.randint(1, 99))
                        for i in range(self.rng.randint(1, 3))]

    # -- the application --------------------------------------------------------
    def _create(self, event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
        body = json.loads(event["body"])
        order = txn.derive_key("order")[:16]
        if txn.operation == "PayOrder":
            self.provider.charge(txn.derive_key("charge"), f"{txn.operation}/{txn.key}")
        txn.put({"pk": f"order#{order}", "amount": body["amount"]}, table=ORDERS, condition="attribute_not_exists(pk)")
        txn.append_event("OrderPlaced", {"order": order}, aggregate_type="Order", aggregate_id=order, sequence=1)
        return {"statusCode": 201, "headers": {"Content-Type": "application/json", "Location": f"/orders/{order}"},
                "body": json.dumps({"order": order, "amount": body["amount"]})}

    def _consume(self, message: Message, txn: Transaction) -> None:
        order = message.content["payload"]["order"]
        txn.update({"pk": f"invoice#{order}"}, "ADD #n :one", names={"#n": "n"}, values={":one": 1}, table=ORDERS)

    # -- steps ---------------------------------------------------------------------
    def run(self) -> None:
        """Run the schedule, then deliver to completion; raises :class:`Violation`."""
        actions = [self.request, self.request, self.publish, self.deliver, self.deliver, self.duplicate,
                   self.lapse_leases, self.expire_records]
        for _ in range(self.steps):
            self.rng.choice(actions)()
            self.check()
        self.complete()

    def arm(self, probability: float = 0.35) -> None:
        if self.rng.random() < probability:
            operation, when = self.rng.choice(BOUNDARIES)
            self.boundary.crash(operation, when=when, nth=self.rng.randint(1, 2))

    def guarded(self, label: str, call: Any) -> Any:
        self.boundary.reset()
        try:
            return call()
        except SimulatedCrash as crash:
            self.log.append(f"{label}: {crash}")
            return None
        finally:
            self.crashed.update(self.boundary.crashes)
            self.boundary.revive()
            for commit in self.boundary.commits:
                self.events.update(commit.events)
                self.writes.update(commit.writes)

    def request(self, intent: Intent | None = None, faults: bool = True) -> None:
        intent = intent or self.rng.choice(self.intents)
        handler = self.pay if intent.claim_first else self.create
        route = "/pay" if intent.claim_first else "/orders"
        event = api_event(json.dumps({"amount": intent.amount}), headers={names.IDEMPOTENCY_KEY_HEADER: intent.key},
                          tenant=self.tenant, route=route)
        if faults:
            self.arm()
        response = self.guarded(f"request {intent.key}", lambda: handler(event, DrillContext(remaining_ms=int(
            LEASE_SECONDS * 1000))))
        if response is None:
            return
        answer = classify_http(response)
        self.log.append(f"request {intent.key} ({'claim-first' if intent.claim_first else 'atomic'}): "
                        f"{answer.describe()}")
        intent.answers.append(answer.describe())
        if answer.kind in ("executed", "replayed"):
            if intent.first is None:
                intent.first = answer
            elif (intent.first.status, intent.first.value, intent.first.headers) != (
                    answer.status, answer.value, answer.headers):
                self.fail(f"intent {intent.key}: a 2xx answer differs from the first: {intent.first} vs {answer}")
            intent.done = True
        elif answer.kind == "refused" and intent.late:
            intent.done = True  # the documented late-replay refusal (the derived order already exists)
        elif answer.kind not in ("in_flight", "refused"):
            self.fail(f"intent {intent.key}: unexpected answer {answer.describe()} {answer.value}")

    def publish(self, faults: bool = True, everything: bool = False) -> None:
        pending = [eid for eid in sorted(self.events) if self.unpublished(eid)]
        if not everything:
            pending = self.rng.sample(pending, self.rng.randint(0, len(pending)))
        if not pending:
            return
        records = [{"eventName": "INSERT", "eventSource": "aws:dynamodb",
                    "dynamodb": {"NewImage": self.item(eid), "SequenceNumber": str(i + 1)}}
                   for i, eid in enumerate(pending)]
        if faults and self.rng.random() < 0.3:
            if self.rng.random() < 0.5:
                self.crash_after_send = True
            else:
                self.boundary.crash("UpdateItem", when=self.rng.choice(["before", "after"]))
        self.log.append(f"publish {len(pending)} events")
        self.guarded("publish", lambda: publish_stream({"Records": records}, None, publisher=self.publisher))
        self.crash_after_send = False

    def deliver(self, faults: bool = True) -> None:
        if not self.queue:
            return
        index = self.rng.randrange(len(self.queue))  # any order: standard queues reorder
        record = self.queue[index]
        if faults:
            self.arm()
        result = self.guarded("deliver", lambda: self.consume({"Records": [record]}, DrillContext()))
        acked = result is not None and not result["batchItemFailures"]
        lost_ack = faults and acked and self.rng.random() < 0.2
        self.log.append(f"deliver {record['messageId'][:8]}: {'acked' if acked else 'not acked'}"
                        + (" (ack lost)" if lost_ack else ""))
        if acked and not lost_ack:
            self.queue.pop(index)

    def duplicate(self) -> None:
        if self.queue:
            self.queue.append(dict(self.rng.choice(self.queue)))
            self.log.append("a message is delivered twice")

    def lapse_leases(self) -> None:
        self.clock.advance(LEASE_SECONDS + LEASE_MARGIN_SECONDS + 1)
        self.log.append("the clock passes every lease")

    def expire_records(self) -> None:
        """Jump past the retry horizon, once the queue is settled (records must outlive redelivery)."""
        self.settle()
        self.clock.advance(self.horizon + 1)
        for intent in self.intents:
            intent.late = True
        self.log.append("the clock passes the records' expiry")

    # -- completion and invariants --------------------------------------------------
    def settle(self) -> None:
        for _ in range(50):
            self.publish(faults=False, everything=True)
            while self.queue:
                self.deliver(faults=False)
            if not any(self.unpublished(eid) for eid in self.events):
                return
        self.fail("the outbox never settled")

    def complete(self) -> None:
        for intent in self.intents:
            for _ in range(5):
                if intent.done:
                    break
                self.request(intent, faults=False)
                self.lapse_leases()
            if not intent.done:
                self.fail(f"intent {intent.key} never completed: {intent.answers}")
        self.settle()
        self.check(final=True)

    def check(self, final: bool = False) -> None:
        want = "exactly" if final else "at most"
        for intent in self.intents:
            operation = "PayOrder" if intent.claim_first else "CreateOrder"
            order = self.order_id(operation, intent.key)
            orders = self.writes[(ORDERS, f"pk=order#{order}")]
            invoices = self.writes[(ORDERS, f"pk=invoice#{order}")]
            charges = self.provider.count(f"{operation}/{intent.key}")
            counts = {"order": orders, "invoice lines": invoices, **({"charges": charges} if intent.claim_first
                                                                     else {})}
            for name, value in counts.items():
                if value > 1 or (final and value != 1):
                    self.fail(f"intent {intent.key} ({operation}): {value} {name}; expected {want} one")

    def order_id(self, operation: str, key: str) -> str:
        from retrysafe._keys import Scope

        return Scope(self.tenant, operation, key, adapter=names.HTTP_ADAPTER,
                     subscriber=names.LOCAL_SUBSCRIBER).derive_key("order")[:16]

    def item(self, eid: str) -> dict[str, Any]:
        item: dict[str, Any] = self.store.client.get_item(TableName=self.store.table_name,
                                                          Key={"pk": {"S": names.OUTBOX_PREFIX + eid}})["Item"]
        return item

    def unpublished(self, eid: str) -> bool:
        return names.UNPUBLISHED_ATTRIBUTE in self.item(eid)

    def fail(self, problem: str) -> None:
        steps = "\n".join(f"  {i}. {line}" for i, line in enumerate(self.log, 1))
        raise Violation(f"seed {self.seed}: {problem}\nreplay with RETRYSAFE_SIM_SEED={self.seed}\n{steps}")


def setup() -> tuple[DynamoStore, Boundary]:
    """Inside moto: a DynamoDB client with its boundary, and the store (tables come per schedule)."""
    import boto3

    client = boto3.client("dynamodb", region_name="eu-west-1")
    return DynamoStore("idempotency", client=client), Boundary(client)


def run_schedule(seed: int, store: DynamoStore, boundary: Boundary,
                 kind: type[Simulation] = Simulation) -> Simulation:
    """Run one schedule on fresh tables (moto copies every table on each transaction: keep them small)."""
    from retrysafe.testing._plugin import create_table

    client = store.client
    create_table(client, store.table_name)
    create_business_table(client, ORDERS)
    try:
        simulation = kind(seed, store, boundary)
        simulation.run()
        return simulation
    finally:
        client.delete_table(TableName=store.table_name)
        client.delete_table(TableName=ORDERS)
