"""The embedded AWS: moto's server app on 127.0.0.1, behind the IAM guard and the moto adapter.

Requests pass the :class:`~.guard.Guard` first (a denied call never reaches moto), then
:func:`~.moto_adapter.adapted` (DynamoDB and DynamoDB Streams requests one at a time, transactions
all or nothing: see that module for the moto behaviours it relies on), then moto's own WSGI app,
served by werkzeug's threaded server as ``moto.server.ThreadedMotoServer`` serves it, but never on
another interface than 127.0.0.1.
"""

from __future__ import annotations

import threading

from werkzeug.serving import BaseWSGIServer, make_server

from .guard import Guard, middleware
from .moto_adapter import adapted, moto_app


class EmbeddedAws:
    """moto's services on ``127.0.0.1:port`` (0: a free port) on a daemon thread."""

    def __init__(self, port: int = 0, guard: Guard | None = None) -> None:
        from moto.moto_server.werkzeug_app import MotoRequestHandler

        app = adapted(moto_app())
        entry = app if guard is None else middleware(app, guard)
        self._server: BaseWSGIServer = make_server("127.0.0.1", port, entry, threaded=True,
                                                   request_handler=MotoRequestHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="embedded-aws", daemon=True)

    def start(self) -> None:
        """Serve (the socket is bound already: requests made from now on are answered)."""
        self._thread.start()

    def get_host_and_port(self) -> tuple[str, int]:
        """Where the embedded AWS listens."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def stop(self) -> None:
        """Stop serving and close the socket (requests in flight finish on their daemon threads)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
