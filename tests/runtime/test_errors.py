"""Every exception the runtime defines lives in ``retrysafe.errors``, under ``RetrysafeError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import retrysafe
from retrysafe import errors

#: Test tools, not runtime errors: ``DrillFailed`` is an ``AssertionError`` so pytest reports a failed
#: drill as a failed assertion; ``SimulatedCrash`` is a ``BaseException`` so no ``except Exception``
#: in the code under test can swallow the crash it simulates.
TESTING_PACKAGE = "retrysafe.testing"


def _runtime_modules() -> list[str]:
    names = ["retrysafe"]
    for info in pkgutil.walk_packages(retrysafe.__path__, "retrysafe."):
        if not info.name.startswith(TESTING_PACKAGE):
            names.append(info.name)
    return names


def _defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _runtime_modules():
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name
                    and not attribute.startswith("_")):
                found[f"{name}.{attribute}"] = value
    return found


def test_every_public_exception_is_defined_in_errors_under_the_base() -> None:
    found = _defined_exceptions()
    assert len(found) >= 20, found  # the walk did find the modules
    elsewhere = sorted(name for name, cls in found.items() if cls.__module__ != "retrysafe.errors")
    assert elsewhere == []
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, errors.RetrysafeError))
    assert outside == []


def test_errors_exports_exactly_its_exception_classes() -> None:
    defined = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == errors.__name__}
    assert set(errors.__all__) == defined
    assert errors.__all__ == sorted(errors.__all__)


def _drawn_tree() -> list[tuple[str, int]]:
    """(class name, depth) of each line of the tree drawn in the module docstring."""
    doc = errors.__doc__ or ""
    drawn = [("RetrysafeError", 0)] if "\n    RetrysafeError\n" in doc else []
    for line in doc.splitlines():
        if "── " in line:
            drawn.append((line.split("── ", 1)[1].split()[0], line.index("── ") // 4))
    return drawn


def test_the_errors_page_draws_the_whole_hierarchy() -> None:
    """The module docstring (the ``retrysafe.errors`` page of the API reference) draws the real tree."""
    drawn = _drawn_tree()
    assert sorted(name for name, _ in drawn) == errors.__all__
    parents: list[str] = []
    for name, depth in drawn:
        del parents[depth:]
        if parents:
            assert getattr(errors, name).__bases__[0] is getattr(errors, parents[-1]), name
        parents.append(name)


def test_a_malformed_event_is_still_a_400_problem() -> None:
    from retrysafe.http._problem import problem_for

    problem = problem_for(errors.MalformedRequestError("the event has no HTTP method"))
    assert problem is not None
    assert (problem.status, problem.slug) == (400, "malformed-request")
