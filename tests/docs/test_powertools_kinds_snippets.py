"""The migration guide's ports of Powertools' response hook, SQS batch, output serializers, local cache and
exceptions examples, each run beside Powertools' original on moto: the same calls to both, the same
effects (charges) and answers, and where they differ the difference the guide describes."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from types import ModuleType
from typing import Any

import pytest
from retrysafe import DynamoStore, names
from retrysafe.testing._events import DrillContext, sqs_record

from examples.snippets.payments import Charge, payments


@pytest.fixture
def both(powertools_table: DynamoStore) -> Iterator[tuple[ModuleType, ModuleType]]:
    """Powertools' table and retrysafe's on moto; each snippet imported anew (a cold start on this moto)."""
    before = importlib.reload(importlib.import_module("examples.snippets.powertools_kinds_before"))
    after = importlib.reload(importlib.import_module("examples.snippets.powertools_kinds_after"))
    yield before, after


@pytest.fixture
def dynamodb_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every DynamoDB call any client makes (Powertools' and retrysafe's), by operation."""
    from botocore.client import BaseClient

    made: Counter[str] = Counter()
    original = BaseClient._make_api_call

    def counting(self: Any, operation: str, params: Any) -> Any:
        if self.meta.service_model.service_name == "dynamodb":
            made[operation] += 1
        return original(self, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", counting)
    return made


def charges() -> int:
    return payments.charge_count()


def test_the_response_hook_ports_and_adds_the_expiry_to_replays_only(
        both: tuple[ModuleType, ModuleType]) -> None:
    for module in both:
        start = charges()
        first = module.process_order(order={"id": "o-1", "amount": 5})
        assert set(first) == {"order", "charge"} and charges() == start + 1
        again = module.process_order(order={"id": "o-1", "amount": 5})
        assert {k: again[k] for k in first} == first and charges() == start + 1
        assert datetime.fromisoformat(again["x-idempotent-expiration"]).timestamp() > datetime.now().timestamp()
        assert module.process_order(order={"id": "o-1", "amount": 5}) == again  # the hook's change is not stored
    powertools = both[0].process_order(order={"id": "o-1", "amount": 5})["x-idempotent-key"]
    retrysafe = both[1].process_order(order={"id": "o-1", "amount": 5})["x-idempotent-key"]
    assert "examples.snippets.powertools_kinds_before.process_order#" in powertools
    assert retrysafe.startswith(names.RECORD_PREFIX)  # both a hash: neither is the raw order


def redelivered(event: dict[str, Any]) -> dict[str, Any]:
    """``event``'s messages delivered again, as SQS does: a new receipt handle, the receive count up."""
    return {"Records": [{**record, "receiptHandle": "another",
                         "attributes": {**record["attributes"], "ApproximateReceiveCount": "2"}}
                        for record in event["Records"]]}


def test_the_sqs_batch_ports_to_idempotent_sqs(both: tuple[ModuleType, ModuleType]) -> None:
    function = importlib.reload(importlib.import_module("examples.snippets.powertools_batch_function"))
    for lambda_handler in (both[0].lambda_handler, both[1].record_handler, function.lambda_handler):
        start = charges()
        event = {"Records": [sqs_record({"n": 1}), sqs_record({"n": 2})]}
        assert lambda_handler(event, DrillContext()) == {"batchItemFailures": []} and charges() == start + 2
        assert lambda_handler(redelivered(event), DrillContext()) == {"batchItemFailures": []}
        assert charges() == start + 2


def test_a_redelivered_record_replays_and_another_body_under_its_id_is_refused(
        both: tuple[ModuleType, ModuleType]) -> None:
    """Why the closest port needs no ``fingerprint=``: the default fingerprint of an SQS record leaves out the
    receipt handle and receive count that a redelivery changes, and keeps the body."""
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from retrysafe import idempotent_function
    from retrysafe.errors import KeyReuseMismatchError

    runs: list[str] = []
    whole = idempotent_function(data_keyword_argument="record", key="messageId")(
        lambda record: runs.append(record.body) or len(runs))
    event = {"Records": [sqs_record({"n": 3})]}
    assert whole(record=SQSRecord(event["Records"][0])) == 1
    assert whole(record=SQSRecord(redelivered(event)["Records"][0])) == 1 and len(runs) == 1
    changed = {**event["Records"][0], "body": '{"n": 4}'}
    with pytest.raises(KeyReuseMismatchError):
        whole(record=SQSRecord(changed))
    assert len(runs) == 1


@pytest.mark.parametrize("function", ["process_dataclass_order", "process_pydantic_order"])
def test_output_serializers_port_to_the_return_annotation(both: tuple[ModuleType, ModuleType], function: str) -> None:
    for module in both:
        start = charges()
        process = getattr(module, function)
        returns = module.OrderOutput if function == "process_dataclass_order" else module.OrderModel
        first = process(order={"order_id": 7, "amount": 3})
        again = process(order={"order_id": 7, "amount": 3})
        assert type(first) is type(again) is returns and again == first and charges() == start + 1


def test_the_local_cache_ports_to_the_record_cache(both: tuple[ModuleType, ModuleType],
                                                   dynamodb_calls: Counter[str]) -> None:
    for module in both:
        start = charges()
        first = module.cached_handler({"body": "order-9"}, DrillContext())
        dynamodb_calls.clear()
        again = module.cached_handler({"body": "order-9"}, DrillContext())
        assert again == first and charges() == start + 1
        assert sum(dynamodb_calls.values()) == 0  # answered from this container's memory


def test_exceptions_port_to_retrysafe_errors(both: tuple[ModuleType, ModuleType],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for module in both:
        start = charges()
        with monkeypatch.context() as patch:  # the service fails inside the function: no record kept
            patch.setattr(payments, "charge", _raising)
            with pytest.raises(ConnectionError):
                module.exceptions_handler({"data": {"amount": 1}}, DrillContext())
        with pytest.raises(RuntimeError):  # fails after the function returned: its record stays
            module.exceptions_handler({"data": {"amount": 1}, "fail_after": True}, DrillContext())
        assert charges() == start + 1
        retry = module.exceptions_handler({"data": {"amount": 1}}, DrillContext())
        assert retry["statusCode"] == 200 and charges() == start + 1  # replayed

        nested: list[dict[str, Any]] = []
        with monkeypatch.context() as patch:
            patch.setattr(payments, "charge", _concurrent(module, nested, payments.charge))
            assert module.exceptions_handler({"data": {"amount": 2}}, DrillContext())["statusCode"] == 200
        assert nested == [{"statusCode": 409}]


def _concurrent(module: ModuleType, nested: list[dict[str, Any]], charge: Any) -> Any:
    """A charge during which the same data arrives again (a concurrent duplicate), answered into ``nested``."""

    def charging(**arguments: Any) -> Charge:
        nested.append(module.exceptions_handler({"data": {"amount": 2}}, DrillContext()))
        return charge(**arguments)

    return charging


def _raising(**arguments: Any) -> Charge:
    raise ConnectionError("the service did not answer")
