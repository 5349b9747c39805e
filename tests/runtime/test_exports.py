"""``retrysafe``'s top level: what users write, loaded lazily, with the lazy map and ``__all__`` in step."""

from __future__ import annotations

import ast
import importlib
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
    assert not set(exports) & set(retrysafe._MOVED)


@pytest.mark.parametrize("name", sorted(retrysafe.__all__))
def test_every_export_is_the_object_its_module_defines(name: str) -> None:
    module = importlib.import_module(retrysafe._EXPORTS[name])
    assert getattr(retrysafe, name) is getattr(module, name)
    assert name in dir(retrysafe)


@pytest.mark.parametrize("name", sorted(retrysafe._MOVED))
def test_names_no_longer_exported_still_import_with_a_deprecation_warning(name: str) -> None:
    module = importlib.import_module(retrysafe._MOVED[name])
    with pytest.warns(DeprecationWarning, match=f"import it from {module.__name__}"):
        value = getattr(retrysafe, name)
    assert value is getattr(module, name)
    assert name not in retrysafe.__all__


def test_engine_internals_are_not_exported() -> None:
    for internal in ("Intent", "Completion", "Outcome", "Scope", "Retention", "HttpIdempotency", "Publisher"):
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
