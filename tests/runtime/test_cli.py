"""The operator's command line on moto: inspect, reset and list records, by hash, never showing a key.

Every run goes through :func:`tests.operating.run`, which fails when the sentinel that every key and
stored answer holds appears in standard output, standard error or any log line (botocore's requests
included, at DEBUG).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from retrysafe import _cli, names
from retrysafe._keys import Scope
from retrysafe._record import COMPLETED, Record
from retrysafe._store import DynamoStore
from retrysafe.testing._boundary import attempts_of

from tests.helpers import TABLE, CallCounter
from tests.operating import (
    ANSWER,
    COMPLETED_ORDER,
    DAY,
    EXPIRED,
    HOUR,
    IN_FLIGHT,
    KEY,
    LAPSED,
    NOW,
    PARKED_RUN,
    PAYLOAD,
    SENTINEL,
    Example,
    claim,
    run,
    seed,
)


@pytest.fixture
def seeded(store: DynamoStore) -> DynamoStore:
    seed(store)
    return store


@pytest.fixture
def cli_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The DynamoDB calls of the store the command line builds (its own client, from ``--table``/the env)."""
    calls: Counter[str] = Counter()
    real = _cli._store

    def store(args: Any) -> DynamoStore:
        made = real(args)
        CallCounter(made.client, calls)  # at its transport's attempt seam
        return made

    monkeypatch.setattr(_cli, "_store", store)
    return calls


def before_attempts(client: Any, operation: str, action: Callable[[], None]) -> None:
    """Run ``action`` before every ``operation`` attempt ``client``'s transport sends (at its attempt seam)."""

    class Before:
        def before_attempt(self, called: str, params: Any) -> None:
            if called == operation:
                action()

        def after_attempt(self, called: str, params: Any, reply: Any, applied: bool) -> None:
            return None

    attempts_of(client).interceptors.append(Before())


def item(store: DynamoStore, record_id: str) -> dict[str, Any] | None:
    return store.get_item(record_id)


# -- inspect ---------------------------------------------------------------------------------------

def test_inspect_shows_a_completed_record_by_its_hash_never_the_key_or_answer(seeded: DynamoStore,
                                                                              cli_calls: Counter[str]) -> None:
    ran = run("inspect", *COMPLETED_ORDER.options, "--key-stdin", stdin=KEY + "\n")
    assert ran.status == 0, ran.err
    lines = dict(line.split(None, 1) for line in ran.out.splitlines())
    assert lines["record"] == COMPLETED_ORDER.scope.record_id
    assert lines["status"] == "completed" and lines["operation"] == "CreateOrder"
    assert lines["created"] == "2026-12-07T07:30:00Z" and lines["expires"].startswith("2026-12-14T07:30:00Z (in 6 d")
    assert lines["owner"] == "b7c1e0d2a9f84c3e" and "zlib" in lines["answer"]
    assert "(key not shown)" in lines["scope"] and "tenant='acme'" in lines["scope"]
    assert "lease" not in lines  # a completed record holds no lease
    assert dict(cli_calls) == {"GetItem": 1}
    # The logs checked for the key do hold the request (by the record's id).
    assert any("GetItem" in line and COMPLETED_ORDER.scope.record_id in line for line in ran.logs)


def test_inspect_json_reports_the_stored_sizes(seeded: DynamoStore) -> None:
    ran = run("inspect", *COMPLETED_ORDER.options, "--key-stdin", "--json", stdin=KEY)
    assert ran.status == 0, ran.err
    shown = json.loads(ran.out)
    stored = seeded.get_item(COMPLETED_ORDER.scope.record_id)
    assert stored is not None
    assert shown["record_id"] == COMPLETED_ORDER.scope.record_id and shown["status"] == "completed"
    assert shown["answer"] == {"stored_bytes": len(stored["rz"]["B"]), "compressed": True,
                               "json_bytes": len(json.dumps(ANSWER, separators=(",", ":")).encode())}
    assert shown["scope"] == {"adapter": "http", "subscriber": "orders-api", "tenant": "acme",
                              "operation": "CreateOrder"}
    assert shown["expires_in_seconds"] == 7 * DAY - 2 * 3600 and shown["lease_until"] is None


def test_inspect_tells_each_status(seeded: DynamoStore) -> None:
    seen = {}
    for example in (IN_FLIGHT, LAPSED, PARKED_RUN, EXPIRED):
        ran = run("inspect", *example.options, "--key", example.scope.key, "--json")
        assert ran.status == 0, ran.err
        seen[example.scope.operation, json.loads(ran.out)["status"]] = json.loads(ran.out)
    assert set(seen) == {("ChargeCard", "in-flight"), ("ChargeCard", "lapsed"), ("SendInvoice", "parked"),
                         ("CreateOrder", "expired")}
    assert seen["ChargeCard", "in-flight"]["lease_remaining_seconds"] == 40
    assert seen["CreateOrder", "expired"]["state"] == COMPLETED and seen["CreateOrder", "expired"][
        "expires_in_seconds"] < 0
    # The expired record's answer is stored uncompressed: botocore's wire log shows it (so the check that no
    # other log line and no output does, in run(), looks at logs that could hold it).
    assert any(PAYLOAD in line for line in run("inspect", *EXPIRED.options, "--key", EXPIRED.scope.key).logs)


def test_the_key_is_read_at_a_prompt_that_does_not_echo_it(seeded: DynamoStore,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    prompts: list[str] = []

    def getpass(prompt: str, stream: Any = None) -> str:
        prompts.append(prompt)
        return KEY

    monkeypatch.setattr("getpass.getpass", getpass)
    ran = run("inspect", *COMPLETED_ORDER.options, terminal=True)
    assert ran.status == 0, ran.err
    assert prompts == ["Idempotency key (not shown): "]
    assert COMPLETED_ORDER.scope.record_id in ran.out


def test_no_key_on_a_pipe_is_a_usage_error(seeded: DynamoStore) -> None:
    ran = run("inspect", *COMPLETED_ORDER.options)
    assert ran.status == 2 and "--key-stdin" in ran.err


def test_a_key_on_several_lines_is_refused_without_showing_it(seeded: DynamoStore) -> None:
    ran = run("inspect", *COMPLETED_ORDER.options, "--key-stdin", stdin=f"{KEY}\n{KEY}\n")
    assert ran.status == 2 and "more than one line" in ran.err


def test_not_found_names_what_may_differ_and_where_the_subscriber_came_from(
        seeded: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.SUBSCRIBER_ENV, raising=False)
    monkeypatch.setenv(names.LAMBDA_FUNCTION_NAME_ENV, "orders-api-7QX2")
    options = [option for option in COMPLETED_ORDER.options if option not in ("--subscriber", "orders-api")]
    ran = run("inspect", *options, "--key-stdin", stdin=KEY)
    assert ran.status == 1 and ran.out == ""
    assert "no record idem#" in ran.err and "subscriber=orders-api-7QX2" in ran.err
    assert "$AWS_LAMBDA_FUNCTION_NAME" in ran.err and "--adapter" in ran.err and "TTL" in ran.err
    # The same with the deployed function's subscriber finds it.
    monkeypatch.setenv(names.SUBSCRIBER_ENV, "orders-api")
    assert run("inspect", *options, "--key-stdin", stdin=KEY).status == 0


def test_a_key_given_without_key_is_not_repeated_in_the_usage_error(seeded: DynamoStore) -> None:
    ran = run("inspect", *COMPLETED_ORDER.options, KEY)  # run() fails if the key is in the output
    assert ran.status == 2 and "unrecognized arguments (not shown" in ran.err


def test_an_unknown_adapter_is_a_usage_error() -> None:
    ran = run("inspect", "--adapter", "kafka", "--operation", "X", "--key", KEY)
    assert ran.status == 2 and "invalid choice: 'kafka'" in ran.err


def test_no_table_is_a_usage_error_and_a_missing_table_a_store_failure(aws: None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(names.TABLE_ENV)
    ran = run("inspect", *COMPLETED_ORDER.options, "--key", KEY)
    assert ran.status == 2 and names.TABLE_ENV in ran.err
    ran = run("inspect", *COMPLETED_ORDER.options, "--key", KEY, "--table", "no-such-table")
    assert ran.status == 3 and "'no-such-table'" in ran.err and "does not exist" in ran.err


def test_no_region_is_an_aws_failure_in_botocores_words(aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    ran = run("inspect", *COMPLETED_ORDER.options, "--key", KEY)
    assert ran.status == 3 and "You must specify a region" in ran.err


def test_ctrl_c_at_the_prompt_is_status_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(prompt: str, stream: Any = None) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr("getpass.getpass", interrupted)
    ran = run("inspect", *COMPLETED_ORDER.options, terminal=True)
    assert ran.status == 130 and ran.err == "retrysafe: interrupted\n"


# -- reset -------------------------------------------------------------------------------------------

def test_reset_deletes_a_completed_record_with_one_conditional_delete(seeded: DynamoStore,
                                                                       cli_calls: Counter[str]) -> None:
    ran = run("reset", *COMPLETED_ORDER.options, "--key-stdin", "--yes", stdin=KEY)
    assert ran.status == 0, ran.err
    assert ran.out == (f"deleted {COMPLETED_ORDER.scope.record_id} (completed, operation CreateOrder, "
                       "owner b7c1e0d2a9f84c3e)\n")
    assert item(seeded, COMPLETED_ORDER.scope.record_id) is None
    assert dict(cli_calls) == {"GetItem": 1, "DeleteItem": 1}
    # The key is free: the next delivery claims it afresh.
    assert run("inspect", *COMPLETED_ORDER.options, "--key", KEY).status == 1


@pytest.mark.parametrize("example", [LAPSED, PARKED_RUN, EXPIRED], ids=lambda e: e.scope.operation)
def test_reset_deletes_a_lapsed_claim_a_parked_run_or_an_expired_record(seeded: DynamoStore, example: Any) -> None:
    ran = run("reset", *example.options, "--key", example.scope.key, "--yes", "--json")
    assert ran.status == 0, ran.err
    assert json.loads(ran.out)["deleted"] is True
    assert item(seeded, example.scope.record_id) is None


def test_reset_refuses_a_live_claim(seeded: DynamoStore, cli_calls: Counter[str]) -> None:
    ran = run("reset", *IN_FLIGHT.options, "--key", IN_FLIGHT.scope.key, "--yes")
    assert ran.status == 1 and "live claim" in ran.err and "in 40 s" in ran.err
    assert item(seeded, IN_FLIGHT.scope.record_id) is not None
    assert dict(cli_calls) == {"GetItem": 1}


def test_reset_keeps_a_claim_taken_over_between_its_read_and_its_delete(seeded: DynamoStore,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: the lapsed claim is read, then a retry takes it over before the delete; the delete is refused."""
    real = _cli._store

    def store(args: Any) -> DynamoStore:
        made = real(args)

        def take_over() -> None:
            claim(seeded, LAPSED, owner="a-retry-took-over", at=NOW, lease=60)

        before_attempts(made.client, "DeleteItem", take_over)
        return made

    monkeypatch.setattr(_cli, "_store", store)
    ran = run("reset", *LAPSED.options, "--key", LAPSED.scope.key, "--yes")
    assert ran.status == 1 and "changed since it was read" in ran.err and "a-retry-took-over" in ran.err
    kept = seeded.get(LAPSED.scope.record_id)
    assert kept is not None and kept.owner == "a-retry-took-over"


def test_reset_keeps_an_expired_record_claimed_afresh_meanwhile(seeded: DynamoStore,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    real = _cli._store

    def store(args: Any) -> DynamoStore:
        made = real(args)

        def new_intent() -> None:
            seeded.put_absent(Record(EXPIRED.scope.record_id, COMPLETED, "fp", int(NOW) + DAY, int(NOW * 1000),
                                     "CreateOrder", owner="the-new-intent", result={}), NOW)

        before_attempts(made.client, "DeleteItem", new_intent)
        return made

    monkeypatch.setattr(_cli, "_store", store)
    ran = run("reset", *EXPIRED.options, "--key", EXPIRED.scope.key, "--yes")
    assert ran.status == 1 and "now completed" in ran.err
    kept = seeded.get(EXPIRED.scope.record_id)
    assert kept is not None and kept.owner == "the-new-intent"


def test_reset_of_a_record_deleted_meanwhile_is_done(seeded: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gone between the read and the delete (another operator, or this delete's own retried attempt): the key
    runs again, which is what was asked."""
    real = _cli._store

    def store(args: Any) -> DynamoStore:
        made = real(args)

        def deleted() -> None:
            seeded.client.delete_item(TableName=TABLE, Key={names.PARTITION_KEY: {"S": LAPSED.scope.record_id}})

        before_attempts(made.client, "DeleteItem", deleted)
        return made

    monkeypatch.setattr(_cli, "_store", store)
    ran = run("reset", *LAPSED.options, "--key", LAPSED.scope.key, "--yes")
    assert ran.status == 0 and ran.out.startswith(f"deleted {LAPSED.scope.record_id} (lapsed")


def test_reset_asks_on_a_terminal_and_refuses_without_one(seeded: DynamoStore) -> None:
    options = [*COMPLETED_ORDER.options, "--key", KEY]
    ran = run("reset", *options)  # not a terminal, no --yes
    assert ran.status == 2 and "--yes" in ran.err
    ran = run("reset", *options, terminal=True, stdin="n\n")
    assert ran.status == 1 and "Delete idem#" in ran.err and "not confirmed" in ran.err
    assert item(seeded, COMPLETED_ORDER.scope.record_id) is not None
    ran = run("reset", *options, terminal=True, stdin="y\n")
    assert ran.status == 0 and ran.out.startswith("deleted idem#")
    assert item(seeded, COMPLETED_ORDER.scope.record_id) is None


def test_reset_of_a_missing_record_is_not_found(seeded: DynamoStore) -> None:
    ran = run("reset", *COMPLETED_ORDER.options, "--key", "another-key", "--yes")
    assert ran.status == 1 and "no record" in ran.err


# -- list ----------------------------------------------------------------------------------------------

def listed(*argv: str) -> list[dict[str, Any]]:
    ran = run("list", "--json", *argv)
    assert ran.status == 0, ran.err
    return [json.loads(line) for line in ran.out.splitlines()]


def test_list_selects_each_status(seeded: DynamoStore) -> None:
    expected = {"in-flight": [IN_FLIGHT], "lapsed": [LAPSED], "pending": [IN_FLIGHT, LAPSED],
                "parked": [PARKED_RUN], "completed": [COMPLETED_ORDER], "expired": [EXPIRED],
                "all": [COMPLETED_ORDER, IN_FLIGHT, LAPSED, PARKED_RUN, EXPIRED]}
    for state, examples in expected.items():
        rows = listed("--state", state)
        assert sorted(row["record_id"] for row in rows) == sorted(e.scope.record_id for e in examples), state
        if state not in ("all", "pending"):
            assert {row["status"] for row in rows} == {state}


def test_list_leaves_out_outbox_items(seeded: DynamoStore) -> None:
    seeded.client.put_item(TableName=TABLE, Item={names.PARTITION_KEY: {"S": names.OUTBOX_PREFIX + "e1"},
                                                  names.KIND_ATTRIBUTE: {"S": names.OUTBOX_KIND}})
    assert len(listed()) == 5


def test_list_pages_through_the_table_with_progress(seeded: DynamoStore, cli_calls: Counter[str]) -> None:
    for n in range(7):
        claim(seeded, Example(Scope("", "Bulk", f"{SENTINEL}-{n}", adapter="sqs")), owner=f"owner-{n}",
              at=NOW - HOUR, lease=60)
    ran = run("list", "--state", "lapsed", "--page-size", "2", "--progress")
    assert ran.status == 0, ran.err
    rows = ran.out.splitlines()
    assert rows[0].split() == ["RECORD", "STATUS", "OPERATION", "CREATED", "EXPIRES", "LEASE"]
    assert len(rows) == 1 + 8 and all(" lapsed " in row for row in rows[1:])
    scans = cli_calls["Scan"]
    assert scans >= 6  # 12 items, 2 a page (and an empty last page where the last full one gave a start key)
    assert ran.err.endswith(f"\rscanned 12 items in {scans} pages, 8 listed\n")


def test_list_stops_at_the_limit(seeded: DynamoStore, cli_calls: Counter[str]) -> None:
    ran = run("list", "--json", "--limit", "2", "--page-size", "1")
    assert ran.status == 0 and len(ran.out.splitlines()) == 2
    assert "stopped at --limit 2" in ran.err and "scanned" not in ran.err  # no progress on a pipe
    assert cli_calls["Scan"] == 2


def test_list_refuses_a_bad_limit() -> None:
    ran = run("list", "--limit", "0")
    assert ran.status == 2 and "not a positive whole number" in ran.err


def test_republishing_without_a_target_is_a_usage_error(store: DynamoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (names.EVENT_BUS_ENV, names.TOPIC_ENV, names.QUEUE_ENV):
        monkeypatch.delenv(name, raising=False)
    ran = run("outbox", "parked", "republish")
    assert ran.status == 2 and ran.err.startswith("retrysafe: error: ") and names.QUEUE_ENV in ran.err


# -- the entry points --------------------------------------------------------------------------------

def test_python_dash_m_retrysafe_runs_the_command_line() -> None:
    done = subprocess.run([sys.executable, "-m", "retrysafe", "--help"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: retrysafe ") and "exit status" in done.stdout
    for command in ("inspect", "reset", "list", "outbox"):
        assert command in done.stdout


def test_the_console_script_is_declared() -> None:
    import tomllib

    from tests.helpers import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"] == {"retrysafe": "retrysafe._cli:main"}


def test_importing_the_command_line_loads_no_aws_sdk_nor_the_engine() -> None:
    code = ("import sys, retrysafe._cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('boto', 'retrysafe._engine', 'retrysafe._store', "
            "'aws_lambda_powertools'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout.strip() == "[]"
