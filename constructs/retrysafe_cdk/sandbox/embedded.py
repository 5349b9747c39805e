"""The embedded AWS: moto's threaded server on 127.0.0.1, with DynamoDB requests serialized.

moto's ``TransactWriteItems`` backs a table up with a deep copy and restores it when the
transaction is cancelled; two concurrent requests could then lose a committed write (and
detach stream readers from the restored table). DynamoDB transactions are serializable, so
the sandbox runs DynamoDB requests one at a time; other services (SQS long polls) stay concurrent.
With a :class:`~.guard.Guard`, every request is first evaluated against its caller's IAM policies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from .guard import Guard, middleware


class EmbeddedAws(ThreadedMotoServer):
    """``ThreadedMotoServer`` bound to 127.0.0.1 with serialized DynamoDB requests."""

    def __init__(self, port: int = 0, guard: Guard | None = None) -> None:
        super().__init__(ip_address="127.0.0.1", port=port, verbose=False)
        self._dynamodb = threading.Lock()
        self._guard = guard

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)

        def serialized(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB_"):
                with self._dynamodb:
                    return list(app(environ, start_response))
            return app(environ, start_response)  # type: ignore[no-any-return]

        entry = serialized if self._guard is None else middleware(serialized, self._guard)
        self._server = make_server(self._ip_address, self._port, entry, True, request_handler=MotoRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever()
