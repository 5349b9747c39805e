"""The benchmark's DynamoDB model (:mod:`benchmarks.ddb_model`) over HTTP on 127.0.0.1, in a process of its own.

``make bench``'s socket variant points both libraries' clients at it (``AWS_ENDPOINT_URL_DYNAMODB``), so
every call pays what it pays in Lambda on the client side: urllib3's connection pool (kept alive
between calls, as in a warm container), the HTTP request on a real socket, reading and parsing the
reply. The server answers from another process, so its CPU is never in the client's
``time.thread_time``/``time.process_time``. No TLS (Lambda's HTTPS costs more than this measures).

``python -m benchmarks.ddb_server`` serves on a free port and prints it on its first line; ``GET /usage``
answers the calls and capacity units since the previous ``GET /usage`` (:class:`~benchmarks.ddb_model.Usage`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from benchmarks import workload
from benchmarks.ddb_model import DynamoModel

HOST = "127.0.0.1"
#: botocore's service-specific endpoint setting.
ENDPOINT_ENV = "AWS_ENDPOINT_URL_DYNAMODB"
MODEL = DynamoModel(workload.model_tables())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: botocore's pool reuses the connection, as in a warm Lambda
    disable_nagle_algorithm = True  # small replies go out at once (Nagle + delayed ACK would stall them 40 ms)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, headers, raw = MODEL.answer(self.headers["X-Amz-Target"], body)
        self._reply(status, headers, raw)

    def do_GET(self) -> None:
        if self.path != "/usage":
            self._reply(404, {"Content-Length": "0"}, b"")
            return
        raw = json.dumps(MODEL.reset_usage().as_dict()).encode()
        self._reply(200, {"Content-Type": "application/json", "Content-Length": str(len(raw))}, raw)

    def _reply(self, status: int, headers: dict[str, str], raw: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per request would cost the server more than answering."""


def main() -> None:
    """Serve until terminated; the port goes to stdout first."""
    server = ThreadingHTTPServer((HOST, 0), _Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


class ModelServer:
    """A running :mod:`benchmarks.ddb_server` process (``with ModelServer() as server``)."""

    def __init__(self) -> None:
        self._process = subprocess.Popen([sys.executable, "-m", "benchmarks.ddb_server"], stdout=subprocess.PIPE,
                                         text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if not line.isdigit():
            self.close()
            raise RuntimeError(f"the DynamoDB model server did not start (printed {line!r})")
        self.port = int(line)
        self.endpoint = f"http://{HOST}:{self.port}"

    def usage(self) -> dict[str, Any]:
        """The calls and units since the previous call (then counted from zero)."""
        connection = http.client.HTTPConnection(HOST, self.port, timeout=30)
        try:
            connection.request("GET", "/usage")
            response = connection.getresponse()
            result: dict[str, Any] = json.loads(response.read())
            return result
        finally:
            connection.close()

    def close(self) -> None:
        """Stop the server process (this one only)."""
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@contextlib.contextmanager
def pointed_at(endpoint: str) -> Iterator[None]:
    """Clients created inside send their DynamoDB calls to ``endpoint`` (botocore's ``AWS_ENDPOINT_URL_DYNAMODB``)."""
    import os

    previous = os.environ.get(ENDPOINT_ENV)
    os.environ[ENDPOINT_ENV] = endpoint
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENDPOINT_ENV, None)
        else:
            os.environ[ENDPOINT_ENV] = previous



if __name__ == "__main__":
    main()
