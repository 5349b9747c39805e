"""A small in-memory DynamoDB that answers botocore at the HTTP layer, for benchmarks.

Registered as a ``before-send`` handler, it receives the request botocore built, validated and
signed, and returns an ``AWSResponse`` carrying DynamoDB's JSON wire format (``x-amz-crc32``
included), which botocore then parses as it would a real reply. So both libraries pay botocore's
whole client-side cost, and nothing else: no sockets, no server.

Supported: ``PutItem``, ``UpdateItem`` (``SET path = operand`` and ``REMOVE``), ``DeleteItem``,
``GetItem``, ``TransactWriteItems`` and ``DescribeTable``, with condition expressions built from
``attribute_exists``/``attribute_not_exists``, comparisons, ``AND``/``OR``/``NOT`` and parentheses,
``ReturnValues=ALL_OLD`` and ``ReturnValuesOnConditionCheckFailure=ALL_OLD``. Anything else raises,
so a benchmark cannot silently measure a wrong answer.

Every write is also priced by DynamoDB's capacity rules (:class:`Usage`), from the stored item sizes.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import zlib
from decimal import Decimal
from typing import Any

Item = dict[str, dict[str, Any]]

_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_TOKEN = re.compile(r"\s*(<>|<=|>=|[=<>(),]|[#:]?[A-Za-z_][A-Za-z0-9_.\-]*)")
#: Bytes DynamoDB adds to each global secondary index entry.
GSI_ENTRY_OVERHEAD = 100


class Table:
    """A table's key attribute and its global secondary indexes (``name -> (hash, range)``, projection ALL)."""

    def __init__(self, key: str, indexes: dict[str, tuple[str, str | None]] | None = None) -> None:
        self.key = key
        self.indexes = indexes or {}
        self.items: dict[str, Item] = {}


class Usage:
    """Capacity consumed by calls, by DynamoDB's rules.

    Writes: one unit per started KiB of the larger of the old and the new item (a failed condition
    still consumes it); twice that inside ``TransactWriteItems``, ``ConditionCheck`` included. A
    cancelled transaction is counted as if its items were written (an upper bound: AWS does not document
    the exact charge; ``wcu_lower_bound`` charges only the items whose condition failed). A global secondary index write costs one unit per started KiB of the entry
    (projected attributes + 100 bytes), not doubled. Reads: one unit per started 4 KiB, half for an
    eventually consistent read.
    """

    def __init__(self) -> None:
        self.wcu = 0.0
        self.rcu = 0.0
        self.gsi_wcu = 0.0
        #: Units of the items of cancelled transactions whose own condition held (the upper bound's share).
        self.cancelled_bystanders = 0.0
        self.calls: list[str] = []

    def as_dict(self) -> dict[str, Any]:
        """The totals."""
        return {"table_wcu": self.wcu, "gsi_wcu": self.gsi_wcu, "wcu": self.wcu + self.gsi_wcu, "rcu": self.rcu,
                "wcu_lower_bound": self.wcu + self.gsi_wcu - self.cancelled_bystanders, "calls": list(self.calls)}


class DynamoModel:
    """The tables, and a botocore ``before-send`` handler answering for them."""

    def __init__(self, tables: dict[str, Table]) -> None:
        self.tables = tables
        self.usage = Usage()
        #: Time spent answering, to subtract from what the caller measured (thread CPU and wall clock).
        self.cpu_ns = 0
        self.wall_ns = 0
        self._lock = threading.Lock()

    def install(self, client: Any) -> Any:
        """Answer ``client``'s DynamoDB calls from this model; returns the client."""
        client.meta.events.register("before-send.dynamodb", self.before_send)
        return client

    def reset_usage(self) -> Usage:
        """Start a new usage count; returns the finished one."""
        finished, self.usage = self.usage, Usage()
        return finished

    # -- the HTTP layer ------------------------------------------------------
    def before_send(self, request: Any, **_: Any) -> Any:
        """botocore's ``before-send`` hook: the reply to the prepared request."""
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        try:
            return self._answer(request)
        finally:
            self.cpu_ns += time.thread_time_ns() - c0
            self.wall_ns += time.perf_counter_ns() - w0

    def _answer(self, request: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        target = request.headers["X-Amz-Target"]
        status, headers, raw = self.answer(target.decode() if isinstance(target, bytes) else target, request.body)
        return AWSResponse(request.url, status, headers, _Raw(raw))

    def answer(self, target: str, body: bytes | str | None) -> tuple[int, dict[str, str], bytes]:
        """DynamoDB's reply to one request (``X-Amz-Target`` and JSON body): status, headers and body bytes."""
        operation = target.split(".", 1)[1]
        request = json.loads(body or b"{}")
        with self._lock:
            self.usage.calls.append(operation)
            try:
                status, payload = 200, getattr(self, "_" + operation)(request)
            except _Failure as failure:
                status, payload = 400, failure.payload
        raw = json.dumps(payload, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "Content-Length": str(len(raw)),
                   "x-amzn-RequestId": "MODEL", "x-amz-crc32": str(zlib.crc32(raw) & 0xFFFFFFFF)}
        return status, headers, raw

    # -- operations ------------------------------------------------------------
    def _PutItem(self, body: dict[str, Any]) -> dict[str, Any]:
        table, key = self._table_key(body["TableName"], body["Item"])
        old = table.items.get(key)
        new = body["Item"]
        if not self._condition(body, old):
            self._charge_write(table, old, new, transactional=False, applied=False)
            raise _conditional_failure(body, old)
        self._charge_write(table, old, new, transactional=False, applied=True)
        table.items[key] = new
        return {"Attributes": old} if old and body.get("ReturnValues") == "ALL_OLD" else {}

    def _UpdateItem(self, body: dict[str, Any]) -> dict[str, Any]:
        table, key = self._table_key(body["TableName"], body["Key"])
        old = table.items.get(key)
        new = _apply_update(dict(old or body["Key"]), body)
        if not self._condition(body, old):
            self._charge_write(table, old, new, transactional=False, applied=False)
            raise _conditional_failure(body, old)
        self._charge_write(table, old, new, transactional=False, applied=True)
        table.items[key] = new
        return {"Attributes": old} if old and body.get("ReturnValues") == "ALL_OLD" else {}

    def _DeleteItem(self, body: dict[str, Any]) -> dict[str, Any]:
        table, key = self._table_key(body["TableName"], body["Key"])
        old = table.items.get(key)
        if not self._condition(body, old):
            self._charge_write(table, old, None, transactional=False, applied=False)
            raise _conditional_failure(body, old)
        self._charge_write(table, old, None, transactional=False, applied=True)
        table.items.pop(key, None)
        return {"Attributes": old} if old and body.get("ReturnValues") == "ALL_OLD" else {}

    def _GetItem(self, body: dict[str, Any]) -> dict[str, Any]:
        table, key = self._table_key(body["TableName"], body["Key"])
        item = table.items.get(key)
        units = max(1, math.ceil(item_size(item) / 4096)) if item else 1
        self.usage.rcu += units if body.get("ConsistentRead") else units / 2
        return {"Item": item} if item else {}

    def _DescribeTable(self, body: dict[str, Any]) -> dict[str, Any]:
        table = self.tables[body["TableName"]]
        return {"Table": {"TableName": body["TableName"], "TableStatus": "ACTIVE",
                          "KeySchema": [{"AttributeName": table.key, "KeyType": "HASH"}]}}

    def _TransactWriteItems(self, body: dict[str, Any]) -> dict[str, Any]:
        plans = []
        seen = set()
        for action in body["TransactItems"]:
            (kind, spec), = action.items()
            table, key = self._table_key(spec["TableName"], spec["Item"] if kind == "Put" else spec["Key"])
            if (spec["TableName"], key) in seen:
                raise _Failure({"__type": _PREFIX + "ValidationException",
                                "message": "Transaction request cannot include multiple operations on one item"})
            seen.add((spec["TableName"], key))
            old = table.items.get(key)
            new: Item | None = old
            if kind == "Put":
                new = spec["Item"]
            elif kind == "Update":
                new = _apply_update(dict(old or spec["Key"]), spec)
            elif kind == "Delete":
                new = None
            plans.append((kind, spec, table, key, old, new))
        reasons: list[dict[str, Any]] = []
        for kind, spec, table, key, old, new in plans:
            if self._condition(spec, old):
                reasons.append({"Code": "None"})
            else:
                reason: dict[str, Any] = {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
                if old is not None and spec.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD":
                    reason["Item"] = old
                reasons.append(reason)
        cancelled = any(r["Code"] != "None" for r in reasons)
        for (kind, _, table, _, old, new), reason in zip(plans, reasons, strict=True):
            before = self.usage.wcu
            self._charge_write(table, old, new, transactional=True, applied=not cancelled and kind != "ConditionCheck")
            if cancelled and reason["Code"] == "None":
                self.usage.cancelled_bystanders += self.usage.wcu - before
        if cancelled:
            codes = ", ".join(r["Code"] for r in reasons)
            raise _Failure({"__type": _PREFIX + "TransactionCanceledException",
                            "Message": f"Transaction cancelled, please refer cancellation reasons for specific "
                                       f"reasons [{codes}]", "CancellationReasons": reasons})
        for kind, _, table, key, _, new in plans:
            if kind == "Delete":
                table.items.pop(key, None)
            elif kind != "ConditionCheck":
                table.items[key] = new
        return {}

    # -- helpers -----------------------------------------------------------------
    def _table_key(self, name: str, item: Item) -> tuple[Table, str]:
        table = self.tables.get(name)
        if table is None:
            raise _Failure({"__type": _PREFIX + "ResourceNotFoundException", "message": "Requested resource not found"})
        return table, json.dumps(item[table.key], sort_keys=True)

    def _condition(self, spec: dict[str, Any], item: Item | None) -> bool:
        expression = spec.get("ConditionExpression")
        if not expression:
            return True
        parser = _Parser(expression, spec.get("ExpressionAttributeNames", {}), spec.get("ExpressionAttributeValues", {}))
        return parser.evaluate(item or {})

    def _charge_write(self, table: Table, old: Item | None, new: Item | None, *, transactional: bool,
                      applied: bool) -> None:
        size = max(item_size(old) if old else 0, item_size(new) if new else 0)
        self.usage.wcu += max(1, math.ceil(size / 1024)) * (2 if transactional else 1)
        if not applied:
            return
        for hash_key, range_key in table.indexes.values():
            before = _index_entry_size(old, table.key, hash_key, range_key)
            after = _index_entry_size(new, table.key, hash_key, range_key)
            moved = before and after and any(old[a] != new[a] for a in (hash_key, range_key) if a)  # type: ignore[index]
            for entry in ((before, after) if moved else (max(before, after),)):
                if entry:
                    self.usage.gsi_wcu += math.ceil(entry / 1024)


def _index_entry_size(item: Item | None, table_key: str, hash_key: str, range_key: str | None) -> int:
    if not item or hash_key not in item or (range_key and range_key not in item):
        return 0
    return item_size(item) + GSI_ENTRY_OVERHEAD


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


class _Failure(Exception):
    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload


def _conditional_failure(spec: dict[str, Any], old: Item | None) -> _Failure:
    payload: dict[str, Any] = {"__type": _PREFIX + "ConditionalCheckFailedException",
                               "message": "The conditional request failed"}
    if old is not None and spec.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD":
        payload["Item"] = old
    return _Failure(payload)


def _apply_update(item: Item, spec: dict[str, Any]) -> Item:
    names = spec.get("ExpressionAttributeNames", {})
    values = spec.get("ExpressionAttributeValues", {})
    expression = spec["UpdateExpression"]
    for section, body in re.findall(r"(SET|REMOVE)\s+(.*?)(?=\s+(?:SET|REMOVE)\s|$)", expression, re.DOTALL):
        for clause in (c.strip() for c in body.split(",")):
            if section == "SET":
                target, _, operand = (p.strip() for p in clause.partition("="))
                if not operand.startswith(":") or target.startswith(":"):
                    raise NotImplementedError(f"the model supports only SET path = :value, not {clause!r}")
                item[names.get(target, target)] = values[operand]
            else:
                item.pop(names.get(clause, clause), None)
    return item


class _Parser:
    """Recursive descent over the condition grammar the libraries use."""

    def __init__(self, text: str, names: dict[str, str], values: dict[str, Any]) -> None:
        self.tokens = _TOKEN.findall(text)
        if "".join(self.tokens) != re.sub(r"\s+", "", text):
            raise NotImplementedError(f"condition not supported by the model: {text!r}")
        self.names = names
        self.values = values
        self.pos = 0

    def evaluate(self, item: Item) -> bool:
        self.item = item
        result = self._or()
        if self.pos != len(self.tokens):
            raise NotImplementedError(f"trailing tokens in condition: {self.tokens[self.pos:]}")
        return result

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self) -> str:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def _or(self) -> bool:
        result = self._and()
        while (self._peek() or "").upper() == "OR":
            self._take()
            right = self._and()
            result = result or right
        return result

    def _and(self) -> bool:
        result = self._not()
        while (self._peek() or "").upper() == "AND":
            self._take()
            right = self._not()
            result = result and right
        return result

    def _not(self) -> bool:
        if (self._peek() or "").upper() == "NOT":
            self._take()
            return not self._not()
        return self._primary()

    def _primary(self) -> bool:
        token = self._take()
        if token == "(":
            result = self._or()
            self._expect(")")
            return result
        if token in ("attribute_exists", "attribute_not_exists"):
            self._expect("(")
            name = self._name(self._take())
            self._expect(")")
            return (name in self.item) == (token == "attribute_exists")
        left = self._operand(token)
        operator = self._take()
        right = self._operand(self._take())
        if left is None or right is None:
            return False
        (lk, lv), = left.items()
        (rk, rv), = right.items()
        if lk != rk:
            return operator == "<>"
        if lk == "N":
            lv, rv = Decimal(lv), Decimal(rv)
        return {"=": lv == rv, "<>": lv != rv, "<": lv < rv, "<=": lv <= rv, ">": lv > rv, ">=": lv >= rv}[operator]

    def _expect(self, token: str) -> None:
        if self._take() != token:
            raise NotImplementedError(f"expected {token!r} in condition")

    def _name(self, token: str) -> str:
        return self.names[token] if token.startswith("#") else token

    def _operand(self, token: str) -> dict[str, Any] | None:
        if token.startswith(":"):
            value: dict[str, Any] = self.values[token]
            return value
        return self.item.get(self._name(token))


def item_size(item: Item | None) -> int:
    """DynamoDB's size of an item: attribute names plus values."""
    return sum(len(name.encode()) + _value_size(value) for name, value in (item or {}).items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "B":
        import base64

        return len(base64.b64decode(v)) if isinstance(v, str) else len(v)
    if kind == "N":
        digits = len(v.lstrip("-").replace(".", "").strip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(x) for k, x in v.items())
    if kind == "L":
        return 3 + sum(1 + _value_size(x) for x in v)
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: x}) for x in v)
    raise ValueError(f"unknown attribute type {kind!r}")
