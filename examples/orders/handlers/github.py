"""GitHub webhook worker: applies verified ``push`` deliveries handed over by the receiver.

The receiver (``retrysafe.webhook.handler``) already verified the signature and
recorded the delivery; this consumer runs once per delivery (the outbox event id
derives from it) and keeps only the newest head per repository, because
deliveries arrive out of order. Importing this module makes no AWS call.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

from retrysafe import Transaction
from retrysafe.sqs import Message, idempotent_sqs

ORDERS_TABLE = os.environ.get("ORDERS_TABLE", "orders")


def _delivery(message: Message) -> dict[str, Any]:
    payload = message.content["payload"]
    body = payload.get("body")
    if isinstance(body, str) and payload.get("body_encoding") == "base64":
        body = base64.b64decode(body).decode()
    return json.loads(body) if isinstance(body, str) else dict(body or {})


@idempotent_sqs(subscriber="github-worker", operation="ApplyPush")
def handler(message: Message, txn: Transaction) -> Any:
    """Record the pushed head of a repository unless a newer push was applied already."""
    if message.content["payload"].get("event") != "push":
        return None
    push = _delivery(message)
    repo = push.get("repository", {}).get("full_name")
    pushed_at = push.get("repository", {}).get("pushed_at")
    if not repo or pushed_at is None:
        return None
    txn.update({"pk": f"repo#{repo}"}, "SET head = :h, pushed_at = :t", table=ORDERS_TABLE,
               condition="attribute_not_exists(pushed_at) OR pushed_at < :t",
               values={":h": push.get("after", ""), ":t": int(pushed_at)})
    return None
