"""The stream decorators' options are typed keyword-only parameters: a misspelled one is a mypy error."""

from __future__ import annotations

from pathlib import Path

from mypy import api

from tests.helpers import ROOT

USES = '''
from retrysafe import DynamoDBChange, KinesisMessage, Transaction, idempotent_dynamodb_stream, idempotent_kinesis


@idempotent_kinesis(subscriber="ledger", key="kinesis.data.id", fingerprint=lambda m: m.content)
def ledger(message: KinesisMessage, txn: Transaction) -> None: ...


@idempotent_dynamodb_stream(subscriber="index", skip_ttl_removals=True, mode="claim_first")
def index(change: DynamoDBChange, txn: Transaction) -> None: ...


def on_change(change: DynamoDBChange, txn: Transaction) -> None: ...


ledger({"Records": []}, None)
idempotent_kinesis(subscribr="ledger")
idempotent_dynamodb_stream(subscriber="index", skip_ttl_removal=True)
idempotent_kinesis(subscriber="ledger")(on_change)
'''


def test_misspelled_options_and_the_wrong_handler_are_type_errors(tmp_path: Path) -> None:
    module = tmp_path / "consumers.py"
    module.write_text(USES, encoding="utf-8")
    out, _, status = api.run([str(module), "--strict", "--no-error-summary",
                              "--config-file", str(ROOT / "pyproject.toml")])
    errors = [line.split(": error: ", 1)[1] for line in out.splitlines() if ": error: " in line]
    assert status == 1
    misspelled = 'Unexpected keyword argument "{}" for "{}"; did you mean "{}"?  [call-arg]'
    wrong = ('Argument 1 has incompatible type "Callable[[DynamoDBChange, Transaction], None]"; '
             'expected "Callable[[KinesisMessage, Transaction], Any] | Callable[[KinesisMessage], Any]"  [arg-type]')
    assert errors == [misspelled.format("subscribr", "idempotent_kinesis", "subscriber"),
                      misspelled.format("skip_ttl_removal", "idempotent_dynamodb_stream", "skip_ttl_removals"),
                      wrong], out
