"""Stored results: compressed with a window sized to the response, readable by any zlib reader, old records too."""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest
from retrysafe._record import COMPLETED, Record, from_item, to_item


def _result(size: int) -> dict[str, Any]:
    lines = [{"sku": f"SKU-{i:05d}", "qty": i % 4, "name": f"Item {i % 40}"} for i in range(size // 48)]
    return {"s": 201, "h": {"Content-Type": "application/json"}, "b": json.dumps({"lines": lines})}


def _record(result: Any) -> Record:
    return Record(record_id="idem#x", state=COMPLETED, fingerprint="fp", expires_at=2_000_000_000, result=result)


@pytest.mark.parametrize("size", [1024, 8 * 1024, 64 * 1024])
def test_results_round_trip_with_a_window_sized_to_the_response(size: int) -> None:
    result = _result(size)
    raw = json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode()
    item = to_item(_record(result))
    packed = item["rz"]["B"]
    window = 2 ** ((packed[0] >> 4) + 8)  # zlib header CINFO: log2(window) - 8 (the default window is 32 KiB)
    assert min(len(raw), 32 * 1024) <= window <= max(512, 2 * len(raw))
    assert len(packed) == len(zlib.compress(raw, 1))  # the window covers the input: same deflate output
    assert zlib.decompress(packed) == raw
    assert from_item(item).result == result


def test_records_compressed_with_the_default_window_still_decode() -> None:
    result = _result(4096)
    item = to_item(_record(result))
    item["rz"] = {"B": zlib.compress(json.dumps(result, separators=(",", ":")).encode(), 1)}
    assert from_item(item).result == result
