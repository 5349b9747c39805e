"""The orders service's sandbox scenario: driven over HTTP as a real client would, then checked.

``python -m retrysafe_sandbox demo`` runs it (``cdk.json`` names it in its ``retrysafe_sandbox``
context, with :mod:`examples.saga.scenario`).

Steps: requests without a token (401) and with a forged one (403), answered by the example's
Lambda TOKEN authorizer, which the sandbox invokes from the template (once per token while its
result is cached); then, with a token signed by the secret that authorizer reads, a first
order; a retry after a lost response; the same key with another payload (422); concurrent
duplicates; a payment captured twice; a webhook delivered twice (signed with the secret the
sandbox provisioned); and, throughout, these faults: every queue consumer crashing once right after its first
DynamoDB transaction committed, before it could acknowledge (the message comes back after its
visibility timeout); the shipping function (an EventBridge rule target) crashing the same way (Lambda
retries the asynchronous invocation); the shipping notices consumer crashing after its commit (its
DynamoDB stream batch is read again); and the outbox publisher crashing right after ``PutEvents``
succeeded, so that its stream batch is read again and every event in it is put on the bus a second time,
with new EventBridge ids (the inventory consumer dedupes on the outbox's event id, shipping on the order
id). Then the effects in the tables are compared with the intents: each must have happened exactly once.

It knows this example's routes (``/orders``, ``/orders/{id}/payments``, ``/webhooks/github``);
the tables and the secret it reads are found through the environment the template gives those
routes' functions. :func:`authorization` is also the app's ``authorization`` hook: ``make sandbox``
prints a ready header with it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from typing import Any

from retrysafe import names
from retrysafe_sandbox import Sandbox
from retrysafe_sandbox.functions import FunctionPool
from retrysafe_sandbox.scenarios import Reply, Report, post, post_and_drop
from retrysafe_sandbox.streams import StreamPoller

CRASH_POINT = "dynamodb:TransactWriteItems"
#: The outbox publisher dies right after the bus accepted its events, before marking them published.
PUBLISH_CRASH_POINT = "events:PutEvents"
SKU = "widget"


def _environment(sandbox: Sandbox, path: str, name: str) -> str:
    for server in sandbox.apis:
        for route in server.routes:
            if route.path == path and route.function:
                return str(sandbox.pools[route.function].spec.environment[name])
    raise LookupError(f"no function behind {path} has {name} in its environment")


def authorization(sandbox: Sandbox, tenant: str, path: str = "/orders") -> str:
    """A header the example's authorizer accepts for ``tenant``: ``Bearer <tenant>.<HMAC-SHA256(secret, tenant)>``.

    The secret is the one the route's authorizer function reads (``TOKEN_SECRET_ARN``); ``LookupError``
    when no such authorizer guards ``path``.
    """
    for server in sandbox.apis:
        for route in server.routes:
            spec = server.gate.authorizers.get(route.authorizer or "")
            if route.path == path and spec is not None and spec.function is not None:
                arn = sandbox.pools[spec.function].spec.environment["TOKEN_SECRET_ARN"]
                secret = sandbox.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
                return f"Bearer {tenant}." + hmac.new(secret.encode(), tenant.encode(), hashlib.sha256).hexdigest()
    raise LookupError(f"no Lambda authorizer with TOKEN_SECRET_ARN guards {path}")


def _order(quantity: int) -> dict[str, Any]:
    return {"customer": "c-1", "items": [{"sku": SKU, "quantity": quantity, "price": "9.90"}]}


def run(sandbox: Sandbox, report: Report, settle_seconds: float = 90.0) -> None:
    """Drive the orders service running in ``sandbox``; record every check in ``report``."""
    try:
        orders_table = _environment(sandbox, "/orders", "ORDERS_TABLE")
    except LookupError:
        report.skip("orders: no function behind /orders (its stack is not running)")
        return
    base = next(s.url for s in sandbox.apis if any(r.path == "/orders" for r in s.routes))
    inventory_table = _environment(sandbox, "/orders", "INVENTORY_TABLE")
    ddb = sandbox.client("dynamodb")
    ddb.put_item(TableName=inventory_table, Item={"pk": {"S": f"sku#{SKU}"}, "available": {"N": "1000"}})
    armed = _arm_crashes(sandbox, _environment(sandbox, "/orders", names.TABLE_ENV))
    run_id = uuid.uuid4().hex[:8]
    tenant = sandbox.options.tenant
    token = authorization(sandbox, tenant)
    anonymous = post(f"{base}/orders", _order(1), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-x"})
    forged = post(f"{base}/orders", _order(1), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-x",
                                                "Authorization": token[:-4] + "0000"})
    report.check((anonymous.status, forged.status) == (401, 403),
                 f"authorizer: no token {anonymous.status}, forged token {forged.status}")
    auth = {"Authorization": token}

    first = post(f"{base}/orders", _order(2), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-a", **auth})
    report.check(first.status == 201, f"first order: {first.status}")
    order_id = first.body["id"] if first.status == 201 else "missing"

    post_and_drop(f"{base}/orders", _order(1), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-b", **auth})
    time.sleep(1.0)  # the client's timeout, then its retry with the same key
    retry = post(f"{base}/orders", _order(1), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-b", **auth})
    report.check(retry.status == 201 and retry.replayed, f"retry after a lost response: {retry.status}, "
                                                          f"replayed={retry.replayed}")

    reuse = post(f"{base}/orders", _order(5), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-a", **auth})
    report.check(reuse.status == 422, f"same key, other payload: {reuse.status}")

    replies: list[Reply] = []
    barrier = threading.Barrier(4)

    def duplicate() -> None:
        barrier.wait()
        replies.append(post(f"{base}/orders", _order(3), {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-c", **auth}))

    threads = [threading.Thread(target=duplicate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(r.status for r in replies)
    ids = {r.body["id"] for r in replies if r.status == 201}
    report.check(set(statuses) <= {201, 409} and len(ids) == 1, f"4 concurrent duplicates: {statuses}, "
                                                                  f"{len(ids)} order id")

    payment = {"amount_cents": 1980, "currency": "EUR"}
    paid = [post(f"{base}/orders/{order_id}/payments", payment, {names.IDEMPOTENCY_KEY_HEADER: f"{run_id}-pay", **auth})
            for _ in range(2)]
    report.check([p.status for p in paid] == [200, 200] and paid[1].replayed and paid[0].body == paid[1].body,
                 f"payment captured twice: {[p.status for p in paid]}, second replayed={paid[1].replayed}")

    secret = sandbox.client("secretsmanager").get_secret_value(
        SecretId=_environment(sandbox, "/webhooks/github", names.WEBHOOK_SECRET_ARN_ENV))["SecretString"]
    push = json.dumps({"ref": "refs/heads/main", "after": f"{run_id}-head",
                       "repository": {"full_name": f"acme/{run_id}", "pushed_at": 1700000000}}).encode()
    signed = {"X-GitHub-Event": "push", "X-GitHub-Delivery": f"{run_id}-delivery", "X-GitHub-Hook-ID": "1",
              "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), push, hashlib.sha256).hexdigest()}
    hooks = [post(f"{base}/webhooks/github", push, signed) for _ in range(2)]
    report.check(all(200 <= h.status < 300 for h in hooks) and hooks[1].replayed,
                 f"webhook delivered twice: {[h.status for h in hooks]}, second replayed={hooks[1].replayed}")

    invoked = {k: n for k, n in sandbox.ledger.authorizers.items() if k.endswith(": invoked")}
    report.check(sum(invoked.values()) == 2, f"authorizer invoked once per token (result cached): {invoked}")

    settled = sandbox.settle(settle_seconds)
    report.check(settled, "queues drained and pollers idle")
    _effects(sandbox, report, orders_table, inventory_table, order_id, f"acme/{run_id}", f"{run_id}-head")
    _shipping(sandbox, report, _environment(sandbox, "/orders", "SHIPMENTS_TABLE"), report.effects["orders"])
    stored = ddb.get_item(TableName=orders_table, Key={"pk": {"S": f"order#{order_id}"}}).get("Item", {})
    report.check(stored.get("tenant", {}).get("S") == tenant,
                 f"tenant from the authorizer's context: {stored.get('tenant', {}).get('S')!r}")
    crashes = sum(n for k, n in sandbox.ledger.errors.items() if "InjectedCrash" in k)
    report.check(crashes == len(armed), f"consumers crashed after their effect, before acking: {crashes} "
                                        f"(armed: {', '.join(sorted(armed))})")


def _arm_crashes(sandbox: Sandbox, idempotency_table: str) -> set[str]:
    """Arm each fault of the scenario (see the module docstring) on this stack's pollers; the functions armed."""
    armed: dict[str, FunctionPool] = {}
    for poller in sandbox.pollers:
        spec = poller.pool.spec
        if spec.environment.get(names.TABLE_ENV) != idempotency_table:
            continue  # another stack's (the saga's outbox publisher has the same logical id)
        if spec.handler == names.OUTBOX_PUBLISHER_HANDLER:
            poller.pool.crash_once_after(PUBLISH_CRASH_POINT)
        elif hasattr(poller, "queue_url") or isinstance(poller, StreamPoller):
            poller.pool.crash_once_after(CRASH_POINT)
        else:
            continue
        armed[spec.logical_id] = poller.pool
    return set(armed)


def _effects(sandbox: Sandbox, report: Report, orders_table: str, inventory_table: str, order_id: str,
             repo: str, head: str) -> None:
    ddb = sandbox.client("dynamodb")
    orders = [i for i in ddb.scan(TableName=orders_table)["Items"] if i["pk"]["S"].startswith("order#")]
    stock = ddb.get_item(TableName=inventory_table, Key={"pk": {"S": f"sku#{SKU}"}})["Item"]
    paid = ddb.get_item(TableName=orders_table, Key={"pk": {"S": f"order#{order_id}"}}).get("Item", {})
    pushed = ddb.get_item(TableName=orders_table, Key={"pk": {"S": f"repo#{repo}"}}).get("Item", {})
    sqs = sandbox.client("sqs")
    dead = sum(int(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
                   ["Attributes"]["ApproximateNumberOfMessages"])
               for url in sandbox.dead_letter_queues())
    reserved = int(stock.get("reserved", {}).get("N", "0"))
    report.effects |= {"orders": len(orders), "units reserved": reserved,
                      "payments": 1 if paid.get("status", {}).get("S") == "PAID" else 0,
                      "order versions": int(paid.get("version", {}).get("N", "0")),
                      "webhook heads": 1 if pushed.get("head", {}).get("S") == head else 0,
                      "dead-lettered": dead}
    expected = {"orders": 3, "units reserved": 2 + 1 + 3, "payments": 1, "order versions": 2, "webhook heads": 1,
                "dead-lettered": 0}
    for name, value in expected.items():
        report.check(report.effects[name] == value, f"effect {name}: {report.effects[name]} (intents: {value})")


def _shipping(sandbox: Sandbox, report: Report, shipments_table: str, orders: int) -> None:
    """One shipment per order (the EventBridge rule target) and one notice per shipment (the stream consumer)."""
    items = sandbox.client("dynamodb").scan(TableName=shipments_table, ConsistentRead=True)["Items"]
    shipped = [int(i["shipped"]["N"]) for i in items if i["pk"]["S"].startswith("shipment#")]
    notices = [int(i["notices"]["N"]) for i in items if i["pk"]["S"].startswith("notice#")]
    report.effects |= {"shipments": sum(shipped), "shipping notices": sum(notices)}
    report.check(sum(shipped) == orders and set(shipped) <= {1},
                 f"effect shipments: {sum(shipped)} for {len(shipped)} orders (intents: {orders}, one each)")
    report.check(sum(notices) == orders and set(notices) <= {1},
                 f"effect shipping notices: {sum(notices)} for {len(notices)} shipments (intents: {orders}, one each)")
    delivered = sum(n for k, n in sandbox.ledger.events.items() if k.endswith(": delivered"))
    retried = sum(n for k, n in sandbox.ledger.events.items() if k.endswith(": failed, retried"))
    report.check(delivered >= orders and retried >= 1,
                 f"rule events: {delivered} delivered to shipping (the outbox republished some), {retried} retried "
                 "after a crash")
