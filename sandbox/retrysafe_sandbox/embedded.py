"""The embedded AWS: moto's threaded server on 127.0.0.1, with DynamoDB requests serialized.

moto's ``TransactWriteItems`` backs a table up with a deep copy and restores it when the
transaction is cancelled; two concurrent requests could then lose a committed write (and
detach stream readers from the restored table). DynamoDB transactions are serializable, so
the sandbox runs DynamoDB requests one at a time; other services (SQS long polls) stay concurrent.
moto also applies the actions of a transaction that it then cancels (to report every reason)
before restoring the tables, and those writes reach the table's stream: a cancelled duplicate's
outbox event would be published. The sandbox tries each transaction on copies of its tables
first and applies it only when that trial commits, so a cancelled transaction leaves no trace.
With a :class:`~.guard.Guard`, every request is first evaluated against its caller's IAM policies.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from .guard import Guard, middleware


def _all_or_nothing(original: Callable[[Any, list[dict[str, Any]]], None]) -> Callable[..., None]:
    """moto's ``transact_write_items``, tried first on stream-less copies of its tables (see the module doc)."""

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        names = {next(iter(item.values())).get("TableName") for item in transact_items}
        real = {name: backend.tables[name] for name in names if name in backend.tables}
        for name, table in real.items():
            trial = copy.deepcopy(table)
            trial.stream_shard = None
            backend.tables[name] = trial
        try:
            original(backend, transact_items)  # raises TransactionCanceledException when cancelled
        finally:
            backend.tables.update(real)
        original(backend, transact_items)

    transact_write_items.retrysafe_all_or_nothing = True  # type: ignore[attr-defined]
    return transact_write_items


class EmbeddedAws(ThreadedMotoServer):
    """``ThreadedMotoServer`` bound to 127.0.0.1 with serialized DynamoDB requests."""

    def __init__(self, port: int = 0, guard: Guard | None = None) -> None:
        super().__init__(ip_address="127.0.0.1", port=port, verbose=False)
        self._dynamodb = threading.Lock()
        self._guard = guard
        self._moto_transact: Callable[..., None] | None = None

    def stop(self) -> None:
        """Stop the server and give moto back its own ``transact_write_items`` (in-process tests use it too)."""
        super().stop()
        if self._moto_transact is not None:
            from moto.dynamodb.models import DynamoDBBackend

            DynamoDBBackend.transact_write_items = self._moto_transact  # type: ignore[method-assign]
            self._moto_transact = None

    def _server_entry(self) -> None:
        from moto.dynamodb.models import DynamoDBBackend

        if not getattr(DynamoDBBackend.transact_write_items, "retrysafe_all_or_nothing", False):
            self._moto_transact = DynamoDBBackend.transact_write_items
            DynamoDBBackend.transact_write_items = _all_or_nothing(self._moto_transact)  # type: ignore[method-assign]
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
