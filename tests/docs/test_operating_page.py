"""docs/operating.md: every ``console`` block is a command line run here, and shows what it printed.

The blocks run in the page's order against the records of :mod:`tests.operating` (on moto, at the
page's fixed "now"), with the key files they read (``< key.txt``) holding those records' keys. A
change to the command line's output fails here until the page shows the new output.
"""

from __future__ import annotations

import re
import shlex

import pytest
from retrysafe import names
from retrysafe._store import DynamoStore

from tests.helpers import ROOT
from tests.operating import COMPLETED_ORDER, IN_FLIGHT, KEY, LAPSED, run, seed

PAGE = ROOT / "docs" / "operating.md"
CONSOLE = re.compile(r"^```console\n\$ (.*?)\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: The files the page's commands read their key from.
KEY_FILES = {"key.txt": KEY, "live-message-id.txt": IN_FLIGHT.scope.key, "lapsed-message-id.txt": LAPSED.scope.key}


def examples() -> list[tuple[str, str]]:
    return CONSOLE.findall(PAGE.read_text(encoding="utf-8"))


def test_the_page_shows_each_command() -> None:
    shown = {shlex.split(command)[1] for command, _ in examples()}
    assert shown == {"inspect", "reset", "list"}
    assert COMPLETED_ORDER.scope.record_id in PAGE.read_text(encoding="utf-8")


def test_each_example_prints_what_the_page_shows(store: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (names.SUBSCRIBER_ENV, names.LAMBDA_FUNCTION_NAME_ENV):
        monkeypatch.delenv(name, raising=False)
    seed(store)
    for command, shown in examples():
        words = shlex.split(command)
        stdin = ""
        if "<" in words:
            at = words.index("<")
            stdin = KEY_FILES[words[at + 1]]
            words = words[:at]
        assert words[0] == "retrysafe"
        ran = run(*words[1:], stdin=stdin)
        assert ran.out + ran.err == shown, f"docs/operating.md shows another output for: {command}"
