"""Results beyond plain JSON: the record codec's tagged types, serializers, and results that cannot be stored.

Issue 23 item 3: a claim-first consumer that calls a provider and returns ``{"charged": Decimal("12.50")}``
raised ``TypeError`` after the call, released its claim, and every redelivery called the provider again.
"""

from __future__ import annotations

import json
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel
from retrysafe import Engine, Transaction, idempotent_sqs, idempotent_task
from retrysafe._cache import RecordCache
from retrysafe._record import COMPLETED, PARKED, Record, from_item, to_item
from retrysafe._results import DataclassSerializer, PydanticSerializer, StoredAsIs, serializer_for
from retrysafe._tagged import decode_text, encode_text
from retrysafe.errors import UnstorableResultError
from retrysafe.sqs import Message
from retrysafe.testing._events import DrillContext, sqs_record

from tests.helpers import TABLE, payload

RICH = {"charged": Decimal("12.50"), "at": datetime(2026, 12, 1, 18, 30, tzinfo=UTC), "day": date(2026, 12, 1),
        "slot": time(9, 30), "id": uuid.UUID("12345678-1234-5678-1234-567812345678"), "raw": b"\x00\xff",
        "tags": {"b", "a"}, "frozen": frozenset({3, 1}), "plain": [1.5, None, True],
        "$": "a member named like the tag", "nested": {"$": {"v": 1}}}


def _stored(result: Any) -> dict[str, Any]:
    return to_item(Record("idem#x", COMPLETED, "fp", 2_000_000_000, result=result))


def test_tagged_types_round_trip_through_the_record_with_their_types() -> None:
    item = _stored(RICH)
    back = from_item(item).result
    assert back == RICH
    assert {name: type(value) for name, value in back.items()} == {name: type(v) for name, v in RICH.items()}


def test_plain_json_results_are_stored_exactly_as_before() -> None:
    result = {"statusCode": 201, "body": '{"order":"o-1"}', "headers": {"Location": "/orders/o-1"}}
    assert _stored(result)["r"] == {"S": json.dumps(result, separators=(",", ":"))}


def test_the_tagged_form_is_compact_and_marked() -> None:
    text = _stored({"charged": Decimal("12.50")})["r"]["S"]
    assert text == '${"charged":{"$":"dec","v":"12.50"}}'
    assert decode_text(text) == {"charged": Decimal("12.50")}
    large = _stored([Decimal(i) for i in range(200)])
    assert "rz" in large and zlib.decompress(large["rz"]["B"]).decode().startswith("$[")


def test_a_set_is_stored_the_same_whatever_its_iteration_order() -> None:
    assert encode_text({"z", "a", "m"}) == encode_text({"m", "z", "a"}) == '${"$":"set","v":["a","m","z"]}'


def test_dataclasses_and_models_inside_a_result_are_stored_as_their_fields() -> None:
    @dataclass
    class Line:
        sku: str
        price: Decimal

    class Customer(BaseModel):
        name: str
        since: date

    back = decode_text(encode_text({"line": Line("s-1", Decimal("2.10")),
                                    "customer": Customer(name="Jane", since=date(2020, 1, 2))}))
    assert back == {"line": {"sku": "s-1", "price": Decimal("2.10")},
                    "customer": {"name": "Jane", "since": date(2020, 1, 2)}}


@pytest.mark.parametrize("result", [object(), {"k": object()}, {("a", 1): 1}])
def test_what_cannot_be_stored_raises_the_named_error(result: Any) -> None:
    with pytest.raises(UnstorableResultError):
        encode_text(result)


def test_a_circular_result_raises_the_named_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(UnstorableResultError, match="refers to itself"):
        encode_text(loop)


@dataclass
class Charge:
    amount: Decimal
    at: datetime
    lines: list[Line2] = field(default_factory=list)


@dataclass
class Line2:
    sku: str


class Receipt(BaseModel):
    amount: Decimal
    at: datetime


def test_a_dataclass_serializer_rebuilds_nested_dataclasses_from_annotations() -> None:
    serializer = DataclassSerializer(Charge)
    charge = Charge(Decimal("12.50"), datetime(2026, 12, 1, tzinfo=UTC), [Line2("a"), Line2("b")])
    assert serializer.load(decode_text(encode_text(serializer.dump(charge)))) == charge
    with pytest.raises(UnstorableResultError, match="not the declared Charge"):
        serializer.dump({"amount": 1})  # type: ignore[arg-type]


def test_a_pydantic_serializer_stores_the_json_form_and_validates_it_back() -> None:
    serializer = PydanticSerializer(Receipt)
    receipt = Receipt(amount=Decimal("12.50"), at=datetime(2026, 12, 1, tzinfo=UTC))
    stored = serializer.dump(receipt)
    assert stored == {"amount": "12.50", "at": "2026-12-01T00:00:00Z"}
    assert serializer.load(decode_text(encode_text(stored))) == receipt


def test_the_serializer_comes_from_the_return_annotation() -> None:
    def charge() -> Charge: ...
    def receipt() -> Receipt: ...
    def plain() -> dict[str, Any]: ...

    assert isinstance(serializer_for(charge), DataclassSerializer)
    assert isinstance(serializer_for(receipt), PydanticSerializer)
    assert isinstance(serializer_for(plain), StoredAsIs)


def test_the_record_cache_replays_tagged_results_with_their_types(store: Any) -> None:
    cache = RecordCache(16)
    cache.put(Record("idem#x", COMPLETED, "fp", 2_000_000_000, owner="w", result={"charged": Decimal("12.50")}))
    cached = cache.get("idem#x", 1_000)
    assert cached is not None and cached.result == {"charged": Decimal("12.50")}


# -- issue 23 item 3, at the boto3 boundary ------------------------------------------------------------


class Provider:
    """A payment provider outside DynamoDB: counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def charge(self) -> Decimal:
        self.calls += 1
        return Decimal("12.50")


def test_a_claim_first_sqs_consumer_returning_a_decimal_calls_the_provider_once(store: Any, calls: Any) -> None:
    provider = Provider()

    @idempotent_sqs(subscriber="billing", mode="claim_first", engine=Engine(store, cache=None))
    def consume(message: Message, txn: Transaction) -> dict[str, Decimal]:
        return {"charged": provider.charge()}

    event = {"Records": [sqs_record({"order": "o-1"})]}
    answers = [consume(event, DrillContext()) for _ in range(3)]  # three deliveries of one message
    assert answers == [{"batchItemFailures": []}] * 3
    assert provider.calls == 1
    record = from_item(store.client.scan(TableName=TABLE)["Items"][0])
    assert record.state == COMPLETED and record.result == {"charged": Decimal("12.50")}


def test_a_claim_first_consumer_whose_result_cannot_be_stored_is_parked_not_released(store: Any, calls: Any) -> None:
    """Refused before any commit; the claim becomes ``parked``; redeliveries fail without calling the provider."""
    provider = Provider()

    @idempotent_sqs(subscriber="billing", mode="claim_first", engine=Engine(store, cache=None))
    def consume(message: Message, txn: Transaction) -> Any:
        provider.charge()
        txn.put({"pk": "charge#o-1"}, table="orders")
        return {"receipt": object()}

    record = sqs_record({"order": "o-1"})
    calls.reset()
    first = consume({"Records": [record]}, DrillContext())
    assert first == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert calls.calls == {"PutItem": 1, "TransactWriteItems": 1}  # the claim, then parking it
    calls.reset()
    for _ in range(2):
        assert consume({"Records": [record]}, DrillContext())["batchItemFailures"] == [
            {"itemIdentifier": record["messageId"]}]
    assert calls.calls == {"PutItem": 2}  # each redelivery meets the parked record: one call, nothing runs
    assert provider.calls == 1
    items = store.client.scan(TableName=TABLE)["Items"]
    assert [item["st"]["S"] for item in items] == [PARKED]
    assert "r" not in items[0] and "le" not in items[0]
    assert store.client.scan(TableName="orders")["Items"] == []  # nothing of the run was committed


def test_an_atomic_consumer_whose_result_cannot_be_stored_commits_nothing(store: Any, calls: Any) -> None:
    @idempotent_sqs(subscriber="billing", engine=Engine(store, cache=None))
    def consume(message: Message, txn: Transaction) -> Any:
        txn.put({"pk": "charge#o-1"}, table="orders")
        return object()

    record = sqs_record({"order": "o-1"})
    calls.reset()
    assert consume({"Records": [record]}, DrillContext())["batchItemFailures"] == [
        {"itemIdentifier": record["messageId"]}]
    assert calls.total == 0
    assert store.client.scan(TableName=TABLE)["Items"] == []


def test_a_claim_first_task_returning_a_decimal_calls_the_provider_once(store: Any) -> None:
    provider = Provider()

    @idempotent_task(engine=Engine(store, cache=None))
    def charge(order: Any, context: Any, txn: Transaction) -> dict[str, Decimal]:
        return {"charged": provider.charge()}

    answers = [charge(payload("Charge", {"order": "o-1"}, retry=n), DrillContext()) for n in range(3)]
    assert answers == [{"charged": Decimal("12.50")}] * 3
    assert all(type(answer["charged"]) is Decimal for answer in answers)
    assert provider.calls == 1


def test_a_claim_first_task_whose_result_cannot_be_stored_is_never_run_again(store: Any) -> None:
    provider = Provider()

    @idempotent_task(engine=Engine(store, cache=None))
    def charge(order: Any, context: Any, txn: Transaction) -> Any:
        provider.charge()
        return {"receipt": object()}

    for n in range(3):
        with pytest.raises(UnstorableResultError):
            charge(payload("Charge", {"order": "o-1"}, retry=n), DrillContext())
    assert provider.calls == 1


def test_a_step_whose_result_cannot_be_stored_parks_the_task(store: Any) -> None:
    """A checkpoint is stored like a result: a step returning an object is refused and the task parked."""
    provider = Provider()

    @idempotent_task(engine=Engine(store, cache=None))
    def charge(order: Any, context: Any, txn: Transaction) -> Any:
        txn.step("charge", lambda: {"charged": provider.charge(), "handle": object()})
        return {}

    for n in range(2):
        with pytest.raises(UnstorableResultError):
            charge(payload("Charge", {"order": "o-1"}, retry=n), DrillContext())
    assert provider.calls == 1


def test_a_step_may_return_a_decimal(store: Any) -> None:
    provider = Provider()

    @idempotent_task(engine=Engine(store, cache=None))
    def charge(order: Any, context: Any, txn: Transaction) -> Any:
        charged = txn.step("charge", provider.charge)
        if order.get("fail"):
            raise RuntimeError("crash after the checkpoint")
        return {"charged": charged}

    with pytest.raises(RuntimeError):
        charge(payload("Charge", {"fail": True}), DrillContext())
    assert provider.calls == 1


def test_a_return_annotation_that_does_not_resolve_fails_at_decoration_time() -> None:
    from retrysafe.errors import ConfigurationError

    def charge() -> NotImported:  # type: ignore[name-defined]  # noqa: F821
        ...

    with pytest.raises(ConfigurationError, match="does not resolve"):
        serializer_for(charge)


def test_container_annotations_rebuild_tuples_and_the_dataclasses_inside() -> None:
    from retrysafe._results import AnnotationSerializer

    def pair() -> tuple[int, Charge]: ...
    def lines() -> list[Line2]: ...
    def names() -> list[str]: ...

    serializer = serializer_for(pair)
    assert isinstance(serializer, AnnotationSerializer)
    charge = Charge(Decimal("1.10"), datetime(2026, 12, 1, tzinfo=UTC))
    assert serializer.load(decode_text(encode_text(serializer.dump((7, charge))))) == (7, charge)
    assert serializer_for(lines).load(decode_text(encode_text([Line2("a")]))) == [Line2("a")]
    assert isinstance(serializer_for(names), StoredAsIs)
    assert decode_text(encode_text((1, Decimal(2)))) == [1, Decimal(2)]  # a tuple is stored as a list
    with pytest.raises(UnstorableResultError, match="not the declared tuple"):
        serializer.dump([7, charge])
