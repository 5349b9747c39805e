"""EventBridge rules with function targets, delivered as EventBridge and Lambda's asynchronous invocation deliver them.

The embedded EventBridge matches every event put on a bus against each rule's pattern (and
applies a target's ``InputTransformer``). It cannot invoke a function, so the provisioner points
each function target of a pattern rule at a queue of the sandbox's own (``sandbox-async-...``),
which stands for Lambda's asynchronous invocation queue, and an :class:`EventTargetPoller` takes
the events from there, one at a time:

- EventBridge invokes the function only if one of its ``AWS::Lambda::Permission`` s lets
  ``events.amazonaws.com`` do so from the rule's ARN. An event it may not deliver goes to the
  target's ``DeadLetterConfig`` queue, the event as the message body (EventBridge does not retry
  a permission error), if the queue's policy lets EventBridge send it there.
- The function is invoked asynchronously: an invocation that fails (a function error, a crashed
  or timed-out execution environment) is retried up to the ``MaximumRetryAttempts`` of the
  function's ``AWS::Lambda::EventInvokeConfig`` (default 2), right away rather than after
  Lambda's one and two minutes. Then Lambda's invocation record (``requestPayload``: the event,
  ``condition``: ``RetriesExhausted``) goes to its ``OnFailure`` queue or topic, sent with the
  function's role, as Lambda sends it.

Not emulated: a target's ``Input``/``InputPath`` (such a target is skipped with a notice),
EventBridge's own retry policy (a delivery to Lambda does not fail locally, short of the
permission), ``MaximumEventAgeInSeconds`` and concurrent invocations of one target.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError

from .assembly import function_name
from .functions import STOPPED, FunctionPool, Invocation
from .ledger import Ledger
from .provision import EventTarget, Provisioned

#: Lambda's default for an asynchronous invocation without an ``EventInvokeConfig``: two retries.
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class AsyncConfig:
    """A function's asynchronous invocation settings (its ``AWS::Lambda::EventInvokeConfig``)."""

    retries: int = DEFAULT_RETRIES
    on_failure: str | None = None


def async_configs(done: Provisioned) -> dict[str, AsyncConfig]:
    """Each function's asynchronous invocation settings, by the function's logical id."""
    functions = {done.intrinsics.ref(f.logical_id): f.logical_id for f in done.stack.of_type("AWS::Lambda::Function")}
    configs = {}
    for resource in done.stack.of_type("AWS::Lambda::EventInvokeConfig"):
        props = done.intrinsics.resolve(resource.properties)
        function = functions.get(function_name(str(props["FunctionName"])))
        if function is None:
            continue
        destination = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        configs[function] = AsyncConfig(int(props.get("MaximumRetryAttempts", DEFAULT_RETRIES)),
                                        str(destination) if destination else None)
    return configs


def invocation_record(function_arn: str, event: Any, attempts: int, invocation: Invocation) -> str:
    """Lambda's record of an asynchronous invocation that failed every attempt (what ``OnFailure`` receives)."""
    error = invocation.error or {}
    return json.dumps({
        "version": "1.0", "timestamp": datetime.now(UTC).isoformat(),
        "requestContext": {"requestId": str(uuid.uuid4()), "functionArn": f"{function_arn}:$LATEST",
                           "condition": "RetriesExhausted", "approximateInvokeCount": attempts},
        "requestPayload": event,
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorType": error.get("errorType"), "errorMessage": error.get("errorMessage")}})


class EventTargetPoller(threading.Thread):
    """One function target of an EventBridge rule (a daemon thread); see the module docstring.

    ``may_invoke(function, rule_arn)`` is the function's resource policy; ``dead_letter(arn, body)``
    sends as EventBridge, ``on_failure(arn, body)`` as the function's role.
    """

    def __init__(self, target: EventTarget, sqs: Any, pool: FunctionPool, config: AsyncConfig,
                 may_invoke: Callable[[str, str], bool], dead_letter: Callable[[str, str], None],
                 on_failure: Callable[[str, str], None], ledger: Ledger, stop: threading.Event) -> None:
        super().__init__(name=f"events:{target.rule}:{target.target_id}", daemon=True)
        self.target, self.sqs, self.pool, self.config, self.ledger, self._halt = target, sqs, pool, config, ledger, stop
        self.may_invoke, self.dead_letter, self.on_failure = may_invoke, dead_letter, on_failure
        self.queue_url = target.queue_url
        self.busy = False

    def run(self) -> None:
        try:
            self._poll()
        except BotoCoreError:
            if not self._halt.is_set():  # the embedded AWS went away under a poll of a stopping sandbox
                raise

    def _poll(self) -> None:
        while not self._halt.is_set():
            messages = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10,
                                                WaitTimeSeconds=1).get("Messages", [])
            if not messages:
                continue
            self.busy = True
            try:
                for message in messages:
                    if not self.deliver(json.loads(message["Body"])):
                        return  # the sandbox is stopping: the event stays queued
                    self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
            finally:
                self.busy = False

    def deliver(self, event: Any) -> bool:
        """Deliver one event as EventBridge and Lambda would; ``False`` when the sandbox stopped under it."""
        name = f"{self.target.rule} -> {self.pool.spec.logical_id}"
        if not self.may_invoke(self.pool.spec.logical_id, self.target.rule_arn):
            self.ledger.add("events", f"{name}: not delivered (no permission), to the dead-letter queue")
            if self.target.dead_letter:
                self.dead_letter(self.target.dead_letter, json.dumps(event))
            return True
        attempts = 1 + self.config.retries
        for attempt in range(1, attempts + 1):
            invocation = self.pool.invoke(event)
            if invocation.error is not None and invocation.error["errorType"] == STOPPED:
                return False
            if invocation.error is None:
                self.ledger.add("events", f"{name}: delivered")
                return True
            if attempt < attempts:
                self.ledger.add("events", f"{name}: failed, retried")
                time.sleep(0.1)
        self.ledger.add("events", f"{name}: failed every attempt, to the on-failure destination")
        if self.config.on_failure:
            self.on_failure(self.config.on_failure, invocation_record(self.pool.spec.arn, event, attempts, invocation))
        return True
