"""A module with an ``apply`` (tests/runtime/generic/test_idempotent_function.py: same name, two modules)."""

from __future__ import annotations

from typing import Any

from retrysafe import Transaction

from tests.helpers import ORDERS


def apply(order: dict[str, Any], txn: Transaction) -> str:
    """Count one refund of the order and answer which module ran."""
    txn.update({"pk": f"refund#{order['order_id']}"}, "ADD n :one", values={":one": 1}, table=ORDERS)
    return f"refund#{order['order_id']}"
