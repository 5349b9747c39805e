"""Issue 31 items 4 and 10: what a first call stores either replays equal, with its types, in a
container that never saw it (the stored text decoded, not the warm cache), or is refused before anything
is committed (the provider then runs once, and nothing is written)."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from retrysafe import Engine, idempotent_function
from retrysafe._tagged import decode_text, encode_text
from retrysafe.errors import UnstorableResultError


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
        return idempotent_function(data_keyword_argument="order", namespace="payments", key="order_id",
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

    @idempotent_function(data_keyword_argument="order", namespace="payments", key="order_id",
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
