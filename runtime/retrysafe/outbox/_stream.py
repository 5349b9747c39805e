"""The outbox INSERTs among DynamoDB stream records: what the publisher and the pipe relay.

Only INSERTs of outbox items count; MODIFY and REMOVE records (TTL deletions
among them, ``userIdentity`` ``Service``/``dynamodb.amazonaws.com``) and the
other items of the table are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._events import OutboxMessage
from .._observability import telemetry
from ..names import KIND_ATTRIBUTE, OUTBOX_KIND


def outbox_inserts(records: Iterable[Any]) -> list[tuple[str, OutboxMessage | None]]:
    """(sequence number, message) of the stream records that are INSERTs of outbox items, in order.

    An outbox INSERT that cannot be read comes back with ``None``: the handler
    reports it failed (it ends in the on-failure destination) instead of
    dropping it. A record without even a sequence number cannot be reported
    and is logged.
    """
    from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

    found: list[tuple[str, OutboxMessage | None]] = []
    for record in records:
        if not isinstance(record, dict) or record.get("eventName") != "INSERT":
            continue
        identity = record.get("userIdentity")
        if isinstance(identity, Mapping) and identity.get("principalId") == "dynamodb.amazonaws.com":
            continue
        stream: Any = None
        try:
            stream = DynamoDBRecord(record).dynamodb
            if stream is None or stream.new_image.get(KIND_ATTRIBUTE) != OUTBOX_KIND:
                continue
            message = OutboxMessage.from_item(stream.new_image)
            message.body().encode("utf-8")  # a lone surrogate would fail the whole batch in the target's call
            if not isinstance(stream.sequence_number, str):
                raise KeyError("SequenceNumber")
            found.append((stream.sequence_number, message))
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError) as error:  # an unreadable INSERT
            image = record.get("dynamodb")
            sequence = image.get("SequenceNumber") if isinstance(image, dict) else None
            telemetry.logger.error("unreadable outbox stream record", extra={"error": type(error).__name__,
                                                                             "sequence": sequence})
            if isinstance(sequence, str) and sequence:
                found.append((sequence, None))
    return found
