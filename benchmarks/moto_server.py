"""Throughput against moto's server on 127.0.0.1: an informative line only.

moto's ``TransactWriteItems`` deep-copies every table it touches (for rollback), so this measures moto's
implementation as much as the libraries; the headline throughput is the latency model in ``bench``.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks import workload


def throughput(make_handler: Callable[[str, Any], Any], sides: tuple[str, ...], seconds_per_side: float,
               quiet: Callable[[], contextlib.AbstractContextManager[Any]], clients: int = 8,
               rounds: int = 10) -> dict[str, Any]:
    """Requests/s against moto's server on 127.0.0.1, 8 concurrent clients, half of the requests replays.

    moto's ``TransactWriteItems`` deep-copies every table it touches (for rollback), so its cost grows
    with the table; the tables are recreated before every slice so that both sides run on small tables.
    """
    import boto3
    from botocore.config import Config

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        _wait_for(port)
        config = Config(max_pool_connections=clients * 2, retries={"mode": "standard", "max_attempts": 2})
        client = boto3.client("dynamodb", region_name="eu-west-1", endpoint_url=endpoint, config=config)
        done: dict[str, int] = {s: 0 for s in sides}
        failed: dict[str, int] = {s: 0 for s in sides}
        elapsed: dict[str, float] = {s: 0.0 for s in sides}
        with quiet():
            handlers = {s: make_handler(s, client) for s in sides}
            for _ in range(rounds):
                for side in sides:
                    for name in (workload.TABLE, workload.ORDERS, workload.POWERTOOLS_TABLE):
                        with contextlib.suppress(client.exceptions.ResourceNotFoundException):
                            client.delete_table(TableName=name)
                    workload.create_tables(client)
                    n, errors, dt = _drive(handlers[side], clients, seconds_per_side / rounds)
                    done[side] += n
                    failed[side] += errors
                    elapsed[side] += dt
        rps = {s: done[s] / elapsed[s] for s in sides}
        return {"retrysafe": rps["retrysafe_atomic"], "retrysafe_claim_first": rps["retrysafe_claim_first"],
                "powertools": rps["powertools"], "ratio": rps["retrysafe_atomic"] / rps["powertools"],
                "ratio_claim_first": rps["retrysafe_claim_first"] / rps["powertools"], "clients": clients,
                "seconds_per_side": seconds_per_side, "server_errors": failed}
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:  # its request threads may hold keep-alive connections open
            server.kill()
            server.wait(5)


def _drive(handler: Any, clients: int, seconds: float) -> tuple[int, int, float]:
    """(answered requests, requests that failed with a 5xx or an exception, seconds)."""
    stop = time.monotonic() + seconds
    counts = [0] * clients
    failures = [0] * clients
    errors: list[BaseException] = []

    def client_loop(index: int) -> None:
        completed: list[str] = []
        ctx = workload.Context()
        i = 0
        try:
            while time.monotonic() < stop:
                if completed and i % 2:
                    key = completed[(i * 7919) % len(completed)]  # a replay of an earlier request
                else:
                    key = f"{index}-{uuid.uuid4()}"
                    completed.append(key)
                try:
                    ok = handler(workload.order_event(key), ctx)["statusCode"] < 500
                except Exception:  # noqa: BLE001 - Powertools raises where retrysafe answers 503/409 problem+json
                    ok = False
                counts[index] += ok
                failures[index] += not ok
                i += 1
        except BaseException as error:  # noqa: BLE001 - surfaced below: a benchmark must not hide failures
            errors.append(error)

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(counts), sum(failures), time.monotonic() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError("moto server did not start")


