"""A claim-checked webhook, tried locally as a user would: the example's bodies bucket is provisioned on the embedded S3.

:func:`large_webhook` is a sandbox scenario (``python -m retrysafe_sandbox demo --scenario
tests.sandbox.test_claim_check:large_webhook``): a signed GitHub push whose receipt would not fit one
EventBridge event, delivered twice. The receiver stores its body in the bucket (IAM: ``s3:PutObject`` on
``webhooks/*``, the bucket's TLS-only policy), the outbox carries the pointer, and the worker's
``@idempotent_sqs`` fetches the body back (``s3:GetObject``) and applies the push once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

from retrysafe import names
from retrysafe_sandbox import Report, Sandbox
from retrysafe_sandbox.scenarios import post

from examples.orders.scenario import _environment
from tests.helpers import ROOT

#: More than an EventBridge event carries (256 KiB), so the receipt must be a claim check.
BODY_BYTES = 300_000


def large_webhook(sandbox: Sandbox, report: Report) -> None:
    """Deliver one large signed push twice; check the stored body, the replay and the one applied effect."""
    receiver = _environment(sandbox, "/webhooks/github", names.CLAIM_CHECK_BUCKET_ENV)
    secret = sandbox.client("secretsmanager").get_secret_value(
        SecretId=_environment(sandbox, "/webhooks/github", names.WEBHOOK_SECRET_ARN_ENV))["SecretString"]
    run = uuid.uuid4().hex[:8]
    push = {"ref": "refs/heads/main", "after": f"{run}-head", "repository": {"full_name": f"acme/{run}",
                                                                               "pushed_at": 1700000000}}
    push["commits"] = [{"message": "x" * BODY_BYTES}]
    body = json.dumps(push).encode()
    signed = {"X-GitHub-Event": "push", "X-GitHub-Delivery": f"{run}-delivery", "X-GitHub-Hook-ID": "1",
              "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()}
    base = next(s.url for s in sandbox.apis if any(r.path == "/webhooks/github" for r in s.routes))
    hooks = [post(f"{base}/webhooks/github", body, signed) for _ in range(2)]
    report.check([h.status for h in hooks] == [202, 202] and hooks[1].replayed,
                 f"large webhook delivered twice: {[h.status for h in hooks]}, second replayed={hooks[1].replayed}")
    stored = sandbox.client("s3").list_objects_v2(Bucket=receiver, Prefix=names.CLAIM_CHECK_PREFIX).get("Contents", [])
    report.check([o["Size"] for o in stored] == [len(body)], f"bodies stored in s3://{receiver}: "
                                                              f"{[(o['Key'], o['Size']) for o in stored]}")
    report.check(sandbox.settle(60), "queues drained and pollers idle")
    orders_table = _environment(sandbox, "/orders", "ORDERS_TABLE")
    applied = sandbox.client("dynamodb").get_item(TableName=orders_table, Key={"pk": {"S": f"repo#acme/{run}"}})
    head = applied.get("Item", {}).get("head", {}).get("S")
    report.check(head == f"{run}-head", f"the worker applied the push from the stored body: head {head!r}")
    report.effects["large webhook heads"] = 1 if head == f"{run}-head" else 0


def test_a_claim_checked_webhook_runs_on_the_sandbox(example_assembly: Path, tmp_path: Path) -> None:
    # its own process, as `make demo` runs (moto's backends are per process)
    demo = subprocess.run([sys.executable, "-m", "retrysafe_sandbox", "demo", "--assembly", str(example_assembly),
                           "--stack", "RetrysafeOrders", "--logs", str(tmp_path / "logs"),
                           "--scenario", "tests.sandbox.test_claim_check:large_webhook"],
                          capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    out = demo.stdout + demo.stderr
    assert demo.returncode == 0, out
    assert "skipping AWS::S3::Bucket" not in out
    assert "ok    large webhook delivered twice: [202, 202], second replayed=True" in out
    assert "ok    the worker applied the push from the stored body" in out
    assert re.search(r"ok    IAM: \d+ call\(s\) allowed by the template's policies, 0 denied", out), out
    assert "Traceback" not in out, out
