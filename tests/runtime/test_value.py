"""Every ``Value`` of the runtime is immutable, hashable, and of equal hash when equal."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from datetime import UTC, datetime
from typing import Any

import pytest
import retrysafe
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from hypothesis import given
from hypothesis import strategies as st
from retrysafe import names
from retrysafe._config import Mode, Retention
from retrysafe._cutover import HASH_FUNCTIONS, PowertoolsCutover
from retrysafe._engine import Adopted, Completion, Intent, Outcome, _Answered
from retrysafe._keys import Scope
from retrysafe._record import Record
from retrysafe._regions import HomeRegions
from retrysafe._replay import ReplayInfo
from retrysafe._store import ClaimResult
from retrysafe._value import Value
from retrysafe.http._core import HttpAnswer, StoredResponse
from retrysafe.http._problem import Problem
from retrysafe.http._request import HttpRequest
from retrysafe.outbox import OutboxEvent, OutboxMessage
from retrysafe.outbox._targets import Refusal
from retrysafe.sqs import Message
from retrysafe.stepfunctions import TaskRequest
from retrysafe.streams import DynamoDBChange, KinesisMessage

text = st.text(max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
headers = st.dictionaries(text, text, max_size=3)
scopes = st.builds(Scope, text, text, text, adapter=st.sampled_from(names.ADAPTERS))
retentions = st.builds(Retention, st.integers(86_400, 10**8), st.floats(0.1, 900))
records = st.builds(Record, text, st.sampled_from(["pending", "completed"]), text, st.integers(0, 2**40),
                    st.integers(0, 2**40), text, st.none() | text, st.none() | st.integers(0, 2**40), json_values,
                    st.none() | text, st.dictionaries(text, json_values, max_size=2), st.none() | text)
responses = st.builds(StoredResponse, st.integers(100, 599), headers, text, st.booleans())
events = st.fixed_dictionaries({"version": st.just("2.0"), "headers": headers, "body": text})
replays = st.builds(ReplayInfo, st.none() | text, st.none() | st.integers(0, 2**40),
                    st.none() | st.floats(0, 2e9), st.sampled_from(["retrysafe", "powertools"]))
sqs_records = st.builds(lambda body, key: SQSRecord({"messageId": key, "body": body, "messageAttributes": {}}),
                        text, text)

#: How to draw each Value class of the runtime; a new Value class must be added here.
SAMPLES: dict[type[Value], st.SearchStrategy[Value]] = {
    Scope: scopes,
    Retention: retentions,
    Record: records,
    Intent: st.builds(Intent, scopes, text, st.sampled_from(list(Mode)), retentions, st.none() | st.floats(1, 900),
                      st.floats(0, 10)),
    Completion: st.builds(Completion, json_values, st.booleans(), st.none() | text, st.none() | st.integers()),
    Outcome: st.builds(Outcome, json_values, st.booleans(), st.booleans(), st.none() | replays),
    ClaimResult: st.builds(ClaimResult, records, st.none() | records),
    StoredResponse: responses,
    HttpAnswer: st.builds(HttpAnswer, responses, st.booleans(), json_values, replay=st.none() | replays),
    ReplayInfo: replays,
    Problem: st.builds(Problem, st.integers(400, 599), text, text, text, headers),
    HttpRequest: st.builds(HttpRequest, events, st.sampled_from(["1.0", "2.0"]), text, text, text, headers,
                           st.dictionaries(text, st.lists(text, max_size=2).map(tuple), max_size=2),
                           st.binary(max_size=8), st.none() | text, st.booleans()),
    OutboxEvent: st.builds(OutboxEvent, text, text, text, text, json_values,
                           st.datetimes(timezones=st.just(UTC)), st.none() | st.integers(0, 100)),
    OutboxMessage: st.builds(OutboxMessage, text, text, text, text, json_values, text, st.none() | st.integers()),
    Refusal: st.builds(Refusal, text, st.booleans()),
    Message: st.builds(Message, sqs_records, text, json_values),
    KinesisMessage: st.builds(KinesisMessage, st.none(), text, st.binary(max_size=8), json_values),
    DynamoDBChange: st.builds(DynamoDBChange, st.none(), text),
    TaskRequest: st.builds(TaskRequest, text, text, json_values, st.none() | text, st.none() | text),
    HomeRegions: st.builds(HomeRegions, st.text(min_size=1, max_size=8),
                           tenants=st.dictionaries(text, st.text(min_size=1, max_size=8), max_size=2)),
    Adopted: st.builds(Adopted, json_values, st.booleans(), st.none() | st.integers()),
    _Answered: st.builds(_Answered, json_values),
    PowertoolsCutover: st.builds(PowertoolsCutover, function_name=st.text(min_size=1, max_size=8),
                                 event_key_jmespath=text, hash_function=st.sampled_from(sorted(HASH_FUNCTIONS)),
                                 key_prefix=st.none() | text, lambda_function_name=st.none() | text,
                                 table_name=st.text(min_size=1, max_size=8),
                                 until=st.floats(0, 2e9), sort_key_attr=st.none() | text),
}


def _value_classes() -> set[type[Value]]:
    found: set[type[Value]] = set()
    for info in pkgutil.walk_packages(retrysafe.__path__, "retrysafe."):
        module = importlib.import_module(info.name)
        found |= {value for value in vars(module).values()
                  if inspect.isclass(value) and issubclass(value, Value) and value is not Value}
    return found


def _copy(value: Any) -> Any:
    """An equal deep copy of ``value`` with every dict's insertion order reversed."""
    if isinstance(value, Value):
        return _rebuild(value)
    if isinstance(value, SQSRecord):
        return SQSRecord(_copy(value.raw_event))
    if isinstance(value, dict):
        return {key: _copy(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_copy(item) for item in value)
    return value


def _rebuild(value: Value) -> Value:
    """A new instance of the same class from copies of the original constructor arguments."""
    cls = type(value)
    parameters = inspect.signature(cls).parameters
    arguments = {name: _copy(getattr(value, name)) for name in parameters if hasattr(value, name)}
    if cls is HttpRequest:
        arguments["raw_query"] = value._query_form == b"r"
    return cls(**arguments)


def test_every_value_class_has_a_sample() -> None:
    assert _value_classes() == set(SAMPLES)


@pytest.mark.parametrize("cls", sorted(SAMPLES, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_values_are_hashable_and_equal_values_hash_equal(cls: type[Value]) -> None:
    @given(SAMPLES[cls])
    def check(value: Value) -> None:
        copy = _rebuild(value)
        assert copy is not value
        assert copy == value
        assert hash(copy) == hash(value)
        assert {value: 1}[copy] == 1

    check()


@pytest.mark.parametrize("cls", sorted(SAMPLES, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_attributes_cannot_be_set_or_deleted(cls: type[Value]) -> None:
    @given(SAMPLES[cls])
    def check(value: Value) -> None:
        for name in value.__slots__:
            with pytest.raises(AttributeError, match="immutable"):
                setattr(value, name, None)
            with pytest.raises(AttributeError, match="immutable"):
                delattr(value, name)
        with pytest.raises(AttributeError):
            value.undeclared = 1  # type: ignore[attr-defined]

    check()


def test_a_scope_cannot_be_changed_under_its_record_id() -> None:
    scope = Scope("tenant", "CreateOrder", "key-1", adapter=names.HTTP_ADAPTER)
    record_id = scope.record_id
    with pytest.raises(AttributeError):
        scope.key = "key-2"  # type: ignore[misc]
    assert scope.record_id == record_id == Scope("tenant", "CreateOrder", "key-1", adapter=names.HTTP_ADAPTER).record_id
    assert Scope("tenant", "CreateOrder", "key-2", adapter=names.HTTP_ADAPTER).record_id != record_id


def test_values_of_different_classes_or_fields_differ() -> None:
    assert Outcome(1, True, True) != Completion(1, True)
    assert Scope("a", "b", "c", adapter=names.HTTP_ADAPTER) != Scope("a", "b", "d", adapter=names.HTTP_ADAPTER)
    assert StoredResponse(200, {"a": "1"}) != StoredResponse(200, {"a": "2"})


def test_a_field_of_an_unhashable_foreign_type_says_so() -> None:
    class Opaque:
        __hash__ = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="Opaque"):
        hash(Completion(Opaque()))


def test_lazily_computed_caches_stay_out_of_equality() -> None:
    event = OutboxEvent("e-1", "OrderPlaced", "order", "o-1", {"id": 1}, datetime(2026, 1, 1, tzinfo=UTC))
    fresh = OutboxEvent("e-1", "OrderPlaced", "order", "o-1", {"id": 1}, datetime(2026, 1, 1, tzinfo=UTC))
    assert event.payload_text == '{"id":1}'
    assert event == fresh and hash(event) == hash(fresh)

