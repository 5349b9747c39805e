"""retrysafe.names: each wire-format name is defined once, resolves, and matches the documented table.

The scan (:func:`test_no_name_is_spelled_outside_its_definition`) reads every Python file of the
runtime, the constructs (the sandbox included), the examples, the benchmarks and the tests, and
fails on any string literal (f-string parts included) equal to one of the names' values, naming the
file and line: a copy that would silently diverge on a rename.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from retrysafe import metrics, names, stepfunctions
from retrysafe.webhook import _signatures as signatures

from tests.helpers import ROOT

SCANNED = ("runtime", "constructs", "examples", "benchmarks", "tests", "app.py")

#: Values too generic to scan: they are also ordinary words of other vocabularies, spelled
#: legitimately where they do not mean retrysafe's name (each is still imported from
#: retrysafe.names where it does, and pinned by the documentation table below).
GENERIC = {
    names.PARTITION_KEY: "also the partition key of the examples' and the tests' business tables",
    names.TTL_ATTRIBUTE: "also the JWT expiry claim (the sandbox's tokens)",
    names.COMMITTED_AT_ATTRIBUTE: "a common word",
    names.KIND_ATTRIBUTE: "a common word (attribute and parameter names)",
    names.OUTBOX_KIND: "also telemetry's operation label and plain text",
    names.SNS_TARGET: "also the boto3 service name",
    names.SQS_TARGET: "also the boto3 service name",
    names.EVENTBRIDGE_TARGET: "also a plain word in messages",
    names.TASK_EXECUTION: "a common word",
    names.CLAIM_CHECK_ENVELOPE_FIELD: "also the name of the attribute and keyword carrying the pointer in Python",
    names.HTTP_ADAPTER: "a common word (the URL scheme, the drills' path names)",
    names.WEBHOOK_ADAPTER: "a common word (the drills' path names, docs' page names)",
    names.EVENT_ADAPTER: "a common word (a Lambda handler's first parameter)",
    names.FUNCTION_ADAPTER: "a common word",
    names.KINESIS_ADAPTER: "also the boto3 service name and the record member of Kinesis events",
    names.DYNAMODB_STREAM_ADAPTER: "also a plain phrase in messages and the drills' path names",
    names.TASK_ADAPTER: "a common word (the drills' path names)",
    names.TASK_STATE: "a common word (a record's and a state machine's state)",
    names.TASK_STATE_MACHINE: "Step Functions' own word (the sandbox's execution history)",
    names.TASK_RETRY_COUNT: "Step Functions' own word (its context object)",
    names.TASK_INPUT: "a common word (Step Functions' execution input)",
    names.TASK_ITERATION: "a common word",
    **{provider: "a provider's name, also its signature class's name attribute"
       for provider in names.WEBHOOK_PROVIDERS},
}

#: Error names the Step Functions retry policies match: each is its exception class's ``__name__``.
ERROR_NAMES = {error.__name__ for error in (*stepfunctions.RETRIABLE_ERRORS, *stepfunctions.NON_RETRIABLE_ERRORS,
                                             stepfunctions.TaskInProgress)}

HEADERS = {names.IDEMPOTENCY_KEY_HEADER, names.REPLAYED_HEADER}

#: (file, values) that may spell a name, and why.
ALLOWED = {
    "runtime/retrysafe/names.py": ("every name", None),
    "runtime/retrysafe/metrics.py": ("the metric names' definition", set(metrics.METRIC_NAMES)),
    "runtime/retrysafe/__init__.py": (("export maps name the exception classes, and the module retrysafe.outbox "
                                       "(also the default event source)"), ERROR_NAMES | {names.DEFAULT_EVENT_SOURCE}),
    "tests/runtime/test_exports.py": ("lists the public modules (retrysafe.outbox: also the default event source)",
                                      {names.DEFAULT_EVENT_SOURCE}),
    "tests/runtime/test_layering.py": ("names the room retrysafe.outbox (also the default event source)",
                                       {names.DEFAULT_EVENT_SOURCE}),
    "tests/runtime/test_imports.py": ("names the module retrysafe.outbox (also the default event source)",
                                      {names.DEFAULT_EVENT_SOURCE}),
}
#: Folders whose files may spell the HTTP headers, and why.
ALLOWED_HEADERS = {
    "examples/snippets/": "code shown in the documentation: a request carries the header a user writes",
}


def defined_names() -> dict[str, object]:
    """Every public constant of retrysafe.names (``NAME -> value``)."""
    return {name: value for name, value in vars(names).items() if name.isupper()}


def scanned_values() -> dict[str, str]:
    """value -> where it is defined, for every value the scan looks for."""
    values: dict[str, str] = {}
    for name, value in defined_names().items():
        for item in value if isinstance(value, (tuple, dict)) else (value,):
            if isinstance(item, str) and item not in GENERIC:
                values.setdefault(item, f"retrysafe.names.{name}")
    values.update({value: "retrysafe.metrics" for value in metrics.METRIC_NAMES})
    values.update({value: f"the class retrysafe.errors.{value}" for value in ERROR_NAMES})
    return values


def python_files() -> Iterator[Path]:
    for entry in SCANNED:
        path = ROOT / entry
        yield from [path] if path.is_file() else sorted(path.rglob("*.py"))


def export_lists(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node inside an ``__all__ = [...]`` assignment."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                     for t in statement.targets):
            yield from ast.walk(statement.value)


def test_no_name_is_spelled_outside_its_definition() -> None:
    values = scanned_values()
    found = []
    for path in python_files():
        relative = path.relative_to(ROOT).as_posix()
        allowed = ALLOWED.get(relative)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
        exported = {id(node) for node in export_lists(tree)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values):
                continue
            if id(node) in exported and node.value in ERROR_NAMES:
                continue  # ``__all__`` names the class as a Python attribute, not as an error name
            if allowed is not None and (allowed[1] is None or node.value in allowed[1]):
                continue
            if node.value in HEADERS and relative.startswith(tuple(ALLOWED_HEADERS)):
                continue
            found.append(f"{relative}:{node.lineno}: {node.value!r} is {values[node.value]}")
    assert not found, "names spelled outside their definition (import them instead):\n" + "\n".join(found)


def test_the_scan_finds_a_copy(tmp_path: Path) -> None:
    """The scan's matching itself: a literal copy, and one inside an f-string, are found."""
    source = f'TABLE = "{names.TABLE_ENV}"\nkey = f"{names.OUTBOX_PREFIX}{{event_id}}"\ntext = "a {names.TABLE_ENV} b"\n'
    values = scanned_values()
    hits = [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values]
    assert sorted(hits) == [1, 2]


def resolve(path: str) -> object:
    module, attribute = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), attribute)


def test_every_handler_path_resolves_to_a_callable() -> None:
    assert set(names.HANDLERS) == {value for name, value in defined_names().items() if name.endswith("_HANDLER")}
    for path in names.HANDLERS:
        assert callable(resolve(path)), path


def test_webhook_providers_are_the_runtime_signature_schemes() -> None:
    assert sorted(names.WEBHOOK_PROVIDERS) == sorted(signatures.PROVIDERS)
    assert all(signatures.PROVIDERS[name]().name == name for name in names.WEBHOOK_PROVIDERS)


def test_the_names_module_and_the_constructs_import_no_sdk() -> None:
    """retrysafe.names imports nothing; the constructs load neither boto3/botocore nor Powertools."""
    tree = ast.parse((ROOT / "runtime" / "retrysafe" / "names.py").read_text(encoding="utf-8"))
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert [(node.module, [a.name for a in node.names]) for node in imports
            if isinstance(node, ast.ImportFrom)] == [("__future__", ["annotations"])]
    assert len(imports) == 1
    code = ("import sys, retrysafe_cdk, retrysafe_cdk.workflow, retrysafe_cdk.outbox, retrysafe_cdk.webhook; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('boto3', 'botocore', 'aws_lambda_powertools', 'moto')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"


def _render(value: object) -> str:
    return ", ".join(str(item) for item in value) if isinstance(value, (tuple, dict)) else str(value)


def documented_names() -> dict[str, str]:
    """The names the documentation lists: all but the tuples that only collect other names."""
    scalars = {value for value in defined_names().values() if not isinstance(value, (tuple, dict))}
    return {name: _render(value) for name, value in defined_names().items()
            if not (isinstance(value, tuple) and set(value) <= scalars)}


def test_the_documentation_lists_every_name_with_its_value() -> None:
    """docs/configuration.md's "Names and wire format" tables are the published wire format: a rename
    (which breaks what is deployed with the old value) must change them, deliberately."""
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = page.split("\n## Names and wire format\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z_]+)` \| `([^`]*)` \|", section, flags=re.MULTILINE)
    assert len(rows) == len(dict(rows))  # no name twice
    assert dict(rows) == documented_names()
    errors = re.findall(r"^\| (`[A-Za-z]+`(?:, `[A-Za-z]+`)*) \|", section, flags=re.MULTILINE)
    assert [sorted(re.findall(r"`(\w+)`", cell)) for cell in errors] == [
        sorted(error.__name__ for error in stepfunctions.NON_RETRIABLE_ERRORS), [stepfunctions.TaskInProgress.__name__],
        sorted(error.__name__ for error in stepfunctions.RETRIABLE_ERRORS)]
