"""botocore as Lambda's Python runtime has it: without awscrt.

This project's development environment installs awscrt for retrysafe's opt-in fast transport
(``retrysafe[crt]``). botocore imports ``awscrt.auth`` whenever it can (about 55 ms of CPU at import on
this machine) and then signs every request with awscrt's signers instead of its own. Lambda's Python
runtime ships botocore without awscrt, and neither a Powertools user nor a retrysafe user on the default
transport installs it, so every botocore-path measurement hides awscrt from botocore:

- :func:`hide_awscrt` for a fresh process measured from its first import (a cold start), for good;
- :func:`load_botocore_without_awscrt` for the benchmark's own process: botocore is loaded with awscrt
  hidden (its signers are botocore's own), then awscrt is visible again, for the fast transport's side.

Measured 2026-12-07 with awscrt installed and hidden, fresh processes: importing ``botocore.session`` took
189-202 ms of CPU with it and 126-143 ms without; CPU per request moved by a few percent on both sides.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any


class _HiddenAwscrt(importlib.abc.MetaPathFinder):
    """Makes ``import awscrt`` (and its submodules) fail as on a machine without it."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name == "awscrt" or name.startswith("awscrt."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: Lambda's runtime has no awscrt)",
                                      name=name)
        return None


_FINDER = _HiddenAwscrt()


def hide_awscrt() -> None:
    """Hide awscrt from every later import in this process (before botocore is imported)."""
    if "awscrt" in sys.modules or "botocore.compat" in sys.modules:
        raise RuntimeError("hide_awscrt() must run before botocore or awscrt is imported")
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def load_botocore_without_awscrt() -> None:
    """Import botocore with awscrt hidden, so it signs with its own signers as in Lambda; awscrt stays
    importable afterwards (for the fast transport's side). Does nothing where botocore is already loaded
    (a test process): :func:`require_botocore_without_awscrt` is what a measurement checks."""
    if "botocore.compat" in sys.modules:
        return
    hidden = _FINDER in sys.meta_path
    if not hidden:
        sys.meta_path.insert(0, _FINDER)
    try:
        import botocore.auth  # its signer table is chosen at import
        import botocore.compat  # noqa: F401
    finally:
        if not hidden:
            sys.meta_path.remove(_FINDER)


def require_botocore_without_awscrt() -> None:
    """Refuse to measure in a process whose botocore signs with awscrt: its figures would not be what users
    pay."""
    if botocore_uses_awscrt():
        raise RuntimeError("botocore was imported with awscrt before the benchmark could hide it")


def botocore_uses_awscrt() -> bool:
    """Whether this process's botocore loaded awscrt (and signs with it)."""
    compat = sys.modules.get("botocore.compat")
    return bool(getattr(compat, "HAS_CRT", False))
