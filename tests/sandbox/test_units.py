"""Event filters, intrinsics and partial batch responses of the sandbox."""

from __future__ import annotations

import json

import pytest
from retrysafe_sandbox.assembly import Intrinsics
from retrysafe_sandbox.filters import parse_criteria, passes
from retrysafe_sandbox.sqs_poller import failed_ids
from retrysafe_sandbox.streams import failed_from

OUTBOX = {"Filters": [{"Pattern": json.dumps(
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {"kind": {"S": ["outbox"]}}}})}]}


def _record(event: str, kind: str | None) -> dict[str, object]:
    image = {"pk": {"S": "x"}, **({"kind": {"S": kind}} if kind else {})}
    return {"eventName": event, "dynamodb": {"NewImage": image}}


def test_outbox_filter_keeps_only_inserted_outbox_items() -> None:
    patterns = parse_criteria(OUTBOX)
    assert passes(_record("INSERT", "outbox"), patterns)
    assert not passes(_record("MODIFY", "outbox"), patterns)
    assert not passes(_record("INSERT", "record"), patterns)
    assert not passes(_record("INSERT", None), patterns)


@pytest.mark.parametrize(("condition", "value", "expected"), [
    ({"prefix": "ord"}, "order", True), ({"prefix": "ord"}, "invoice", False),
    ({"suffix": "er"}, "order", True), ({"exists": True}, "x", True), ({"exists": False}, "x", False),
    ({"anything-but": ["a", "b"]}, "c", True), ({"anything-but": "c"}, "c", False), (1, 1, True), (1, "1", False),
])
def test_conditions(condition: object, value: object, expected: bool) -> None:
    patterns = parse_criteria({"Filters": [{"Pattern": json.dumps({"k": [condition]})}]})
    assert passes({"k": value}, patterns) is expected


def test_exists_false_matches_an_absent_key_and_unsupported_conditions_are_refused() -> None:
    assert passes({}, parse_criteria({"Filters": [{"Pattern": json.dumps({"k": [{"exists": False}]})}]}))
    with pytest.raises(ValueError, match="unsupported"):
        parse_criteria({"Filters": [{"Pattern": json.dumps({"k": [{"numeric": [">", 1]}]})}]})


def test_intrinsics_resolve_to_provisioned_values() -> None:
    resolver = Intrinsics("Stack", refs={"Table": "stack-table", "Api": "api"},
                          attributes={("Queue", "Arn"): "arn:aws:sqs:eu-west-1:123456789012:q"},
                          unemulated={"Machine"})
    template = {"a": {"Fn::Join": ["/", [{"Ref": "Table"}, {"Fn::GetAtt": ["Queue", "Arn"]}]]},
                "b": {"Fn::Sub": "${Table}-${AWS::Region}-${Queue.Arn}-${!Literal}"},
                "c": {"Fn::Select": [1, {"Fn::Split": [":", {"Fn::GetAtt": "Queue.Arn"}]}]},
                "d": {"Fn::Sub": ["${x}!", {"x": {"Ref": "Api"}}]}, "e": {"Ref": "Machine"}}
    assert resolver.resolve(template) == {
        "a": "stack-table/arn:aws:sqs:eu-west-1:123456789012:q",
        "b": "stack-table-eu-west-1-arn:aws:sqs:eu-west-1:123456789012:q-${Literal}",
        "c": "aws", "d": "api!", "e": "sandbox-unemulated:Machine"}
    with pytest.raises(KeyError, match="Missing"):
        resolver.resolve({"Ref": "Missing"})


def test_sqs_partial_batch_response() -> None:
    batch = [{"messageId": "m1"}, {"messageId": "m2"}]
    assert failed_ids({"batchItemFailures": [{"itemIdentifier": "m2"}]}, batch) == {"m2"}
    assert failed_ids({"batchItemFailures": []}, batch) == set()
    assert failed_ids(None, batch) == set()
    assert failed_ids({"batchItemFailures": [{"itemIdentifier": "other"}]}, batch) is None


def test_stream_partial_batch_response_retries_from_the_lowest_failure() -> None:
    batch = [{"dynamodb": {"SequenceNumber": str(n)}} for n in (10, 11, 12)]
    assert failed_from({"batchItemFailures": [{"itemIdentifier": "12"}, {"itemIdentifier": "11"}]}, batch, False) == 1
    assert failed_from({"batchItemFailures": []}, batch, False) is None
    assert failed_from(None, batch, True) == 0
    assert failed_from({"batchItemFailures": [{"itemIdentifier": "99"}]}, batch, False) == 0
