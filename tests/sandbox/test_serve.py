"""``make sandbox`` as a user leaves it running: under load, Ctrl-C or SIGTERM stops it promptly, with its ledger,
and the console shows no traceback from the embedded AWS (or anything else) on the way.

``python -m retrysafe_sandbox serve`` runs in its own process group, as a terminal runs ``make sandbox``;
the signal goes to the whole group, as Ctrl-C does. The only time bound is the one asserted: a stop
within ``STOP_SECONDS`` (generous for a loaded 2-CPU machine; the prompt is "a few seconds").
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from retrysafe import names
from retrysafe_sandbox.scenarios import post, post_and_drop

from tests.helpers import ROOT

STOP_SECONDS = 30
START_SECONDS = 300
CLIENTS = 8


@dataclass
class Console:
    """Everything ``serve`` printed (stdout and stderr, as a terminal shows them), read as it comes."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)

    def read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("Ctrl-C to stop."):
                self.ready.set()
        self.ready.set()  # ended before it was ready: the test reads why from the lines

    @property
    def text(self) -> str:
        return "".join(self.lines)


@pytest.fixture
def serve(example_assembly: Path, tmp_path: Path) -> Iterator[tuple[Console, str]]:
    """``serve`` started in its own process group on the free port it binds (``--port 0``: no other test or
    pytest-xdist worker can take it between a probe and the bind), answering; killed if a test left it running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "retrysafe_sandbox", "serve", "--assembly", str(example_assembly), "--port", "0",
         "--visibility-timeout", "5", "--logs", str(tmp_path / "logs")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, process_group=0)
    console = Console(process)
    reader = threading.Thread(target=console.read, daemon=True)
    reader.start()
    try:
        assert console.ready.wait(START_SECONDS) and process.poll() is None, console.text
        first_api = re.search(r"^API: (http://127\.0\.0\.1:\d+) ", console.text, re.MULTILINE)
        assert first_api is not None, console.text
        base = first_api.group(1)
        assert post(f"{base}/orders", {}, {names.IDEMPOTENCY_KEY_HEADER: "k"}).status == 401  # no token: the authorizer
        yield console, base
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        reader.join(timeout=STOP_SECONDS)


def _load(base: str, authorization: str, halt: threading.Event, answered: list[int]) -> None:
    """Orders with shared keys (duplicates race each other's claims), some hung up on before their answer."""
    for n in range(10_000):
        if halt.is_set():
            return
        key = {names.IDEMPOTENCY_KEY_HEADER: f"load-{n // 3}", "Authorization": authorization}
        order = {"customer": "c-1", "items": [{"sku": "widget", "quantity": 1, "price": "9.90"}]}
        try:
            if n % 5 == 4:
                post_and_drop(f"{base}/orders", order, key)
            else:
                answered.append(post(f"{base}/orders", order, key).status)
        except (OSError, urllib.error.URLError):
            return  # the sandbox stopped under us: what the test is about


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_to_its_process_group_stops_it_under_load_with_the_ledger(
        serve: tuple[Console, str], stop: signal.Signals) -> None:
    console, base = serve
    [authorization] = re.findall(r"-H 'Authorization: (Bearer [^']+)'", console.text)
    halt, answered = threading.Event(), []
    clients = [threading.Thread(target=_load, args=(base, authorization, halt, answered), daemon=True)
               for _ in range(CLIENTS)]
    for client in clients:
        client.start()
    while len(answered) < 4 * CLIENTS and any(c.is_alive() for c in clients):
        halt.wait(0.2)
    assert len(answered) >= 4 * CLIENTS and set(answered) <= {200, 201, 409}, answered

    os.killpg(console.process.pid, stop)  # while the clients are still sending
    try:
        console.process.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"serve did not stop within {STOP_SECONDS} s of {stop.name}:\n{console.text[-4000:]}")
    finally:
        halt.set()
    for client in clients:
        client.join()
    out = console.text
    assert console.process.returncode == 0, out[-4000:]
    ledger = out[out.index("\nledger\n"):]
    assert re.search(r"requests\s+POST /orders -> 201 \d+", ledger), ledger
    assert "Traceback" not in out and "Exception in thread" not in out, out
