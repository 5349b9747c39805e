"""Every option of ``@idempotent`` and ``@idempotent_function`` is a typed keyword: mypy refuses a misspelling."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT

USE = '''
from typing import Any
from retrysafe import Transaction, idempotent, idempotent_function

@idempotent(subscriber="n", kye="detail.order_id")
def handler(event: Any, context: Any, txn: Transaction) -> int:
    return 1

@idempotent_function(data_keyword_argument="order", subscriber="n", fingerprnt="total")
def charge(order: dict[str, Any]) -> int:
    return 1

@idempotent(subscriber="n", mode="atomic", key_required="no")
def other(event: Any, context: Any, txn: Transaction) -> int:
    return 1

answer: str = handler({}, None)

@idempotent(subscriber="n", key="id")
async def async_handler(event: Any, context: Any) -> int:
    return 1

@idempotent_function(data_keyword_argument="order", subscriber="n")
async def async_charge(order: dict[str, Any]) -> int:
    return 1

async_answer: str = async_handler({}, None)  # the Lambda handler returns the awaited result
not_awaited: int = async_charge(order={})  # the function stays awaitable
'''


def test_a_misspelled_or_mistyped_option_is_a_type_error(tmp_path: Path) -> None:
    from mypy import api

    source = tmp_path / "use.py"
    source.write_text(USE, encoding="utf-8")
    out, _, status = api.run([str(source), "--config-file", str(ROOT / "pyproject.toml"),
                              "--cache-dir", str(tmp_path / "cache"), "--no-incremental"])
    assert status == 1, out
    assert 'Unexpected keyword argument "kye" for "idempotent"' in out
    assert 'Unexpected keyword argument "fingerprnt" for "idempotent_function"' in out
    assert 'Argument "key_required" to "idempotent" has incompatible type "str"; expected "bool"' in out
    assert out.count('Incompatible types in assignment (expression has type "int", variable has type "str")') == 2
    assert ('Incompatible types in assignment (expression has type "Coroutine[Any, Any, int]", '
            'variable has type "int")') in out
