"""An EventBridge rule whose function has no ``AWS::Lambda::Permission`` for it: the event goes to the target's DLQ.

The example's ``ShipOrders`` rule, in a copy of the assembly without the permission the
``IdempotentEventRule`` adds: EventBridge may not invoke the function, does not retry, and sends the
event itself to the target's dead-letter queue (whose policy lets the rule do so).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from retrysafe_sandbox import Options, Sandbox

BOUND_SECONDS = 90.0


def test_an_event_eventbridge_may_not_deliver_goes_to_the_targets_dead_letter_queue(example_assembly: Path,
                                                                                      tmp_path: Path) -> None:
    assembly = tmp_path / "cdk.out"
    shutil.copytree(example_assembly, assembly)
    template_file = assembly / "RetrysafeOrders.template.json"
    template = json.loads(template_file.read_text())
    [permission] = [lid for lid, r in template["Resources"].items()
                    if r["Type"] == "AWS::Lambda::Permission" and lid.startswith("ShipOrdersRuleAllowEventRule")]
    del template["Resources"][permission]
    template_file.write_text(json.dumps(template))
    with Sandbox(Options(assembly=assembly, stacks=["RetrysafeOrders"], log_dir=tmp_path / "logs"),
                 lambda _: None) as sandbox:
        [done] = sandbox.provisioned
        [bus] = done.stack.of_type("AWS::Events::EventBus")
        [target] = done.event_targets
        [dlq] = [url for url in sandbox.dead_letter_queues() if url.endswith(str(target.dead_letter).rpartition(":")[2])]
        detail = {"event_type": "OrderPlaced", "payload": {"order_id": "o-1", "lines": []}}
        sandbox.client("events").put_events(Entries=[{"EventBusName": done.intrinsics.ref(bus.logical_id),
                                                      "Source": "orders", "DetailType": "OrderPlaced",
                                                      "Detail": json.dumps(detail)}])
        sqs, deadline, messages = sandbox.client("sqs"), time.monotonic() + BOUND_SECONDS, []
        while not messages and time.monotonic() < deadline:
            messages = sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=1).get("Messages", [])
        assert messages, f"nothing in the rule's dead-letter queue within {BOUND_SECONDS}s"
        event = json.loads(messages[0]["Body"])  # the event itself, not a Lambda invocation record
        assert event["detail"] == detail and event["source"] == "orders" and "requestContext" not in event
        assert "ShipOrderFunctionE83CA20D" not in sandbox.ledger.invocations
        assert sum(n for k, n in sandbox.ledger.events.items() if "no permission" in k) == 1
        # listed with what was missing, as every denied call is (make demo fails on it)
        function_arn = sandbox.pools["ShipOrderFunctionE83CA20D"].spec.arn
        assert [k for k in sandbox.ledger.denied if k.startswith("events.amazonaws.com for ")] == [
            f"events.amazonaws.com for {target.rule_arn}: lambda:InvokeFunction on {function_arn}"]
