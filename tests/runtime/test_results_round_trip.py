"""Issue 31 items 4, 5, 6 and 10: what a first call stores either replays equal, with its types, in a
container that never saw it (the stored text decoded, not the warm cache), or is refused before anything
is committed (the provider then runs once, and nothing is written)."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from decimal import Decimal
from typing import Any, Optional, Union

import pytest
from pydantic import BaseModel
from retrysafe import Engine, Transaction, idempotent, idempotent_function
from retrysafe._tagged import decode_text, encode_text
from retrysafe.errors import ConfigurationError, UnstorableResultError
from retrysafe.testing._events import DrillContext

from tests.runtime.generic.events import EVENTBRIDGE


@dataclass(frozen=True)
class Label:
    """A frozen dataclass (hashable)."""

    carrier: str
    code: str


@dataclass
class Parcel:
    """A dataclass with a field computed in ``__post_init__`` and an optional nested dataclass."""

    weight_grams: int
    label: Label | None = None
    tracking: str = field(init=False)

    def __post_init__(self) -> None:
        self.tracking = f"T-{self.weight_grams}"


@dataclass
class Receipt:
    """What a provider answers."""

    receipt_id: str
    amount: Decimal


class Provider:
    """Counts its calls, as a payment provider's ledger would."""

    def __init__(self) -> None:
        self.calls = 0

    def call(self, result: Any) -> Any:
        self.calls += 1
        return result


def _twice(store: Any, returns: Any, annotation: Any, order: dict[str, Any]) -> tuple[Any, Any, Provider]:
    """A first call in one container and the same call in another (a fresh engine, no cache)."""
    provider = Provider()

    def make() -> Any:
        def charge(order: dict[str, Any]) -> Any:
            return provider.call(returns)

        charge.__annotations__["return"] = annotation
        return idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id",
                                   engine=Engine(store, cache=None))(charge)

    first = make()(order=order)
    replay = make()(order=order)
    return first, replay, provider


def test_a_frozen_dataclass_round_trips(store: Any) -> None:
    _first, replay, provider = _twice(store, Label("ups", "z9"), Label, {"order_id": "o-3"})
    assert replay == Label("ups", "z9") and type(replay) is Label and provider.calls == 1


def test_a_set_of_tuples_round_trips(store: Any) -> None:
    value = {"slots": {("mon", 9), ("tue", 10)}, "frozen": frozenset({(1, (2, 3))})}
    _first, replay, provider = _twice(store, value, dict, {"order_id": "o-4"})
    assert replay == value and provider.calls == 1
    assert all(type(item) is tuple for item in replay["slots"])


def test_a_set_holding_what_would_replay_unhashable_is_refused_before_the_commit() -> None:
    with pytest.raises(UnstorableResultError, match="set"):
        encode_text({"labels": {Label("dhl", "x1")}})  # a dataclass inside a set replays as a dict


@pytest.mark.parametrize("value", [{17: 3}, {1: "a", "1": "b"}, {"nested": [{None: 1}]}, {(1, 2): "t"}],
                         ids=["int-name", "colliding-names", "nested-none-name", "tuple-name"])
def test_a_dict_with_names_that_are_not_text_is_refused_before_anything_is_committed(
        store: Any, value: Any) -> None:
    provider = Provider()

    @idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id",
                         engine=Engine(store, cache=None))
    def charge(order: dict[str, Any]) -> Any:
        return provider.call(value)

    with pytest.raises(UnstorableResultError, match="member name"):
        charge(order={"order_id": "o-5"})
    assert provider.calls == 1
    with pytest.raises(UnstorableResultError):  # the claim is parked: the retry does not call the provider
        charge(order={"order_id": "o-5"})
    assert provider.calls == 1


def test_text_names_still_take_the_fast_path() -> None:
    assert encode_text({"a": 1, "b": [{"c": None}]}) == '{"a":1,"b":[{"c":null}]}'
    assert decode_text(encode_text({"a": {1, 2}})) == {"a": {1, 2}}


# -- issue 31 item 5: unions with None ---------------------------------------------------------------------


class Quote(BaseModel):
    """A pydantic model a provider answers."""

    quote_id: str
    amount: Decimal


@dataclass
class Shipment:
    """Nested dataclasses under Optional, list and dict annotations."""

    spare: Optional[Label]  # noqa: UP045  # the typing spelling is what item 5 was reported with
    labels: list[Label]
    by_parcel: dict[str, Label | None]
    backup: list[Label] | None = None


@pytest.mark.parametrize("annotation", [Optional[Receipt], Receipt | None, Union[None, Receipt]],  # noqa: UP007,UP045
                         ids=["Optional", "pipe", "Union"])
@pytest.mark.parametrize("returns", [Receipt("r-1", Decimal("12.50")), None], ids=["receipt", "none"])
def test_an_optional_dataclass_result_round_trips(store: Any, annotation: Any, returns: Any) -> None:
    first, replay, provider = _twice(store, returns, annotation, {"order_id": "o-6"})
    assert replay == first == returns and type(replay) is type(returns) and provider.calls == 1


@pytest.mark.parametrize("returns", [Quote(quote_id="q-1", amount=Decimal("3.10")), None], ids=["quote", "none"])
def test_an_optional_pydantic_result_round_trips(store: Any, returns: Any) -> None:
    _first, replay, provider = _twice(store, returns, Quote | None, {"order_id": "o-7"})
    assert replay == returns and type(replay) is type(returns) and provider.calls == 1


def test_an_event_handler_annotated_optional_replays_its_dataclass(store: Any) -> None:
    runs: list[str] = []

    def make() -> Any:
        @idempotent(subscriber="fulfilment", key="detail.order_id", mode="claim_first",
                    engine=Engine(store, cache=None))
        def ship(event: dict[str, Any], context: Any, txn: Transaction) -> Receipt | None:
            runs.append(event["id"])
            return Receipt(event["detail"]["order_id"], Decimal("12.50"))
        return ship

    assert make()(EVENTBRIDGE, DrillContext()) == make()(EVENTBRIDGE, DrillContext())
    replay = make()(EVENTBRIDGE, DrillContext())
    assert type(replay) is Receipt and replay == Receipt("o-42", Decimal("12.50")) and len(runs) == 1


@pytest.mark.parametrize("parcel", [Parcel(500, Label("ups", "z9")), Parcel(200)], ids=["label", "no-label"])
def test_a_dataclass_with_an_optional_nested_dataclass_and_a_computed_field_round_trips(
        store: Any, parcel: Parcel) -> None:
    _first, replay, provider = _twice(store, parcel, Parcel, {"order_id": "o-8"})
    assert replay == parcel and type(replay.label) is type(parcel.label) and provider.calls == 1
    assert replay.tracking == parcel.tracking


def test_nested_optional_list_and_dict_fields_rebuild_their_class(store: Any) -> None:
    shipment = Shipment(Label("dhl", "a1"), [Label("ups", "b2")], {"p-1": Label("gls", "c3"), "p-2": None},
                        backup=[Label("dpd", "d4")])
    _first, replay, provider = _twice(store, shipment, Shipment, {"order_id": "o-9"})
    assert replay == shipment and provider.calls == 1
    assert type(replay.spare) is Label and type(replay.labels[0]) is Label
    assert type(replay.by_parcel["p-1"]) is Label and replay.by_parcel["p-2"] is None
    assert replay.backup is not None and type(replay.backup[0]) is Label


@dataclass
class Either:
    """A field that could replay as either of two classes."""

    choice: Label | Receipt


@pytest.mark.parametrize("annotation", [Receipt | Label, Optional[Union[Quote, Receipt]], Either,  # noqa: UP007,UP045
                                        list[Label | Receipt]], ids=["pipe", "optional-union", "field", "list"])
def test_a_union_of_two_classes_is_refused_when_decorating(annotation: Any) -> None:
    def charge(order: dict[str, Any]) -> Any: ...

    charge.__annotations__["return"] = annotation
    with pytest.raises(ConfigurationError, match="a union of"):
        idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id")(charge)


def test_a_union_of_types_stored_as_they_are_needs_nothing_rebuilt(store: Any) -> None:
    _first, replay, provider = _twice(store, "r-1", int | str | None, {"order_id": "o-10"})
    assert replay == "r-1" and provider.calls == 1


# -- issue 31 item 6: frozen dataclasses and fields that __init__ does not take ----------------------------


@dataclass(frozen=True)
class Stamp:
    """Frozen, with a field computed in ``__post_init__``."""

    value: Decimal
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", f"d-{self.value}")


BUILT: list[int] = []


@dataclass
class Ticket:
    """A ``__post_init__`` whose computed field differs on every construction."""

    number: int
    serial: int = field(init=False)

    def __post_init__(self) -> None:
        BUILT.append(self.number)
        self.serial = len(BUILT)


def test_a_frozen_dataclass_with_a_computed_field_round_trips(store: Any) -> None:
    _first, replay, provider = _twice(store, Stamp(Decimal("1.20")), Stamp, {"order_id": "o-11"})
    assert replay == Stamp(Decimal("1.20")) and replay.digest == "d-1.20" and provider.calls == 1


def test_a_replay_runs_post_init_but_keeps_the_stored_computed_fields(store: Any) -> None:
    BUILT.clear()
    first, replay, provider = _twice(store, Ticket(7), Ticket, {"order_id": "o-12"})
    assert first.serial == 1 and replay.serial == 1 and replay == first and provider.calls == 1
    assert BUILT == [7, 7]  # the replay built its instance with __init__: __post_init__ ran again


@dataclass
class Scaled:
    """An ``InitVar`` without a default: the stored fields cannot call ``__init__``."""

    amount: Decimal
    factor: InitVar[int]

    def __post_init__(self, factor: int) -> None:
        self.amount *= factor


@pytest.mark.parametrize("annotation", [Scaled, Scaled | None, list[Scaled]], ids=["plain", "optional", "list"])
def test_a_dataclass_that_its_stored_fields_cannot_build_is_refused_when_decorating(annotation: Any) -> None:
    def charge(order: dict[str, Any]) -> Any: ...

    charge.__annotations__["return"] = annotation
    with pytest.raises(ConfigurationError, match="InitVar"):
        idempotent_function(data_keyword_argument="order", subscriber="payments", key="order_id")(charge)
