"""Lambda SnapStart: the store's client is made before the snapshot, and restored environments stay distinct.

With SnapStart, Lambda runs a version's init phase once, snapshots the microVM and resumes
every new execution environment of that version from the snapshot. What the init phase left
in process memory is then shared by all of them. For retrysafe that means:

- the DynamoDB client (botocore session, service model, endpoint, credentials provider) is
  created during init, so restored environments start with it (:meth:`DynamoStore.from_env`
  creates it in the init phase and calls :func:`register_snapstart`);
- no pooled connection may be carried over: one socket copied into many environments is
  stale in all of them. The client's connections are closed before the snapshot, and again
  after each restore (hooks of other libraries run around ours);
- the :mod:`random` module's generator state is process memory, identical in every restored
  environment, so it is reseeded from ``os.urandom`` after each restore. botocore draws its
  retry jitter from it: without the reseed, environments restored together would retry a
  throttled table in lockstep.

Owner tokens, writer tokens and intent instance ids come from ``os.urandom`` on every request
(:func:`retrysafe._engine.new_token`), never from state made during init: they do not depend on
the snapshot. Credentials need no hook: with SnapStart, Lambda gives the runtime container
credentials, which botocore refreshes before they expire.

The hooks are registered through ``snapshot_restore_py``, which exists in Lambda's Python
runtimes only; elsewhere :func:`register_snapstart` does nothing.
"""

from __future__ import annotations

import importlib
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._store import DynamoStore

_stores: list[DynamoStore] = []
_registered = False


def register_snapstart(store: DynamoStore) -> bool:
    """Prepare ``store`` for SnapStart; the runtime hooks are registered with Lambda on the first call.

    Returns whether the hooks exist (``snapshot_restore_py`` is importable: in Lambda's Python 3.12+
    runtimes). :meth:`DynamoStore.from_env` calls this during the init phase; call it yourself for a
    store you build and keep at module level.
    """
    global _registered
    if not any(known is store for known in _stores):
        _stores.append(store)
    if _registered:
        return True
    try:
        hooks = importlib.import_module("snapshot_restore_py")
    except ImportError:
        return False
    hooks.register_before_snapshot(before_snapshot)
    hooks.register_after_restore(after_restore)
    _registered = True
    return True


def before_snapshot() -> None:
    """Every registered store has its client, with no open connection."""
    for store in _stores:
        _close(store.client)


def after_restore() -> None:
    """Reseed :mod:`random` from the kernel and drop any connection made before the snapshot."""
    random.seed()
    for store in _stores:
        _close(store.client)


def _close(client: Any) -> None:
    close = getattr(client, "close", None)  # a botocore client; a stand-in without close() has nothing to close
    if callable(close):
        close()
