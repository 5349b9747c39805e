"""The outbox package's module paths: the new ones, and the old ones deployed functions still name."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest
from retrysafe.names import DEFAULT_EVENT_SOURCE, OUTBOX_INDEX

#: Old module -> the module it is an alias of, and the entry point deployed functions and runbooks name.
ALIASES = {
    "retrysafe.outbox_publisher": ("retrysafe.outbox.publisher", "handler"),
    "retrysafe.outbox_sweeper": ("retrysafe.outbox.sweeper", "handler"),
    "retrysafe.outbox_pipe": ("retrysafe.outbox.pipe", "handler"),
    "retrysafe.outbox_parked": ("retrysafe.outbox.parked", "main"),
}

#: The public names each old module had before the outbox became a package.
OLD_NAMES = {
    DEFAULT_EVENT_SOURCE: ["OUTBOX_KIND", "OUTBOX_PREFIX", "PARKED", "UNPUBLISHED_ATTRIBUTE", "UNPUBLISHED_SHARDS",
                         "OutboxEvent", "OutboxMessage", "event_id"],
    "retrysafe.outbox_publisher": ["BATCH_SIZE", "BUS_ENV", "DEFAULT_SOURCE", "KEY_ATTRIBUTE", "PARKED_METRIC",
                                   "QUEUE_ENV", "SOURCE_ENV", "TOPIC_ENV", "EventBridgeTarget", "OutboxMessage",
                                   "Publisher", "Refusal", "SnsTarget", "SqsTarget", "Target", "default_publisher",
                                   "handler", "outbox_inserts"],
    "retrysafe.outbox_sweeper": ["DEFAULT_SWEEP_AFTER_SECONDS", "INDEX_NAME", "SWEEP_AFTER_ENV", "TIME_RESERVE_MS",
                                 "SweepIncompleteError", "handler", "sweep", "sweep_after_seconds"],
    "retrysafe.outbox_pipe": ["UnreadableOutboxRecordError", "envelopes", "handler"],
    "retrysafe.outbox_parked": ["ParkedEvent", "list_parked", "main", "republish"],
}


@pytest.mark.parametrize(("old", "new", "entry"), [(old, new, entry) for old, (new, entry) in ALIASES.items()])
def test_each_old_path_resolves_to_the_same_callable_as_the_new_one(old: str, new: str, entry: str) -> None:
    old_entry = getattr(importlib.import_module(old), entry)
    assert callable(old_entry)
    assert old_entry is getattr(importlib.import_module(new), entry)


@pytest.mark.parametrize("old", ALIASES)
def test_an_alias_module_says_it_is_one(old: str) -> None:
    module = importlib.import_module(old)
    assert module.__doc__ is not None and module.__doc__.startswith("Alias of")


@pytest.mark.parametrize(("module", "names"), OLD_NAMES.items())
def test_the_old_modules_keep_every_public_name(module: str, names: list[str]) -> None:
    imported: ModuleType = importlib.import_module(module)
    assert [n for n in names if not hasattr(imported, n)] == []
    assert set(getattr(imported, "__all__", names)) >= set(names)


def test_an_old_name_is_the_same_object_as_the_new_one() -> None:
    from retrysafe import outbox_publisher, outbox_sweeper
    from retrysafe.outbox import _index as index, publisher, _stream as stream, sweeper, _targets as targets

    assert outbox_publisher.Publisher is publisher.Publisher
    assert outbox_publisher.SqsTarget is targets.SqsTarget
    assert outbox_publisher.outbox_inserts is stream.outbox_inserts
    assert outbox_sweeper.sweep is sweeper.sweep
    assert outbox_sweeper.INDEX_NAME == index.INDEX_NAME == OUTBOX_INDEX


@pytest.mark.parametrize("module", ["retrysafe.outbox_parked", "retrysafe.outbox.parked"])
def test_the_parked_command_runs_under_both_names(module: str) -> None:
    done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "republish" in done.stdout and "usage: python -m retrysafe.outbox.parked" in done.stdout


def test_importing_the_outbox_package_loads_no_publishing_side() -> None:
    """A handler's transaction imports ``retrysafe.outbox``: that must not pull in the publishing side or boto3."""
    code = ("import sys, retrysafe.outbox; "
            "print(sorted(m for m in sys.modules if m.startswith(('retrysafe.outbox.', 'boto'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    # The event format it needs lives in the core (retrysafe._events): no outbox submodule loads.
    assert done.stdout.strip() == "[]"
