"""One vocabulary: every adapter names the same idea with the same option, of the same type.

The options table in docs/getting-started.md is generated from these signatures
(``python -m tests.runtime.test_vocabulary`` prints it) and compared here, so it cannot drift.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import (
    IdempotencyMiddleware,
    ReplayHook,
    idempotent,
    idempotent_dynamodb_stream,
    idempotent_function,
    idempotent_http,
    idempotent_kinesis,
    idempotent_sqs,
    idempotent_task,
)
from retrysafe.webhook import WebhookReceiver

from tests.helpers import ROOT

#: Every public adapter, as the table's columns name it.
ADAPTERS: dict[str, Callable[..., Any]] = {
    "idempotent_http": idempotent_http,
    "IdempotencyMiddleware": IdempotencyMiddleware,
    "idempotent": idempotent,
    "idempotent_function": idempotent_function,
    "idempotent_sqs": idempotent_sqs,
    "idempotent_kinesis": idempotent_kinesis,
    "idempotent_dynamodb_stream": idempotent_dynamodb_stream,
    "idempotent_task": idempotent_task,
    "WebhookReceiver": WebhookReceiver,
}

#: One idea, one word, one type: the options more than one adapter has (``mode=None``: chosen by the
#: function's signature, where the adapter can tell).
SHARED: dict[str, str | tuple[str, ...]] = {
    "subscriber": "str | None",
    "tenant": ("Tenant[HttpRequest]", "Tenant[TaskRequest]"),  # one alias, of the adapter's request
    "operation": "str | None",
    "mode": ("Mode | str", "Mode | str | None"),
    "key": "Selector | None",
    "fingerprint": "Selector | None",
    "key_required": "bool",
    "lease_seconds": "float | None",
    "horizon_seconds": "int | None",
    "retry_hints": "bool",
    "powertools_cutover": "PowertoolsCutover | None",
    "serializer": "ResultSerializer[Any] | None",
    "on_replay": "ReplayHook | None",
    "store": "DynamoStore | None",
    "engine": "Engine | None",
}

#: Names that meant one of the ideas above before 0.1.0: none may come back.
RETIRED = ("namespace", "source", "visibility_timeout_seconds")


def options(adapter: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The keyword-only options of ``adapter`` (the decorated handler or provider left out)."""
    target = adapter.__init__ if inspect.isclass(adapter) else adapter  # type: ignore[misc]
    return {name: p for name, p in inspect.signature(target).parameters.items() if p.kind is p.KEYWORD_ONLY}


def table() -> str:
    """The options table of docs/getting-started.md."""
    per_adapter = {name: options(adapter) for name, adapter in ADAPTERS.items()}
    ordered = [*SHARED, *sorted({o for opts in per_adapter.values() for o in opts} - set(SHARED))]
    header = "| option | " + " | ".join(f"`{name}`" for name in ADAPTERS) + " |"
    rule = "|---" * (len(ADAPTERS) + 1) + "|"
    rows = [f"| `{option}` | " + " | ".join("✓" if option in per_adapter[name] else "–" for name in ADAPTERS) + " |"
            for option in ordered]
    return "\n".join([header, rule, *rows])


@pytest.mark.parametrize("name", ADAPTERS)
def test_shared_options_have_one_name_and_one_type(name: str) -> None:
    found = options(ADAPTERS[name])
    for option in RETIRED:
        assert option not in found, f"{name} still takes {option}="
    assert "subscriber" in found, f"{name} has no subscriber= (every adapter has one)"
    assert found["subscriber"].default is None, f"{name}: subscriber= must default to the deployed function"
    for option, annotation in SHARED.items():
        allowed = (annotation,) if isinstance(annotation, str) else annotation
        if option in found and annotation:
            assert found[option].annotation in allowed, (name, option, found[option].annotation)


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_adapter_takes_the_replay_hook(name: str) -> None:
    """``on_replay=`` on every adapter, one name and one type (issue 32, item 5)."""
    found = options(ADAPTERS[name])
    assert "on_replay" in found, f"{name} has no on_replay="
    assert found["on_replay"].default is None
    assert typing.get_type_hints(ADAPTERS[name].__init__ if inspect.isclass(ADAPTERS[name])  # type: ignore[misc]
                                 else ADAPTERS[name])["on_replay"] == ReplayHook | None


@pytest.mark.parametrize("name", ADAPTERS)
def test_no_option_is_required_but_what_names_the_argument(name: str) -> None:
    required = {o for o, p in options(ADAPTERS[name]).items() if p.default is inspect.Parameter.empty}
    assert required <= {"data_keyword_argument"}, (name, required)


def test_the_middleware_takes_the_decorators_options() -> None:
    assert options(IdempotencyMiddleware).keys() == options(idempotent_http).keys()


def test_every_annotation_resolves() -> None:
    for adapter in ADAPTERS.values():
        typing.get_type_hints(adapter.__init__ if inspect.isclass(adapter) else adapter)  # type: ignore[misc]


def test_getting_started_lists_every_adapters_options() -> None:
    page = (ROOT / "docs" / "getting-started.md").read_text()
    assert table() in page, "regenerate the table with: python -m tests.runtime.test_vocabulary"


def test_every_missing_shared_option_has_its_documented_reason() -> None:
    """A shared option an adapter lacks is a decision, said under the table: ``- `option`: why``."""
    page = (ROOT / "docs" / "getting-started.md").read_text()
    reasons = page.split("## Every adapter's options", 1)[1].split("\n## ", 1)[0]
    for option in SHARED:
        lacking = [name for name, adapter in ADAPTERS.items() if option not in options(adapter)]
        if lacking:
            assert f"\n- `{option}`: " in reasons, (option, lacking)
            why = reasons.split(f"\n- `{option}`: ", 1)[1].split("\n- `", 1)[0]
            for name in lacking:  # each lacking adapter is named in its reason, by the table's column name
                assert f"`{name}`" in why, (option, name)


def test_tenant_is_one_type_on_every_adapter_with_a_caller() -> None:
    """``tenant=`` is :data:`retrysafe.Tenant` of the adapter's request: a name, a callable of it, or ``None``."""
    from retrysafe import Tenant
    from retrysafe.http import HttpRequest
    from retrysafe.stepfunctions import TaskRequest

    expected = {"idempotent_http": Tenant[HttpRequest], "IdempotencyMiddleware": Tenant[HttpRequest],
                "WebhookReceiver": Tenant[HttpRequest], "idempotent_task": Tenant[TaskRequest]}
    for name, adapter in ADAPTERS.items():
        target = adapter.__init__ if inspect.isclass(adapter) else adapter  # type: ignore[misc]
        hints = typing.get_type_hints(target)
        if name in expected:
            assert hints["tenant"] == expected[name], name
            assert set(typing.get_args(hints["tenant"])) >= {str, type(None)}, name
        else:
            assert "tenant" not in hints, f"{name} has no authenticated caller"


if __name__ == "__main__":
    print(table())
