"""A minimal idempotent handler for the HTTP API (v2) sandbox test: stores a note, returns it."""

from __future__ import annotations

import json
from typing import Any

from retrysafe import Transaction, idempotent_http


@idempotent_http(operation="CreateNote")
def handler(event: dict[str, Any], context: Any, txn: Transaction) -> dict[str, Any]:
    """Write one note item (key-derived id) in the idempotency table and answer 201."""
    note_id = txn.derive_key("note")[:16]
    txn.put({"pk": f"note#{note_id}", "text": json.loads(event["body"])["text"], "tenant": txn.tenant},
            condition="attribute_not_exists(pk)")
    return {"statusCode": 201, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"id": note_id, "version": event.get("version")})}
