"""The outbox's module paths: the handlers the constructs deploy, the runbook command, and what the core loads."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from retrysafe import names


@pytest.mark.parametrize("path", [names.OUTBOX_PUBLISHER_HANDLER, names.OUTBOX_SWEEPER_HANDLER,
                                  names.OUTBOX_PIPE_HANDLER])
def test_each_deployed_handler_path_is_a_callable_of_a_public_module(path: str) -> None:
    module, attribute = path.rsplit(".", 1)
    assert not any(part.startswith("_") for part in module.split("."))
    assert callable(getattr(importlib.import_module(module), attribute))


def test_the_parked_command_is_a_subcommand_of_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "retrysafe", "outbox", "parked", "--help"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "republish" in done.stdout and "usage: retrysafe outbox parked" in done.stdout
    # One command line: the module keeps its functions, not a command of its own.
    from retrysafe.outbox import parked

    assert not hasattr(parked, "main")


def test_a_handlers_transaction_loads_no_outbox_module() -> None:
    """``Transaction.append_event`` builds outbox items with the core's event format: the outbox room
    (publisher, targets, boto3) is not loaded by a handler that only appends events."""
    code = ("import sys, retrysafe._transaction; "
            "print(sorted(m for m in sys.modules if m.startswith(('retrysafe.outbox', 'boto'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
