"""Order-aware writes: deliveries arrive out of order, so a write carries the version it represents.

Any consumer can use them: an SQS handler applying outbox events (pass the
event's ``sequence``), a webhook worker, a projection fed by a stream.

A guarded write applies only when its version (a sequence number, an
``updated_at`` timestamp, an outbox event's ``sequence``) is newer than the
stored one. Such a write is idempotent by itself: a redelivery or an older
delivery finds an equal or newer version and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._codec import serialize, serialize_item
from ._store import DynamoStore

#: The condition: absent item/attribute, or an older version.
NEWER_CONDITION = "attribute_not_exists(#v) OR #v < :v"


def put_if_newer(item: Mapping[str, Any], *, version_attribute: str = "version", table: str | None = None,
                 client: Any = None) -> bool:
    """Put ``item`` unless the stored item has an equal or newer ``version_attribute``.

    Returns ``True`` when written, ``False`` for a stale or repeated delivery.
    ``table`` defaults to the idempotency table; ``client`` to its DynamoDB client.
    """
    if version_attribute not in item:
        raise ValueError(f"the item has no {version_attribute!r} attribute to order by")
    return _conditional("put_item", table, client, version_attribute, item[version_attribute],
                        Item=serialize_item(item))


def update_if_newer(key: Mapping[str, Any], values: Mapping[str, Any], *, version: Any,
                    version_attribute: str = "version", table: str | None = None, client: Any = None) -> bool:
    """Set ``values`` (and the version) on the item at ``key`` unless it holds an equal or newer version.

    Attributes not named in ``values`` are kept. Returns ``True`` when written.
    """
    names = {f"#a{i}": name for i, name in enumerate(values)}
    assignments = [f"#a{i} = :a{i}" for i in range(len(values))] + ["#v = :v"]
    return _conditional("update_item", table, client, version_attribute, version,
                        Key=serialize_item(key),
                        UpdateExpression="SET " + ", ".join(assignments), extra_names=names,
                        extra_values={f":a{i}": serialize(v) for i, v in enumerate(values.values())})


def _conditional(operation: str, table: str | None, client: Any, version_attribute: str, version: Any,
                 extra_names: Mapping[str, str] | None = None, extra_values: Mapping[str, Any] | None = None,
                 **request: Any) -> bool:
    if table is None or client is None:
        store = DynamoStore.from_env()
        table, client = table or store.table_name, client or store.client
    from botocore.exceptions import ClientError

    try:
        getattr(client, operation)(
            TableName=table, ConditionExpression=NEWER_CONDITION,
            ExpressionAttributeNames={"#v": version_attribute, **(extra_names or {})},
            ExpressionAttributeValues={":v": serialize(version), **(extra_values or {})}, **request)
    except ClientError as error:  # any transport's failed condition (botocore's client also raises it as a subclass)
        if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True
