"""SQS event source mappings, run as Lambda runs them.

Receives up to ``BatchSize`` messages (waiting up to ``MaximumBatchingWindowInSeconds`` to fill
the batch), invokes the function with an SQS event, and then: on a function error, deletes
nothing (every message reappears after the queue's visibility timeout); with
``ReportBatchItemFailures``, deletes all but the reported ``batchItemFailures`` (an invalid
report fails the whole batch); otherwise deletes the batch. Messages that do not pass
``FilterCriteria`` are deleted without invoking. The embedded SQS moves a message to the
dead-letter queue once its receive count exceeds the redrive policy's ``maxReceiveCount``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

from botocore.exceptions import BotoCoreError

from .assembly import REGION
from .filters import parse_criteria, passes
from .functions import STOPPED, FunctionPool
from .ledger import Ledger


def _attribute(value: dict[str, Any]) -> dict[str, Any]:
    binary = value.get("BinaryValue")
    return {"stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
            "stringListValues": value.get("StringListValues", []), "binaryListValues": [],
            "dataType": value["DataType"]}


def lambda_record(message: dict[str, Any], queue_arn: str) -> dict[str, Any]:
    """A received message in the shape of a Lambda SQS event record."""
    return {"messageId": message["MessageId"], "receiptHandle": message["ReceiptHandle"], "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {k: _attribute(v) for k, v in message.get("MessageAttributes", {}).items()},
            "md5OfBody": message["MD5OfBody"], "eventSource": "aws:sqs", "eventSourceARN": queue_arn,
            "awsRegion": REGION}


def _filterable(record: dict[str, Any]) -> dict[str, Any]:
    try:
        return {**record, "body": json.loads(record["body"])}
    except ValueError:
        return record


def failed_ids(result: Any, batch: list[dict[str, Any]]) -> set[str] | None:
    """Message ids a partial batch response reports failed; ``None`` when the report is invalid."""
    if result is None:
        return set()
    failures = result.get("batchItemFailures") if isinstance(result, dict) else None
    if failures is None:
        return set()
    ids = {record["messageId"] for record in batch}
    reported = {str(f.get("itemIdentifier")) for f in failures if isinstance(f, dict)}
    return reported if reported <= ids and len(reported) == len(failures) else None


class SqsPoller(threading.Thread):
    """One ``AWS::Lambda::EventSourceMapping`` from an SQS queue (a daemon thread)."""

    def __init__(self, mapping: dict[str, Any], queue_url: str, sqs: Any, pool: FunctionPool, ledger: Ledger,
                 stop: threading.Event) -> None:
        super().__init__(name=f"sqs:{pool.spec.logical_id}", daemon=True)
        self.queue_url, self.sqs, self.pool, self.ledger, self._halt = queue_url, sqs, pool, ledger, stop
        self.queue_arn = str(mapping["EventSourceArn"])
        self.batch_size = int(mapping.get("BatchSize", 10))
        self.window = float(mapping.get("MaximumBatchingWindowInSeconds", 0))
        self.partial = "ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", [])
        self.patterns = parse_criteria(mapping.get("FilterCriteria"))
        self.busy = False

    def run(self) -> None:
        try:
            self._poll()
        except BotoCoreError:
            if not self._halt.is_set():  # the embedded AWS went away under a poll of a stopping sandbox
                raise

    def _poll(self) -> None:
        while not self._halt.is_set():
            batch = self._receive()
            if batch:
                self.busy = True
                try:
                    self._deliver(batch)
                finally:
                    self.busy = False

    def _receive(self) -> list[dict[str, Any]]:
        batch: list[dict[str, Any]] = []
        deadline = time.monotonic() + self.window
        while len(batch) < self.batch_size and not self._halt.is_set():
            messages = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=min(10, self.batch_size - len(batch)), WaitTimeSeconds=1,
                AttributeNames=["All"], MessageAttributeNames=["All"]).get("Messages", [])
            batch += [lambda_record(m, self.queue_arn) for m in messages]
            if (batch and time.monotonic() >= deadline) or (not messages and batch):
                break
            if not messages and not batch:
                return []
        return batch

    def _deliver(self, batch: list[dict[str, Any]]) -> None:
        kept = [r for r in batch if passes(_filterable(r), self.patterns)]
        self._remove([r for r in batch if r not in kept], "filtered out")
        if not kept:
            return
        invocation = self.pool.invoke({"Records": kept})
        if invocation.error is not None and invocation.error["errorType"] == STOPPED:
            return  # the sandbox is stopping: nothing to count, the messages stay in the queue
        failed = None if invocation.error else failed_ids(invocation.result, kept) if self.partial else set()
        if failed is None:
            self.ledger.add("messages", "failed, left for redelivery", len(kept))
            return
        self.ledger.add("messages", "failed, left for redelivery", len(failed))
        self._remove([r for r in kept if r["messageId"] not in failed], "consumed")

    def _remove(self, records: list[dict[str, Any]], outcome: str) -> None:
        for start in range(0, len(records), 10):
            chunk = records[start:start + 10]
            self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(chunk)])
        if records:
            self.ledger.add("messages", outcome, len(records))
