"""The idempotency record: one DynamoDB item per scoped key, and its codec.

Attribute names are short on purpose: a record with a 4 KiB JSON response
must fit one write unit (1 KB) after compression.

=========  ==================================================================
attribute  meaning
=========  ==================================================================
``pk``     partition key, :attr:`retrysafe._keys.Scope.record_id`
``st``     state: ``pending`` or ``completed``
``fp``     request fingerprint (hash only)
``exp``    expiry, epoch seconds: the table's TTL attribute, compared in every condition
``ca``     created at, epoch milliseconds
``op``     operation name
``ow``     writer token: the claim's owner (the fencing token) while pending; on a completed
           record, the invocation that completed it (a retry whose response was lost knows its write)
``ii``     intent instance (pending only): set by a fresh claim, kept by takeovers; names this
           instance of the intent in its outbox event ids
``le``     lease end, epoch milliseconds (pending only)
``st``     (see above); ``parked``: a claim whose run returned a result that could not be stored
           (never run again before ``exp``, see :class:`~retrysafe.errors.UnstorableResultError`)
``r``      stored result, JSON text (small results); a leading ``$`` marks tagged JSON
           (``Decimal``, ``datetime``, ``set``, ``bytes``... see :mod:`retrysafe._tagged`)
``rz``     stored result, zlib-compressed ``r`` text (larger results)
``rs``     resource pointer, e.g. ``order/123`` (optional)
``cp``     named checkpoints of a multi-step task (pending only)
=========  ==================================================================
"""

from __future__ import annotations

import zlib
from typing import Any

from . import names
from ._tagged import decode_text, encode_text
from ._value import Value, set_field
from .errors import ResponseTooLargeError

PENDING = "pending"
COMPLETED = "completed"
#: A claim-first run whose result could not be stored: the key is kept, the run is never repeated.
PARKED = "parked"

#: Results larger than this (bytes of JSON) are stored zlib-compressed when that is smaller.
COMPRESS_THRESHOLD = 256
#: DynamoDB's item limit is 400 KB; keep headroom for the other attributes.
MAX_RESULT_BYTES = 390 * 1024

AttributeMap = dict[str, dict[str, Any]]


class Record(Value):
    """A decoded idempotency record."""

    __slots__ = (
        "_text",
        "checkpoints",
        "created_at_ms",
        "expires_at",
        "fingerprint",
        "instance",
        "lease_until_ms",
        "operation",
        "owner",
        "record_id",
        "resource",
        "result",
        "state",
    )

    checkpoints: dict[str, Any]
    created_at_ms: int
    expires_at: int
    fingerprint: str
    instance: str | None
    lease_until_ms: int | None
    operation: str
    owner: str | None
    record_id: str
    resource: str | None
    result: Any
    state: str
    _text: str | None

    def __init__(self, record_id: str, state: str, fingerprint: str, expires_at: int, created_at_ms: int = 0,
                 operation: str = "", owner: str | None = None, lease_until_ms: int | None = None,
                 result: Any = None, resource: str | None = None,
                 checkpoints: dict[str, Any] | None = None, instance: str | None = None) -> None:
        set_field(self, "record_id", record_id)
        set_field(self, "state", state)
        set_field(self, "fingerprint", fingerprint)
        set_field(self, "expires_at", expires_at)
        set_field(self, "created_at_ms", created_at_ms)
        set_field(self, "operation", operation)
        set_field(self, "owner", owner)
        set_field(self, "lease_until_ms", lease_until_ms)
        set_field(self, "result", result)
        set_field(self, "resource", resource)
        set_field(self, "checkpoints", checkpoints if checkpoints is not None else {})
        set_field(self, "instance", instance)
        set_field(self, "_text", None)

    @property
    def result_text(self) -> str:
        """``result`` as the compact text that is stored (encoded once per record).

        Raises :class:`~retrysafe.errors.UnstorableResultError` when the result cannot be stored.
        """
        text = self._text
        if text is None:
            text = encode_text(self.result)
            set_field(self, "_text", text)
        return text

    def is_expired(self, now: float) -> bool:
        """True once the horizon has passed, whether or not TTL has deleted the item yet."""
        return self.expires_at < now

    def lease_remaining(self, now: float) -> float:
        """Seconds left on a pending record's lease (0 when lapsed or completed)."""
        if self.state != PENDING or self.lease_until_ms is None:
            return 0.0
        return max(0.0, self.lease_until_ms / 1000.0 - now)


def encode_result(result: Any) -> tuple[str, dict[str, Any]]:
    """The attribute (name, value) that stores ``result``; compressed when that pays."""
    return _encode_text(encode_text(result))


def _encode_text(text: str) -> tuple[str, dict[str, Any]]:
    raw = text.encode("utf-8")
    if len(raw) > COMPRESS_THRESHOLD:
        packed = _compress(raw)
        if len(packed) < len(raw):
            _check_size(len(packed))
            return "rz", {"B": packed}
    _check_size(len(raw))
    return "r", {"S": text}


def _compress(raw: bytes) -> bytes:
    """zlib level 1 with a window just large enough for ``raw`` (any zlib reader inflates it).

    For input no larger than the window the deflate output is the same as with the default 32 KiB
    window, but a 1 KiB response no longer pays for initialising the full compressor state (about
    six times faster).
    """
    packer = zlib.compressobj(1, zlib.DEFLATED, max(9, min(15, (len(raw) - 1).bit_length())))
    return packer.compress(raw) + packer.flush()


def _check_size(size: int) -> None:
    if size > MAX_RESULT_BYTES:
        raise ResponseTooLargeError(
            f"the result is {size} bytes after compression; a DynamoDB item holds at most 400 KB. "
            "Return a smaller response (for example a resource pointer) for this operation."
        )


def to_item(record: Record) -> AttributeMap:
    """Encode ``record`` as a DynamoDB attribute map."""
    item: AttributeMap = {
        names.PARTITION_KEY: {"S": record.record_id},
        "st": {"S": record.state},
        "fp": {"S": record.fingerprint},
        names.TTL_ATTRIBUTE: {"N": str(record.expires_at)},
        "ca": {"N": str(record.created_at_ms)},
        "op": {"S": record.operation},
    }
    if record.owner is not None:
        item["ow"] = {"S": record.owner}
    if record.lease_until_ms is not None:
        item["le"] = {"N": str(record.lease_until_ms)}
    if record.state == COMPLETED:
        name, value = _encode_text(record.result_text)
        item[name] = value
    if record.resource is not None:
        item["rs"] = {"S": record.resource}
    if record.checkpoints:
        item["cp"] = encode_checkpoints(record.checkpoints)
    if record.instance is not None:
        item["ii"] = {"S": record.instance}
    return item


def encode_checkpoints(checkpoints: dict[str, Any]) -> dict[str, Any]:
    """The ``cp`` attribute value: a map of checkpoint name to its stored text (as results are stored)."""
    return {"M": {k: {"S": encode_text(v)} for k, v in checkpoints.items()}}


def from_item(item: AttributeMap) -> Record:
    """Decode a DynamoDB attribute map into a :class:`Record`."""
    result: Any = None
    text: str | None = None
    if "rz" in item:
        text = zlib.decompress(bytes(item["rz"]["B"])).decode("utf-8")
    elif "r" in item:
        text = item["r"]["S"]
    if text is not None:
        result = decode_text(text)
    checkpoints = {k: decode_text(v["S"]) for k, v in item.get("cp", {}).get("M", {}).items()}
    record = Record(
        record_id=item[names.PARTITION_KEY]["S"],
        state=item.get("st", {}).get("S", PENDING),
        fingerprint=item.get("fp", {}).get("S", ""),
        expires_at=int(item.get(names.TTL_ATTRIBUTE, {}).get("N", "0")),
        created_at_ms=int(item.get("ca", {}).get("N", "0")),
        operation=item.get("op", {}).get("S", ""),
        owner=item.get("ow", {}).get("S"),
        lease_until_ms=int(item["le"]["N"]) if "le" in item else None,
        result=result,
        resource=item.get("rs", {}).get("S"),
        checkpoints=checkpoints,
        instance=item.get("ii", {}).get("S"),
    )
    set_field(record, "_text", text)  # the text it was decoded from: a replay's record is not encoded again
    return record


def item_size(item: AttributeMap) -> int:
    """DynamoDB's size of an item in bytes (names plus values), as used for the 400 KB and WCU limits."""
    return sum(len(name.encode("utf-8")) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "B":
        return len(v)
    if kind == "N":
        digits = len(v.lstrip("-").replace(".", "").lstrip("0")) or 1
        return (digits + 1) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + _value_size(x) for k, x in v.items())
    if kind == "L":
        return 3 + sum(1 + _value_size(x) for x in v)
    if kind == "SS":
        return sum(len(s.encode("utf-8")) for s in v)
    if kind == "NS":
        return sum(_value_size({"N": n}) for n in v)
    if kind == "BS":
        return sum(len(b) for b in v)
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")
