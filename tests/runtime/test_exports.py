"""``retrysafe``'s top level: what users write, loaded lazily, with the lazy map and ``__all__`` in step."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import retrysafe

INIT = Path(retrysafe.__file__)


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the imports under ``if TYPE_CHECKING:`` in ``retrysafe/__init__.py``."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(node for node in tree.body
                 if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names:
            found[alias.asname or alias.name] = f"retrysafe.{node.module}"
    return found


def test_the_lazy_map_the_type_checking_imports_and_all_name_the_same_things() -> None:
    exports = retrysafe._EXPORTS
    assert sorted(exports) == sorted(retrysafe.__all__)
    assert _type_checking_imports() == exports


@pytest.mark.parametrize("name", sorted(retrysafe.__all__))
def test_every_export_is_the_object_its_module_defines(name: str) -> None:
    module = importlib.import_module(retrysafe._EXPORTS[name])
    assert getattr(retrysafe, name) is getattr(module, name)
    assert name in dir(retrysafe)


def test_engine_internals_are_not_exported() -> None:
    for internal in ("Intent", "Completion", "Outcome", "Retention", "HttpIdempotency", "Publisher"):
        assert internal not in retrysafe.__all__
    with pytest.raises(AttributeError):
        retrysafe.no_such_name  # noqa: B018


def test_importing_the_package_loads_none_of_its_modules() -> None:
    """Lazy: ``import retrysafe`` (and a star import's names) cost nothing until a handler uses them."""
    code = ("import sys, retrysafe; "
            "print(sorted(m for m in sys.modules if m.startswith(('retrysafe.', 'boto3', 'botocore'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=INIT.parents[2])
    assert loaded.stdout.strip() == "[]"


#: The public modules of 0.1.0: what users import. Everything else has a leading underscore (the implementation).
PUBLIC_MODULES = {
    "retrysafe", "retrysafe.errors", "retrysafe.names", "retrysafe.metrics", "retrysafe.http", "retrysafe.sqs",
    "retrysafe.stepfunctions", "retrysafe.webhook", "retrysafe.outbox", "retrysafe.outbox.publisher",
    "retrysafe.outbox.sweeper", "retrysafe.outbox.pipe", "retrysafe.outbox.parked", "retrysafe.streams",
    "retrysafe.testing",
}
#: Module paths that were never released and must not come back.
REMOVED_ALIASES = ["retrysafe.outbox_publisher", "retrysafe.outbox_sweeper", "retrysafe.outbox_pipe",
                   "retrysafe.outbox_parked", "retrysafe.workflow"]


def test_the_public_modules_are_the_listed_set() -> None:
    found = {"retrysafe"} | {module.name for module in pkgutil.walk_packages(retrysafe.__path__, "retrysafe.")
                             if not any(part.startswith("_") for part in module.name.split("."))}
    assert found == PUBLIC_MODULES


@pytest.mark.parametrize("name", sorted(PUBLIC_MODULES))
def test_every_public_module_declares_its_names_and_each_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} has no __all__"
    assert len(set(exported)) == len(exported)
    for attribute in exported:
        value = getattr(module, attribute)
        defined_as_this_name = getattr(value, "__name__", None) == attribute  # not a value such as default_tenant
        if (inspect.isclass(value) or inspect.isfunction(value)) and defined_as_this_name:
            assert inspect.getdoc(value), f"{name}.{attribute} has no docstring"


@pytest.mark.parametrize("name", REMOVED_ALIASES)
def test_no_alias_module_imports(name: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)
