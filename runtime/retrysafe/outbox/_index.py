"""The sparse index ``outbox-unpublished``: the unpublished events by shard, and the parked ones.

Its partition key is the ``obq`` attribute (``u0``..``u7`` while an event is
unpublished, ``parked`` once its target refused it permanently; removed when
published) and its sort key the event's ``at``: when it was committed. The sweeper reads the shards,
``retrysafe outbox parked`` (:mod:`retrysafe.outbox.parked`) the ``parked`` partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._codec import deserialize_item
from .._store import DynamoStore
from ..names import COMMITTED_AT_ATTRIBUTE, OUTBOX_INDEX, UNPUBLISHED_ATTRIBUTE


def pages(store: DynamoStore, partition: str, *, before: str | None = None, limit: int | None = None,
          keep_going: Callable[[], bool] | None = None) -> Iterator[list[dict[str, Any]]]:
    """The items of one ``partition`` (deserialized), a non-empty page at a time, oldest first.

    ``before`` keeps the items committed earlier (their ``at``, ISO-8601 text); ``limit``
    caps a page; ``keep_going`` is asked before each page and stops the query
    when it answers ``False``.
    """
    condition = "#q = :q"
    names = {"#q": UNPUBLISHED_ATTRIBUTE}
    values: dict[str, Any] = {":q": {"S": partition}}
    if before is not None:
        condition += " AND #at < :before"
        names["#at"] = COMMITTED_AT_ATTRIBUTE
        values[":before"] = {"S": before}
    request: dict[str, Any] = {"TableName": store.table_name, "IndexName": OUTBOX_INDEX,
                               "KeyConditionExpression": condition, "ExpressionAttributeNames": names,
                               "ExpressionAttributeValues": values}
    if limit is not None:
        request["Limit"] = limit
    while keep_going is None or keep_going():
        response = store.client.query(**request)
        items = [deserialize_item(item) for item in response.get("Items", [])]
        if items:
            yield items
        if "LastEvaluatedKey" not in response:
            return
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
