"""``import constructs`` is the PyPI package (site-packages), never something in this repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT, Synthesized


def _in_site_packages(path: str) -> bool:
    return "site-packages" in Path(path).parts and ROOT not in Path(path).parents or ".venv" in Path(path).parts


def test_inside_pytest() -> None:
    import constructs

    assert constructs.__file__ is not None
    assert "site-packages" in Path(constructs.__file__).parts
    assert not (ROOT / "constructs" / "__init__.py").exists()
    assert not (ROOT / "constructs.py").exists()


@pytest.mark.synth
def test_when_running_app_py_from_the_repo_root(example: Synthesized) -> None:
    # `python -v` reports where each module's code came from.
    sources = re.findall(r"code object from '([^']*/constructs/(?:__pycache__/)?__init__[^']*)'", example.log)
    assert sources, "the import trace of `python -v app.py` did not mention constructs"
    assert all("site-packages" in Path(source).parts for source in sources), sources
