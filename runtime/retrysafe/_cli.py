"""The operator's command line: ``retrysafe`` (the console script) or ``python -m retrysafe``.

``inspect`` shows one key's record, ``reset`` deletes it so the key runs again, ``list`` scans the
table for records by status, ``outbox parked list|republish`` handles the outbox events a target
refused. The page "Operating retrysafe" (docs/operating.md) shows each command's output.

The key is read from standard input (``--key-stdin``), from a prompt that does not echo it, or from
``--key``; it is hashed into the record id (:class:`~retrysafe._keys.Scope`) and never printed, logged,
sent to DynamoDB nor put into an error. Records are shown by their hashed id, and a record's stored
answer by its size only.

No Lambda handler imports this module, and importing it loads neither boto3 nor the engine: each
command imports what it uses when it runs.

Exit status: 0 done; 1 not found, refused or changed meanwhile (nothing deleted), or parked events
still refused; 2 a usage error (bad options, no key, no table, ``reset`` without ``--yes`` and no
terminal to confirm on); 3 DynamoDB or AWS failed (no access, no such table, throttled, no credentials);
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from . import names

if TYPE_CHECKING:
    from ._keys import Scope
    from ._record import AttributeMap, Record
    from ._store import DynamoStore

OK = 0
REFUSED = 1
USAGE = 2
STORE_FAILED = 3
INTERRUPTED = 130

#: What ``list --state`` selects. ``expired``: past ``exp``, absent for the engine though TTL has not deleted
#: it yet; the others are not expired. ``lapsed``: a claim whose lease ended (its next retry takes it over).
STATES = ("all", "pending", "in-flight", "lapsed", "completed", "parked", "expired")
#: The attributes ``list`` reads (never the stored answer).
_LISTED = {"#pk": names.PARTITION_KEY, "#st": "st", "#exp": names.TTL_ATTRIBUTE, "#ca": "ca", "#op": "op",
           "#ow": "ow", "#le": "le"}


class _Parser(argparse.ArgumentParser):
    """argparse, but an argument it does not know is not repeated: it may be a key typed without ``--key``."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            message = ("unrecognized arguments (not shown: one may be a key); give the key on standard input "
                       "with --key-stdin, at the prompt, or with --key")
        super().error(message)


class _UsageError(Exception):
    """Exit 2: the command line cannot be run as given."""


class _Refused(Exception):
    """Exit 1: not found, refused, or nothing done."""


def main(argv: Sequence[str] | None = None, *, clock: Callable[[], float] = time.time) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    ``clock`` is the time records are judged by (expired, lease lapsed): tests and the documentation's
    examples fix it.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2, explained on standard error)
        return stop.code if isinstance(stop.code, int) else USAGE
    out, err = sys.stdout, sys.stderr
    try:
        done: int = args.run(args, clock(), out, err)
        return done
    except _UsageError as error:
        print(f"retrysafe: error: {error}", file=err)
        return USAGE
    except _Refused as refused:
        print(f"retrysafe: {refused}", file=err)
        return REFUSED
    except KeyboardInterrupt:
        print("retrysafe: interrupted", file=err)
        return INTERRUPTED
    except Exception as error:  # AWS's and configuration errors are an exit status; a bug is re-raised
        status = _failure(error, err)
        if status is None:
            raise
        return status


def _failure(error: Exception, err: TextIO) -> int | None:
    """The exit status of an AWS or configuration failure (its message printed), ``None`` for a bug."""
    from botocore.exceptions import BotoCoreError, ClientError

    from .errors import ConfigurationError, StoreError

    if isinstance(error, StoreError | BotoCoreError | ClientError):
        print(f"retrysafe: DynamoDB or AWS failed: {error}", file=err)
        return STORE_FAILED
    if isinstance(error, ConfigurationError):
        print(f"retrysafe: error: {error}", file=err)
        return USAGE
    return None


# -- the parser ----------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="retrysafe", description="Look at and reset idempotency records, list them, handle parked outbox "
        "events. Credentials and region as for the AWS CLI (AWS_PROFILE, AWS_REGION...).",
        epilog="exit status: 0 done, 1 not found or refused, 2 usage error, 3 DynamoDB/AWS failed")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    table = _Parser(add_help=False)
    table.add_argument("--table", help=f"the idempotency table (default: ${names.TABLE_ENV})")
    table.add_argument("--region", help="its region (default: the AWS configuration's)")
    scope = _Parser(add_help=False, parents=[table])
    scope.add_argument("--adapter", required=True, choices=names.ADAPTERS, help="the kind of trigger")
    scope.add_argument("--operation", required=True, help="the operation name")
    scope.add_argument("--tenant", default="", help="the tenant (default: none, as for event consumers)")
    scope.add_argument("--subscriber", help=f"the consumer the records belong to (default: ${names.SUBSCRIBER_ENV}, "
                       f"else ${names.LAMBDA_FUNCTION_NAME_ENV}, else {names.LOCAL_SUBSCRIBER!r})")
    key = scope.add_mutually_exclusive_group()
    key.add_argument("--key-stdin", action="store_true", help="read the key from standard input (one line)")
    key.add_argument("--key", help="the key (visible in the shell's history and the process list: prefer "
                     "--key-stdin or the prompt)")
    as_json = _Parser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON for scripts")

    inspect = commands.add_parser("inspect", parents=[scope, as_json], help="show one key's record",
                                  description="Show one key's record by its hashed id (the key is never shown).")
    inspect.set_defaults(run=_inspect)
    reset = commands.add_parser("reset", parents=[scope, as_json], help="delete one key's record so it runs again",
                                description="Delete one completed, parked or expired record, or a claim whose "
                                "lease lapsed, so the key runs again; refused while a claim is live.")
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reset.set_defaults(run=_reset)
    listing = commands.add_parser("list", parents=[table, as_json], help="list records by status",
                                  description="Scan the table for idempotency records by status (a Scan reads "
                                  "the whole table: its read capacity is consumed).")
    listing.add_argument("--state", choices=STATES, default="all", help="which records (default: all)")
    listing.add_argument("--limit", type=_positive, help="stop after this many records")
    listing.add_argument("--page-size", type=_positive, help="items read per Scan request (default: 1 MB)")
    listing.add_argument("--progress", action="store_true",
                         help="show progress on standard error (the default when it is a terminal)")
    listing.set_defaults(run=_list)

    outbox = commands.add_parser("outbox", help="the outbox's parked events",
                                 description="The outbox events a target refused permanently.")
    parked = outbox.add_subparsers(dest="outbox", required=True, metavar="COMMAND").add_parser(
        "parked", help="list or republish parked events",
        description="List or republish parked outbox events, with the publisher's environment (its target "
        "variable: RETRYSAFE_EVENT_BUS, RETRYSAFE_TOPIC_ARN or RETRYSAFE_QUEUE_URL).")
    actions = parked.add_subparsers(dest="parked", required=True, metavar="COMMAND")
    actions.add_parser("list", parents=[table], help="one JSON line per parked event (no payload)",
                       description="Print one JSON line per parked event (no payload), oldest first."
                       ).set_defaults(run=_parked_list)
    again = actions.add_parser("republish", parents=[table], help="publish parked events again",
                               description="Publish parked events again (all, or the given ids); print the counts.")
    again.add_argument("event_ids", nargs="*", metavar="EVENT_ID")
    again.set_defaults(run=_parked_republish)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


# -- shared parts ----------------------------------------------------------------------------------

def _store(args: argparse.Namespace) -> DynamoStore:
    from ._store import DynamoStore

    table = args.table or os.environ.get(names.TABLE_ENV, "").strip()
    if not table:
        raise _UsageError(f"no table: pass --table or set {names.TABLE_ENV}")
    store = DynamoStore(table, region_name=args.region)
    store.client  # noqa: B018 - created now: no region or a bad profile fails here with botocore's own words
    return store


def _scope(args: argparse.Namespace) -> Scope:
    from ._adapter import deployed_function
    from ._keys import Scope

    subscriber = args.subscriber if args.subscriber is not None else deployed_function()
    return Scope(args.tenant, args.operation, _read_key(args), adapter=args.adapter, subscriber=subscriber)


def _read_key(args: argparse.Namespace) -> str:
    """The key, from ``--key``, standard input or a prompt that does not echo it; never in an error."""
    if args.key is not None:
        key: str = args.key
    elif args.key_stdin:
        key = sys.stdin.read()
        key = key.removesuffix("\n").removesuffix("\r")
        if "\n" in key:
            raise _UsageError("standard input holds more than one line: give the key alone")
    elif sys.stdin.isatty():
        import getpass

        key = getpass.getpass("Idempotency key (not shown): ", stream=sys.stderr)
    else:
        raise _UsageError("no key: give it on standard input with --key-stdin (or type it at the prompt, "
                          "or pass --key)")
    if not key:
        raise _UsageError("the key is empty")
    return key


def _scope_text(scope: Scope) -> str:
    return (f"adapter={scope.adapter} subscriber={scope.subscriber} tenant={scope.tenant!r} "
            f"operation={scope.operation}")


def _not_found(scope: Scope, args: argparse.Namespace) -> _Refused:
    if args.subscriber is not None:
        subscriber = "--subscriber"
    else:
        source = next((name for name in (names.SUBSCRIBER_ENV, names.LAMBDA_FUNCTION_NAME_ENV) if os.environ.get(name)),
                      None)
        subscriber = (f"--subscriber: {scope.subscriber!r} came from ${source}" if source else
                      f"--subscriber: {scope.subscriber!r} is the default outside Lambda; pass the deployed "
                      f"function's ${names.SUBSCRIBER_ENV} (the constructs set it), else its name")
    return _Refused(
        f"no record {scope.record_id} for {_scope_text(scope)} and the key given.\n"
        f"If the key was processed, one of these differs:\n  {subscriber}\n  --adapter, --tenant or --operation\n"
        "  the key (exactly as the handler saw it)\nor the record expired and TTL deleted it.")


def _status(record: Record, now: float) -> str:
    """How the engine sees ``record`` at ``now``: one of :data:`STATES` but ``all`` and ``pending``."""
    from ._record import PENDING

    if record.is_expired(now):
        return "expired"
    if record.state == PENDING:
        return "in-flight" if record.lease_remaining(now) > 0 else "lapsed"
    return record.state


def _when(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(seconds: float) -> str:
    """A duration as people read it (``6 d 23 h``, ``41 s``)."""
    seconds = abs(int(seconds))
    for unit, size, smaller, smaller_size in (("d", 86_400, "h", 3600), ("h", 3600, "min", 60),
                                              ("min", 60, "s", 1)):
        if seconds >= size:
            whole, rest = divmod(seconds, size)
            return f"{whole} {unit}" + (f" {rest // smaller_size} {smaller}" if rest // smaller_size else "")
    return f"{seconds} s"


def _relative(at: float, now: float) -> str:
    return f"in {_span(at - now)}" if at >= now else f"{_span(now - at)} ago"


def _summary(record: Record, now: float) -> dict[str, Any]:
    """What ``list`` shows of a record (and ``inspect`` begins with)."""
    lease = None if record.lease_until_ms is None else record.lease_until_ms / 1000
    return {"record_id": record.record_id, "status": _status(record, now), "operation": record.operation,
            "created_at": _when(record.created_at_ms / 1000), "expires_at": _when(record.expires_at),
            "lease_until": _when(lease), "owner": record.owner}


def _details(item: AttributeMap, now: float) -> dict[str, Any]:
    """What ``inspect`` shows: the summary, the fingerprint and the sizes (never the answer itself)."""
    import zlib

    from ._record import from_item, item_size

    record = from_item(item)
    answer: dict[str, Any] | None = None
    if "rz" in item:
        stored = bytes(item["rz"]["B"])
        answer = {"stored_bytes": len(stored), "compressed": True, "json_bytes": len(zlib.decompress(stored))}
    elif "r" in item:
        size = len(item["r"]["S"].encode("utf-8"))
        answer = {"stored_bytes": size, "compressed": False, "json_bytes": size}
    return {**_summary(record, now), "state": record.state, "expires_in_seconds": int(record.expires_at - now),
            "lease_remaining_seconds": (None if record.lease_until_ms is None
                                        else round(record.lease_until_ms / 1000 - now, 3)),
            "instance": record.instance, "fingerprint": record.fingerprint, "answer": answer,
            "resource": record.resource is not None, "checkpoints": sorted(record.checkpoints),
            "item_bytes": item_size(item)}


def _lines(details: dict[str, Any], now: float, scope: Scope) -> list[str]:
    """``inspect``'s text: one aligned line per field."""
    expires = details["expires_in_seconds"] + now
    status = details["status"]
    if status == "expired":
        status += f" (stored state {details['state']}; absent for the engine until TTL deletes it)"
    rows = [("record", details["record_id"]), ("scope", f"{_scope_text(scope)} (key not shown)"),
            ("status", status), ("operation", details["operation"]), ("created", details["created_at"]),
            ("expires", f"{details['expires_at']} ({_relative(expires, now)})")]
    if details["lease_until"] is not None:
        remaining = details["lease_remaining_seconds"]
        rows.append(("lease", f"{details['lease_until']} " + (f"({_span(remaining)} left)" if remaining > 0
                                                             else f"(lapsed {_span(-remaining)} ago)")))
    rows += [("owner", details["owner"] or "-"), ("fingerprint", details["fingerprint"] or "-")]
    answer = details["answer"]
    if answer is None:
        rows.append(("answer", "none stored"))
    elif answer["compressed"]:
        stored = f"{answer['stored_bytes']:,} bytes stored (zlib; {answer['json_bytes']:,} bytes of JSON)"
        rows.append(("answer", stored))
    else:
        rows.append(("answer", f"{answer['stored_bytes']:,} bytes stored"))
    if details["checkpoints"]:
        rows.append(("checkpoints", ", ".join(details["checkpoints"])))
    rows += [("resource", "set" if details["resource"] else "-"), ("item", f"{details['item_bytes']:,} bytes")]
    return [f"{label:<12} {value}" for label, value in rows]


# -- the commands ------------------------------------------------------------------------------------

def _inspect(args: argparse.Namespace, now: float, out: TextIO, err: TextIO) -> int:
    scope = _scope(args)
    item = _store(args).get_item(scope.record_id)
    if item is None:
        raise _not_found(scope, args)
    details = _details(item, now)
    if args.json:
        print(json.dumps({**details, "scope": {"adapter": scope.adapter, "subscriber": scope.subscriber,
                                               "tenant": scope.tenant, "operation": scope.operation}}), file=out)
    else:
        print("\n".join(_lines(details, now, scope)), file=out)
    return OK


def _reset(args: argparse.Namespace, now: float, out: TextIO, err: TextIO) -> int:
    from ._record import from_item
    from .errors import RecordConflict

    scope = _scope(args)
    store = _store(args)
    item = store.get_item(scope.record_id)
    if item is None:
        raise _not_found(scope, args)
    record = from_item(item)
    status = _status(record, now)
    if status == "in-flight":
        lease = (record.lease_until_ms or 0) / 1000
        raise _Refused(f"{record.record_id} is a live claim (its lease ends {_when(lease)}, in "
                       f"{_span(lease - now)}): an invocation may be running it. Nothing deleted; reset it "
                       "once the lease has lapsed.")
    if not args.yes:
        _confirm(f"Delete {record.record_id} ({status}, operation {record.operation}), so that the key runs "
                 "again on its next delivery? [y/N] ", err)
    try:
        store.delete_as_read(record)
    except RecordConflict as conflict:
        current = conflict.current
        if current is not None:
            raise _Refused(f"{record.record_id} changed since it was read (now {_status(current, now)}, owner "
                           f"{current.owner or '-'}): nothing deleted. Inspect it again.") from None
        # Gone: deleted meanwhile (or by this request's own retried attempt); the key runs again either way.
    deleted = {**_summary(record, now), "deleted": True}
    if args.json:
        print(json.dumps(deleted), file=out)
    else:
        print(f"deleted {record.record_id} ({status}, operation {record.operation}, owner {record.owner or '-'})",
              file=out)
    return OK


def _confirm(question: str, err: TextIO) -> None:
    """Ask on the terminal; a usage error without one (``--yes`` is then required)."""
    if not sys.stdin.isatty():
        raise _UsageError("reset asks for confirmation on a terminal: pass --yes to reset without one")
    print(question, end="", file=err, flush=True)
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise _Refused("not confirmed: nothing deleted")


def _filter(state: str, now: float) -> tuple[str, dict[str, str], AttributeMap]:
    """The ``Scan`` filter of ``--state`` at ``now`` (compared as :func:`_status` compares)."""
    from ._record import COMPLETED, PARKED, PENDING

    values: AttributeMap = {":prefix": {"S": names.RECORD_PREFIX}}
    terms = ["begins_with(#pk, :prefix)"]
    if state != "all":
        values[":now"] = {"N": repr(now)}
        terms.append("#exp < :now" if state == "expired" else "#exp >= :now")
    stored = {"pending": PENDING, "in-flight": PENDING, "lapsed": PENDING, "completed": COMPLETED,
              "parked": PARKED}.get(state)
    if stored is not None:
        values[":st"] = {"S": stored}
        terms.append("#st = :st")
    if state in ("in-flight", "lapsed"):
        values[":now_ms"] = {"N": repr(now * 1000)}
        terms.append("#le > :now_ms" if state == "in-flight" else "#le <= :now_ms")
    return " AND ".join(terms), dict(_LISTED), values


def _list(args: argparse.Namespace, now: float, out: TextIO, err: TextIO) -> int:
    from ._record import from_item

    store = _store(args)
    expression, attribute_names, values = _filter(args.state, now)
    progress = args.progress or err.isatty()
    start: AttributeMap | None = None
    scanned = pages = found = 0
    if not args.json:
        print(f"{'RECORD':<48} {'STATUS':<10} {'OPERATION':<24} {'CREATED':<20} {'EXPIRES':<20} LEASE", file=out)
    while args.limit is None or found < args.limit:
        items, start, read = store.scan_page(expression, attribute_names, values, projection=", ".join(_LISTED),
                                             page_size=args.page_size, start=start)
        pages += 1
        scanned += read
        for item in items[:None if args.limit is None else args.limit - found]:
            row = _summary(from_item(item), now)
            found += 1
            if args.json:
                print(json.dumps(row), file=out)
            else:
                print(f"{row['record_id']:<48} {row['status']:<10} {row['operation']:<24} {row['created_at']:<20} "
                      f"{row['expires_at']:<20} {row['lease_until'] or '-'}", file=out)
        if progress:
            print(f"\rscanned {scanned:,} items in {pages:,} pages, {found:,} listed", end="", file=err, flush=True)
        if start is None:
            break
    if progress:
        print(file=err)
    if start is not None:
        print(f"retrysafe: stopped at --limit {args.limit}; more records may match", file=err)
    return OK


def _parked_list(args: argparse.Namespace, now: float, out: TextIO, err: TextIO) -> int:
    from .outbox.parked import list_parked

    for parked in list_parked(_store(args)):
        print(json.dumps(parked.summary()), file=out)
    return OK


def _parked_republish(args: argparse.Namespace, now: float, out: TextIO, err: TextIO) -> int:
    from .outbox._targets import target_from_env
    from .outbox.parked import republish
    from .outbox.publisher import Publisher

    counts = republish(Publisher(target_from_env(), _store(args)), set(args.event_ids))
    print(json.dumps(counts), file=out)
    return OK if counts["parked"] == counts["failed"] == 0 else REFUSED
