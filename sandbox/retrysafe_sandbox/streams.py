"""DynamoDB Streams event source mappings, run as Lambda runs them.

Reads every shard from its start (the sandbox's streams begin empty), drops records that fail ``FilterCriteria``,
and invokes the function with batches of up to ``BatchSize`` records. On a function error
(or the records from the lowest reported ``batchItemFailures`` sequence number on, with
``ReportBatchItemFailures``) the batch is retried, split in two first when
``BisectBatchOnFunctionError`` is set, up to ``MaximumRetryAttempts`` (-1: forever); then
the failed range is described to the ``OnFailure`` SQS/SNS destination and skipped.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from .filters import parse_criteria, passes
from .functions import STOPPED, FunctionPool
from .ledger import Ledger


def failed_from(result: Any, batch: list[dict[str, Any]], error: bool) -> int | None:
    """Index of the first record to retry (``None``: the batch succeeded)."""
    if error:
        return 0
    failures = result.get("batchItemFailures") if isinstance(result, dict) else None
    if not failures:
        return None
    sequence = [r["dynamodb"]["SequenceNumber"] for r in batch]
    reported = [f.get("itemIdentifier") if isinstance(f, dict) else None for f in failures]
    if any(r not in sequence for r in reported):
        return 0
    return min(sequence.index(r) for r in reported)


class StreamPoller(threading.Thread):
    """One ``AWS::Lambda::EventSourceMapping`` from a DynamoDB stream (a daemon thread)."""

    def __init__(self, mapping: dict[str, Any], streams: Any, destination: Any, pool: FunctionPool, ledger: Ledger,
                 stop: threading.Event) -> None:
        super().__init__(name=f"stream:{pool.spec.logical_id}", daemon=True)
        self.streams, self.destination, self.pool, self.ledger, self._halt = streams, destination, pool, ledger, stop
        self.stream_arn = str(mapping["EventSourceArn"])
        self.batch_size = int(mapping.get("BatchSize", 100))
        self.bisect = bool(mapping.get("BisectBatchOnFunctionError", False))
        self.max_retries = int(mapping.get("MaximumRetryAttempts", -1))
        self.on_failure = mapping.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        self.partial = "ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", [])
        self.patterns = parse_criteria(mapping.get("FilterCriteria"))
        self._last: dict[str, str] = {}
        self.busy = False

    def run(self) -> None:
        try:
            self._poll()
        except BotoCoreError:
            if not self._halt.is_set():  # the embedded AWS went away under a poll of a stopping sandbox
                raise

    def _poll(self) -> None:
        while not self._halt.is_set():
            try:
                records, positions = self._read()
            except ClientError as error:
                # The stream answered an error (not the app's doing): counted, and read again at the next poll.
                self.ledger.add("records", f"read failed ({error.response['Error'].get('Code', '?')})")
                records, positions = [], {}
            if not records:
                time.sleep(0.2)
                continue
            self.busy = True
            try:
                kept = [r for r in records if passes(r, self.patterns)]
                if len(kept) < len(records):
                    self.ledger.add("records", "filtered out", len(records) - len(kept))
                for start in range(0, len(kept), self.batch_size):
                    self._deliver(kept[start:start + self.batch_size])
            finally:
                # Moved on only once delivered: until then caught_up() sees these records as pending.
                self._last.update(positions)
                self.busy = False

    def _read(self, limit: int = 1000, client: Any = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The records after the last ones delivered, and each shard's position after them."""
        streams = client or self.streams
        shards = streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        records: list[dict[str, Any]] = []
        positions: dict[str, str] = {}
        for shard in shards:
            # A fresh iterator after the last record read on every poll: the stream starts empty with the
            # sandbox, so TRIM_HORIZON and LATEST coincide.
            after = self._last.get(shard["ShardId"])
            position = ({"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after} if after
                        else {"ShardIteratorType": "TRIM_HORIZON"})
            iterator = streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard["ShardId"],
                                                       **position)["ShardIterator"]
            page = streams.get_records(ShardIterator=iterator, Limit=limit).get("Records", [])
            if page:
                positions[shard["ShardId"]] = page[-1]["dynamodb"]["SequenceNumber"]
            records += [{**r, "eventSourceARN": self.stream_arn} for r in page]
        return records, positions

    def caught_up(self, streams: Any) -> bool:
        """Whether every record the stream holds has been delivered (or filtered out, or given up on).

        A read of its own with the ``streams`` client (the sandbox's: not a call of the app), which
        does not move the poller; what :meth:`Sandbox.settle` waits for.
        """
        try:
            records, _ = self._read(limit=1, client=streams)
        except ClientError:
            return False
        return not records and not self.busy

    def _deliver(self, records: list[dict[str, Any]]) -> None:
        pending = deque([(records, 0)])
        while pending and not self._halt.is_set():
            batch, retries = pending.popleft()
            invocation = self.pool.invoke({"Records": batch})
            if invocation.error is not None and invocation.error["errorType"] == STOPPED:
                return  # the sandbox is stopping: nothing to count or retry
            index = failed_from(invocation.result if self.partial else None, batch, invocation.error is not None)
            self.ledger.add("records", "delivered", len(batch) if index is None else index)
            if index is None:
                continue
            remaining = batch[index:]
            if 0 <= self.max_retries <= retries:
                self._give_up(remaining, retries + 1)
            elif self.bisect and len(remaining) > 1:
                half = len(remaining) // 2
                pending.extendleft([(remaining[half:], retries + 1), (remaining[:half], retries + 1)])
            else:
                pending.appendleft((remaining, retries + 1))
            time.sleep(0.1)

    def _give_up(self, batch: list[dict[str, Any]], attempts: int) -> None:
        self.ledger.add("records", "sent to on-failure destination", len(batch))
        if not self.on_failure:
            return
        sequence = [r["dynamodb"]["SequenceNumber"] for r in batch]
        body = json.dumps({
            "requestContext": {"functionArn": self.pool.spec.name, "condition": "RetryAttemptsExhausted",
                               "approximateInvokeCount": attempts},
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0", "timestamp": datetime.now(UTC).isoformat(),
            "DDBStreamBatchInfo": {"shardId": "shard", "startSequenceNumber": sequence[0],
                                   "endSequenceNumber": sequence[-1], "batchSize": len(batch),
                                   "streamArn": self.stream_arn}})
        self.destination(str(self.on_failure), body)
