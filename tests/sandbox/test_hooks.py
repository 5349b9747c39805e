"""The app's hooks: which scenarios ``demo`` runs and which authorization ``serve`` prints, from cdk.json or flags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from retrysafe_sandbox.hooks import HookError, Hooks

from examples.orders import scenario as orders
from examples.saga import scenario as saga
from tests.helpers import ROOT


def _cdk_json(tmp_path: Path, entry: object) -> Path:
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"app": "python app.py", "context": {"retrysafe_sandbox": entry}}))
    return path


def test_the_example_app_names_its_scenarios_in_cdk_json() -> None:
    hooks = Hooks.from_cdk_json(ROOT / "cdk.json")
    assert hooks.scenario_functions() == [orders.run, saga.run]
    assert hooks.authorization_function() is orders.authorization


def test_command_line_hooks_replace_the_cdk_json_ones() -> None:
    hooks = Hooks.from_cdk_json(ROOT / "cdk.json").replaced(["examples.saga.scenario:run"], None)
    assert hooks.scenario_functions() == [saga.run]
    assert hooks.authorization_function() is orders.authorization
    assert Hooks.from_cdk_json(ROOT / "cdk.json").replaced([], None) == Hooks.from_cdk_json(ROOT / "cdk.json")


def test_an_app_without_hooks_has_none(tmp_path: Path) -> None:
    assert Hooks.from_cdk_json(tmp_path / "absent.json") == Hooks()
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "python app.py", "context": {}}))
    hooks = Hooks.from_cdk_json(tmp_path / "cdk.json")
    assert hooks.scenario_functions() == [] and hooks.authorization_function() is None


@pytest.mark.parametrize(("entry", "message"), [
    (["examples.orders.scenario:run"], "context.retrysafe_sandbox must be an object, not list"),
    ({"scenarios": "examples.orders.scenario:run"}, "scenarios must be a list of 'module:function' strings"),
    ({"authorization": ["examples.orders.scenario:authorization"]}, "authorization must be a 'module:function'"),
])
def test_a_malformed_entry_is_named(tmp_path: Path, entry: object, message: str) -> None:
    with pytest.raises(HookError, match=message):
        Hooks.from_cdk_json(_cdk_json(tmp_path, entry))


@pytest.mark.parametrize(("name", "message"), [
    ("examples.orders.scenario", "expected 'module:function'"),
    ("examples.orders.nowhere:run", "No module named 'examples.orders.nowhere'"),
    ("examples.orders.scenario:nothing", "has no attribute 'nothing'"),
    ("examples.orders.scenario:SKU", "is not callable"),
])
def test_a_hook_that_cannot_be_loaded_is_named(name: str, message: str) -> None:
    with pytest.raises(HookError, match=message):
        Hooks(scenarios=(name,)).scenario_functions()


def test_demo_without_a_scenario_says_how_to_name_one(tmp_path: Path) -> None:
    # no sandbox is started: the hooks are loaded first
    empty = _cdk_json(tmp_path, {})
    demo = subprocess.run([sys.executable, "-m", "retrysafe_sandbox", "demo", "--cdk-json", str(empty),
                           "--assembly", str(tmp_path / "cdk.out")],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert demo.returncode == 2 and "demo: no scenario to run" in demo.stderr, demo.stderr
    assert "--scenario MODULE:FUNCTION" in demo.stderr
    bad = subprocess.run([sys.executable, "-m", "retrysafe_sandbox", "demo", "--cdk-json", str(empty),
                          "--scenario", "examples.orders.scenario:nothing"],
                         capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert bad.returncode == 2 and "'examples.orders.scenario:nothing'" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr


WITHOUT_EXTRA = """
import importlib.abc, runpy, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("moto", "joserfc"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
sys.argv = ["retrysafe_sandbox", *sys.argv[1:]]
runpy.run_module("retrysafe_sandbox", run_name="__main__")
"""


@pytest.mark.parametrize(("command", "missing"), [("demo", "moto, joserfc"), ("token", "joserfc")])
def test_without_the_sandbox_extra_the_command_says_what_to_install(tmp_path: Path, command: str,
                                                                     missing: str) -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_EXTRA, command, "--cdk-json", str(ROOT / "cdk.json")],
                          capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert f"{command}: needs {missing}, which the sandbox extra installs: pip install 'retrysafe[sandbox]'" in (
        done.stderr)
    assert "Traceback" not in done.stderr
