"""``CutoverFromPowertools``: the ``powertools_cutover`` prop of :class:`~retrysafe_cdk.IdempotentFunction`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from aws_cdk import aws_dynamodb as dynamodb


@dataclass(frozen=True)
class CutoverFromPowertools:
    """The cut-over from Powertools idempotency (see the migration guide of the docs).

    ``table``: the table the old code's ``DynamoDBPersistenceLayer`` wrote to (imported with
    ``Table.from_table_name``/``from_table_arn``, or the construct that owns it); the function
    may only ``GetItem`` on it (and ``kms:Decrypt`` its customer-managed key, if it has one).
    ``until``: an aware datetime, the end of the window: the end of the deploy that switches to
    retrysafe plus the longest ``expires_after_seconds`` the old code used. The runtime reads
    both from the environment (``RETRYSAFE_POWERTOOLS_TABLE``, ``RETRYSAFE_POWERTOOLS_UNTIL``)
    when the code's ``PowertoolsCutover(...)`` omits them; after ``until`` it makes no lookup.
    """

    table: dynamodb.ITable
    until: datetime
