"""The migration guide's ports of Powertools' key options and idempotent functions, side by side on moto.

Each Powertools handler (``examples/snippets/powertools_keys_before.py``,
``powertools_functions_before.py``) and its port (``powertools_keys.py``,
``powertools_functions.py``) get the same events; the tests assert what each does, where they
agree and where retrysafe refuses what Powertools replays. :func:`test_each_port_changes_only_the_decorators_and_imports`
proves the ports are what the guide says: the code is the same once the imports, the decorator lines
and Powertools' configuration objects are set aside.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyValidationError
from retrysafe import DynamoStore, names
from retrysafe.errors import KeyReuseMismatchError
from retrysafe.testing._events import DrillContext

from tests.helpers import ROOT

SNIPPETS = ROOT / "examples" / "snippets"
#: (Powertools' file, its region) -> (the port's file, its region).
PORTS = [
    (("powertools_keys_before.py", "composite-before"), ("powertools_keys.py", "composite-after")),
    (("powertools_keys_before.py", "validation-before"), ("powertools_keys.py", "validation-after")),
    (("powertools_keys_before.py", "prefix-before"), ("powertools_keys.py", "prefix-after")),
    (("powertools_functions_before.py", "before"), ("powertools_functions.py", "after")),
    (("powertools_kinds_before.py", "batch-before"), ("powertools_batch_function.py", "batch-function-after")),
]


@pytest.fixture
def tables(powertools_table: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> DynamoStore:
    """Powertools' table and retrysafe's on moto, in the deployed function ``shop-v1``."""
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "shop-v1")
    return powertools_table


def cold_start(*names: str) -> list[ModuleType]:
    """Each snippet imported anew: a cold start of its function on this moto."""
    return [importlib.reload(importlib.import_module(f"examples.snippets.{name}")) for name in names]


@pytest.fixture
def keys(tables: DynamoStore) -> Iterator[list[ModuleType]]:
    yield cold_start("powertools_keys_before", "powertools_keys")


@pytest.fixture
def functions(tables: DynamoStore) -> Iterator[list[ModuleType]]:
    yield cold_start("powertools_functions_before", "powertools_functions")


def charges() -> int:
    from examples.snippets.payments import payments

    return payments.charge_count()


def payment(**fields: Any) -> dict[str, Any]:
    return {"user_id": "u-1", "product_id": "p-1", "amount": 10, **fields}


# -- composite keys -------------------------------------------------------------------------------------------


def test_a_composite_key_ports_and_only_retrysafe_refuses_another_payload_under_it(keys: list[ModuleType]) -> None:
    powertools, retrysafe = keys
    for module in keys:
        start = charges()
        first = module.subscribe(payment(), DrillContext())
        assert module.subscribe(payment(), DrillContext()) == first and charges() == start + 1
        assert module.subscribe(payment(product_id="p-2"), DrillContext()) != first and charges() == start + 2
    start = charges()
    # Another amount under the same user and product: Powertools answers with the first charge...
    assert powertools.subscribe(payment(amount=99), DrillContext())["subscription"] == "u-1/p-1"
    # ...retrysafe's default fingerprint is the whole event: it refuses, and nothing runs.
    with pytest.raises(KeyReuseMismatchError):
        retrysafe.subscribe(payment(amount=99), DrillContext())
    assert charges() == start


# -- payload validation ---------------------------------------------------------------------------------------


def test_payload_validation_ports_to_fingerprint(keys: list[ModuleType]) -> None:
    refusals = {"powertools": IdempotencyValidationError, "retrysafe": KeyReuseMismatchError}
    for name, module in zip(refusals, keys, strict=True):
        start = charges()
        first = module.pay(payment(), DrillContext())
        # a field outside the validated (fingerprinted) amount may change: the retry replays
        assert module.pay(payment(note="resent"), DrillContext()) == first and charges() == start + 1
        with pytest.raises(refusals[name]):  # another amount under the key is refused by both
            module.pay(payment(amount=11), DrillContext())
        assert charges() == start + 1


# -- key prefix -----------------------------------------------------------------------------------------------


def test_a_key_prefix_ports_to_subscriber_and_operation(keys: list[ModuleType],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    start = charges()
    for module in keys:
        module.renew(payment(), DrillContext())
        module.subscribe(payment(user_id="u-9"), DrillContext())
    assert charges() == start + 4
    # The function is deployed again under another name (a new stack, a rename).
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "shop-v2")
    for module in cold_start("powertools_keys_before", "powertools_keys"):
        before = charges()
        module.renew(payment(), DrillContext())  # the pinned prefix (subscriber and operation) keeps its records
        assert charges() == before
        module.subscribe(payment(user_id="u-9"), DrillContext())  # the default prefix is the function: runs again
        assert charges() == before + 1


# -- dataclass and pydantic functions -------------------------------------------------------------------------


def order_event(**fields: Any) -> dict[str, Any]:
    return {"order_id": 1, "sku": "sku-1", "description": "sample", **fields}


def test_functions_of_a_dataclass_and_a_pydantic_model_port(functions: list[ModuleType]) -> None:
    powertools, retrysafe = functions
    for module in functions:
        first = module.lambda_handler(order_event(), DrillContext())
        assert first == ["processed order 1", "processed model order 1"]
        assert module.lambda_handler(order_event(), DrillContext()) == first
        assert module.processed == ["order 1", "model order 1"]  # each function ran once
        module.lambda_handler(order_event(order_id=2), DrillContext())
        assert len(module.processed) == 4
    # The same order id with another description: Powertools replays (its key is all it compares)...
    assert powertools.lambda_handler(order_event(description="changed"), DrillContext())[0] == "processed order 1"
    # ...retrysafe fingerprints the whole argument by default (fingerprint="order_id" would replay).
    with pytest.raises(KeyReuseMismatchError):
        retrysafe.lambda_handler(order_event(description="changed"), DrillContext())
    assert len(retrysafe.processed) == 4


# -- only the decorator lines and the imports change ----------------------------------------------------------

#: Powertools' configuration objects, which the ports drop: ``persistence_layer = ...``, ``config = ...``.
_POWERTOOLS_SETUP = re.compile(r"^(persistence_layer|\w*config) = ")
#: Powertools' ``config.register_lambda_context(`` (any config's name): retrysafe's function of that name.
_REGISTERED = re.compile(r"\b\w*config\.register_lambda_context\(")


def code_lines(file: str, region: str) -> list[str]:
    """The region's lines without imports, decorator lines, Powertools' setup and blank lines; a
    registered Lambda context is retrysafe's ``register_lambda_context(context)`` in either."""
    text = (SNIPPETS / file).read_text()
    body = text.split(f"# --8<-- [start:{region}]\n", 1)[1].split(f"# --8<-- [end:{region}]", 1)[0]
    kept: list[str] = []
    depth = 0  # open parentheses of a statement being skipped
    for line in body.splitlines():
        stripped = line.strip()
        if depth:
            depth += line.count("(") - line.count(")")
            continue
        if stripped.startswith(("from ", "import ", "@idempotent")) or _POWERTOOLS_SETUP.match(line):
            depth = line.count("(") - line.count(")")
            continue
        if stripped:
            kept.append(_REGISTERED.sub("register_lambda_context(", line))
    return kept


@pytest.mark.parametrize(("before", "after"), PORTS, ids=lambda port: port[1])
def test_each_port_changes_only_the_decorators_and_imports(before: tuple[str, str], after: tuple[str, str]) -> None:
    ported = code_lines(*after)
    assert ported, after
    assert code_lines(*before) == ported
