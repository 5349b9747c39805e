"""The printed summary, ``RESULTS.md`` and the chart, from one run's results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NAMES = {"first_cpu": "first-request CPU", "replay_cpu": "replay CPU, same container",
         "replay_cpu_other": "replay CPU, another container", "cold_start": "cold start (import + first call, CPU)",
         "throughput_5": "throughput, 5% replays, same container",
         "throughput_5_other": "throughput, 5% replays, another container",
         "throughput_50": "throughput, 50% replays, same container",
         "throughput_50_other": "throughput, 50% replays, another container",
         "sqs_redelivery_cpu": "SQS redelivery at a cold container (receive count 2)"}
COLUMNS = ("retrysafe_atomic", "retrysafe_claim_first", "powertools")


def summary(r: dict[str, Any], targets: dict[str, tuple[float, str]]) -> str:
    """The ratio lines ``make bench`` prints last."""
    ratio, met = r["ratios"], r["targets_met"]
    lines = ["", "retrysafe (atomic) / Powertools, this run:"]
    for name, (target, op) in targets.items():
        lines.append(f"  {NAMES[name]:<42} {ratio[name]:5.2f}   target {op} {target:<5} "
                     f"{'met' if met[name] else 'NOT met'}")
    lines.append(f"  {'first-request / replay CPU, validating client':<42} {ratio['first_cpu_validating']:5.2f} / "
                 f"{ratio['replay_cpu_validating']:.2f}  (retrysafe on a client like Powertools')")
    lines.append(f"  {'cold start, wall clock (informative)':<42} {ratio['cold_start_wall']:5.2f}")
    lines.append(f"  {'latency-model throughput, 0% replays':<42} {ratio['throughput_0']:5.2f}")
    bounds = r["latency_model"]
    lines.append(f"  best possible throughput ratio (zero retrysafe CPU): {bounds['ratio_bound_5']:.2f} at 5%, "
                 f"{bounds['ratio_bound_50']:.2f} at 50% replays (same container); {bounds['ratio_bound_5_other']:.2f} "
                 f"and {bounds['ratio_bound_50_other']:.2f} (another container)")
    b = r["first_request_budget_us"]
    lines.append(f"  first request with zero CPU around the handler: {b['floor_ratio']:.2f}; the target leaves "
                 f"{b['budget']:.0f} µs for retrysafe's work around it, which took {b['around_handler']:.0f} µs")
    sock = r["socket"]
    lines.append("retrysafe (atomic) / Powertools over a socket (127.0.0.1, keep-alive), this run:")
    for name, (target, op) in targets.items():
        lines.append(f"  {NAMES[name]:<42} {sock['ratios'][name]:5.2f}   target {op} {target:<5} "
                     f"{'met' if sock['targets_met'][name] else 'NOT met'}")
    t = sock["transport"]["ratios"]
    lines.append(f"retrysafe (atomic) on the fast transport (awscrt) / on botocore, socket: first request {t['first_cpu']:.2f}, "
                 f"cold start {t['cold_start']:.2f} (bar <= {sock['transport']['target']:g}: "
                 f"{'met' if sock['transport']['target_met'] else 'NOT met'})")
    m = r["machine"]
    lines.append(f"  load average before/after: {m['load_average_before'][0]:.2f} / {m['load_average_after'][0]:.2f} "
                 f"on {m['cpus']} CPUs")
    return "\n".join(lines)


def chart(r: dict[str, Any], path: Path) -> str | None:
    """A four-panel bar chart; ``None`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    cpu, tput, units, cold = r["cpu_us"], r["latency_model"], r["round_trips_and_units"], r["cold_start"]
    labels = ["retrysafe\natomic", "retrysafe\nclaim-first", "Powertools"]
    colors = ["#2b7a78", "#3aafa9", "#999999"]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.9))
    replay_labels = ["atomic,\nsame\ncontainer", "atomic,\nanother\ncontainer", "claim-first,\nanother\ncontainer",
                     "Powertools"]
    replays = [cpu["retrysafe_atomic"]["replay_median"], cpu["retrysafe_atomic"]["replay_other_median"],
               cpu["retrysafe_claim_first"]["replay_other_median"], cpu["powertools"]["replay_median"]]
    panels = [
        ("CPU per first request (µs, median)", labels, [cpu[s]["first_median"] for s in COLUMNS], colors),
        ("CPU per replay (µs, median)", replay_labels, replays, [colors[0], colors[0], colors[1], colors[2]]),
        ("Requests/s, latency model, 5% replays\n(same container)", labels, [tput[s]["rps_5"] for s in COLUMNS], colors),
        ("Write units, first request", labels, [units[s]["first"]["wcu"] for s in COLUMNS], colors),
    ]
    for ax, (title, names, values, palette) in zip(axes, panels, strict=True):
        bars = ax.bar(names, values, color=palette)
        ax.bar_label(bars, fmt="%.1f")
        ax.set_title(title, fontsize=10)
    fig.suptitle(f"Cold start (import + first call, CPU median): retrysafe {cold['retrysafe']['cpu_median_ms']:.0f} ms, "
                 f"Powertools {cold['powertools']['cpu_median_ms']:.0f} ms", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _row(label: str, values: list[str]) -> str:
    return f"| {label} | " + " | ".join(values) + " |"


def markdown(r: dict[str, Any], chart_name: str | None, targets: dict[str, tuple[float, str]]) -> str:
    """``RESULTS.md``."""
    cpu, cold, tput, trips, sizes = (r["cpu_us"], r["cold_start"], r["latency_model"], r["round_trips_and_units"],
                                     r["record_bytes"])
    ratio, met, v, m = r["ratios"], r["targets_met"], r["versions"], r["machine"]
    sock = r["socket"]
    target_rows = "\n".join(
        f"| {NAMES[n]} | **{ratio[n]:.2f}** ({'met' if met[n] else '**not met**'}) | "
        f"**{sock['ratios'][n]:.2f}** ({'met' if sock['targets_met'][n] else '**not met**'}) | {op} {t} |"
        for n, (t, op) in targets.items())
    calls = "\n".join(_row(label, [" + ".join(_short(trips[s][k] if k == "in_flight_duplicate" else trips[s][k]["calls"]))
                                   or "none" for s in COLUMNS])
                      for label, k in (("first request", "first"), ("replay, same container", "replay"),
                                       ("replay, another container", "replay_other_container"),
                                       ("in-flight duplicate", "in_flight_duplicate")))
    units = "\n".join(_row(label, [f"{trips[s][k]['table_wcu']:g} + {trips[s][k]['gsi_wcu']:g} GSI = **{trips[s][k]['wcu']:g}**"
                                   + (f" (at least {trips[s][k]['wcu_lower_bound']:g})"
                                      if trips[s][k]["wcu_lower_bound"] != trips[s][k]["wcu"] else "")
                                   + (f", {trips[s][k]['rcu']:g} RCU" if trips[s][k]["rcu"] else "") for s in COLUMNS])
                      for label, k in (("first request", "first"), ("replay, same container", "replay"),
                                       ("replay, another container", "replay_other_container")))
    split_rows = _split_rows(r)
    cpu_rows = "\n".join(_row(label, [f"{cpu[s][k]:.0f}" for s in COLUMNS]) for label, k in (
        ("first request, median", "first_median"), ("first request, p90", "first_p90"),
        ("replay in the same container, median", "replay_median"), ("replay in the same container, p90", "replay_p90"),
        ("replay in another container, median", "replay_other_median"),
        ("replay in another container, p90", "replay_other_p90")))
    tput_rows = "\n".join(
        _row(f"{share}% replays{where}", [f"{tput[s][f'rps_{share}{suffix}']:.1f}" for s in COLUMNS]
             + [f"{tput['retrysafe_atomic'][f'rps_{share}{suffix}'] / tput['powertools'][f'rps_{share}{suffix}']:.2f}",
                f"{tput[f'ratio_bound_{share}{suffix}']:.2f}"])
        for share in (0, 5, 50)
        for suffix, where in ((("", ""),) if share == 0 else (("", ", same container"), ("_other", ", another container"))))
    size_rows = "\n".join(f"| {label} | {s['response_bytes']} | {s['retrysafe_bytes']} | {s['powertools_bytes']} |"
                          for label, s in sizes.items())
    moto = r["moto_server_rps"]
    rc, pc = cold["retrysafe"], cold["powertools"]
    return f"""# retrysafe vs Powertools idempotency

Measured by `make bench` on {r.get('measured', 'an unrecorded date')} ({r['duration_seconds']} s) on {m['platform']}, {m['cpus']} CPUs shared with other work
(load average {m['load_average_before'][0]:.1f} before, {m['load_average_after'][0]:.1f} after); Python {v['python']},
retrysafe {v['retrysafe']}, aws-lambda-powertools {v['aws-lambda-powertools']}, boto3 {v['boto3']}, botocore {v['botocore']}.
Every ratio is retrysafe (atomic) / Powertools from measurements interleaved in this one run.{_load(m)}

**Workload, both sides.** An HTTP API (v2) `POST /orders` request with an `Idempotency-Key`, answered with
~1 KiB of JSON; the operation writes one order item and one event item. retrysafe puts both in its
transaction (`@idempotent_http`, the event through its outbox); Powertools runs `@idempotent` (DynamoDB
persistence, payload validation on) and the handler writes the same two items with `PutItem`.

**How DynamoDB answers.** Real botocore clients (standard retry mode, the same timeouts) whose HTTP layer is
answered in-process by a small DynamoDB model (`benchmarks/ddb_model.py`, a botocore `before-send` handler):
conditions are evaluated, replays get DynamoDB's `ConditionalCheckFailedException` /
`TransactionCanceledException` replies with the old item (`ALL_OLD`), and every reply carries `x-amz-crc32`.
Request building, parameter validation, signing and response parsing are paid by both sides; the network
and TLS by neither; the model's own time is subtracted. {_validation(r)}
botocore runs as Lambda's runtime has it, without awscrt: this machine installs awscrt for retrysafe's
fast transport, and botocore would import it (about 55 ms more per cold start, on both sides) and sign with
it; the benchmark hides it from botocore's sides (`benchmarks/lambda_botocore.py`).

{f'![comparison]({chart_name})' if chart_name else ''}

## Targets

| ratio retrysafe / Powertools | in process | over a socket (new) | target |
|---|---|---|---|
{target_rows}

"In process": botocore's HTTP layer answered by the model in the same thread (regression tracking).
"Over a socket" (new in this version of the bench): the same model served by `benchmarks/ddb_server.py`
on 127.0.0.1 in another process; see [its section](#over-a-socket-new).

{_socket_section(r)}

{_transport_section(r)}

{_write_units_section(r)}

{_cutover_section(r)}
{_sqs_section(r)}

## CPU per request (thread CPU time, µs, {cpu['powertools']['requests']} requests per side)

| | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
{cpu_rows}

On a client configured like the Powertools user's (botocore's parameter validation on), retrysafe atomic
takes {cpu['retrysafe_atomic_validating']['first_median']:.0f} µs per first request and
{cpu['retrysafe_atomic_validating']['replay_median']:.0f} µs per replay (ratios {ratio['first_cpu_validating']:.2f}
and {ratio['replay_cpu_validating']:.2f}): what skipping the validation of requests it builds itself is worth.

Where retrysafe's (atomic) CPU goes (medians, µs):

| | total | botocore's call | the handler's own work | the test event | retrysafe around the handler |
|---|---|---|---|---|---|
{split_rows}

botocore's call is the one `TransactWriteItems` (serialisation, endpoint rules, signing, retry checks,
parsing; in another container the same transaction, cancelled, and its error parsed); a replay in the
same container makes none. The handler's own work is `create_order` in `benchmarks/workload.py`, its
`txn.put`/`txn.append_event` buffering included; the test event is the bench building the request, on
both sides. Around the handler: HTTP parsing, the key, the canonical fingerprint, the record and its
compression, the record cache and the answer.

**The first-request target in µs.** {_budget(r, targets["first_cpu"][0])}

**Same container, another container.** retrysafe's store keeps the records this container completed or
replayed (`RecordCache`, 4 MiB, on by default for the store from the environment): a replay that lands on
the container that answered first is served from memory, with no DynamoDB call and without running the
handler. A replay that lands on another container cannot know it is one before DynamoDB answers (atomic
mode's one round trip): it runs the handler and sends the transaction, which DynamoDB cancels and answers
with the stored record. Which share lands where depends on the traffic; both are measured. Powertools keeps
no local cache by default (`use_local_cache=False`), so its two replays are the same.

## DynamoDB calls per request (business writes included)

| | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
{calls}

An atomic in-flight duplicate runs its own transaction; whichever commits first wins and the other replays it.

## Capacity units per request, from the item sizes by DynamoDB's rules

| write units (table + outbox index) | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
{units}

Rules applied (`Usage` in `benchmarks/ddb_model.py`): one write unit per started KiB of the larger of the old
and new item, also when the condition fails; **transactional writes cost double**; an item carrying the
outbox index keys (`obq`/`at`, projection ALL) costs one more unit per started KiB of its index entry (+100
bytes); a cancelled transaction is counted as if its items were written (AWS does not document the exact
charge: an upper bound; "at least" counts only the items whose condition failed). Atomicity is what retrysafe's extra units buy: its record, order and event commit
or fail together, where Powertools' four calls can leave an order without its event or a record stuck in
progress.

## Cold start: import + first invocation, client creation included ({cold['runs']} fresh processes per side, alternating)

| | retrysafe | Powertools |
|---|---|---|
| CPU, median / min (ms) | {rc['cpu_median_ms']:.0f} / {rc['cpu_min_ms']:.0f} | {pc['cpu_median_ms']:.0f} / {pc['cpu_min_ms']:.0f} |
| wall clock, median / min (ms) | {rc['median_ms']:.0f} / {rc['min_ms']:.0f} | {pc['median_ms']:.0f} / {pc['min_ms']:.0f} |
| of which module init (import; retrysafe creates its client here), median (ms) | {rc['import_median_ms']:.0f} | {pc['import_median_ms']:.0f} |
| of which first invocation, median (ms) | {rc['first_invocation_median_ms']:.0f} | {pc['first_invocation_median_ms']:.0f} |

The floor under both: importing `botocore.session` and creating a DynamoDB client costs
{r['botocore_floor']['import_and_client_cpu_ms']:.0f} ms of CPU in a fresh process from a stock session, and
{r['botocore_floor']['import_and_store_client_cpu_ms']:.0f} ms as retrysafe's store creates it (botocore's data for DynamoDB
alone; medians of {r['botocore_floor']['runs']}, alternating, awscrt hidden as in Lambda).
Interpreter start-up is excluded (the same for both); what Lambda's runtime loads before the handler
(`json`, `decimal`...) is loaded before the clock starts. The target ratio uses CPU time (the machine is
shared); the wall-clock ratio is {ratio['cold_start_wall']:.2f}.

## Throughput, latency model (one container, one request at a time)

Each request costs its measured CPU median plus {r['latency_model']['call_ms']:g} ms per DynamoDB call and
{r['latency_model']['transaction_ms']:g} ms per `TransactWriteItems`.

| requests/s | retrysafe atomic | retrysafe claim-first | Powertools | ratio atomic | best possible ratio |
|---|---|---|---|---|---|
{tput_rows}

"Same container": every replay lands on the container that answered first (retrysafe answers it from its
record cache: no call); "another container": every replay lands on a container that has not seen the key
(one cancelled `TransactWriteItems`). Real traffic lies between the two. "Best possible" is the ratio
retrysafe (atomic) would reach with zero CPU of its own against this run's Powertools: a first request is
one `TransactWriteItems` ({r['latency_model']['transaction_ms']:g} ms) against Powertools' four calls, so at
5% replays even a free retrysafe stays near {r['latency_model']['ratio_bound_5']:.2f}.

## Where Powertools wins

{_powertools_wins(r)}

## Stored record size

| response | bytes | retrysafe record | Powertools record |
|---|---|---|---|
{size_rows}

## moto's server (informative only)

{moto['clients']} concurrent clients, half replays, {moto['seconds_per_side']:g} s per side: retrysafe atomic
{moto['retrysafe']:.0f} req/s, claim-first {moto['retrysafe_claim_first']:.0f}, Powertools {moto['powertools']:.0f}
(retrysafe without its record cache: every replay goes to the server).
This measures moto (its `TransactWriteItems` deep-copies every table it touches), not DynamoDB.

{_separately()}
## Reproduce

```
make bench        # about 3-4 minutes; writes benchmarks/results.json, RESULTS.md, comparison.png
python -m benchmarks.deployed 15 > benchmarks/profiles/deployed.json   # cold start as deployed
python -m benchmarks.profile_replay --out benchmarks/profiles/replay_other_in_process.txt
python -m benchmarks.profile_replay --socket --out benchmarks/profiles/replay_other_socket.txt
```
"""


#: The measurements run apart from ``make bench`` (their own scripts), committed next to it.
PROFILES = Path(__file__).resolve().parent / "profiles"


def _separately() -> str:
    """The cold start as deployed and the replay profile, from their committed outputs (none: nothing)."""
    import json

    parts = []
    deployed = PROFILES / "deployed.json"
    if deployed.exists():
        d = json.loads(deployed.read_text())
        rows = "\n".join(f"| {label} | {d[k]['cpu_median_ms']:.0f} | {d[k]['cpu_min_ms']:.0f} | "
                         f"{d[k]['cpu_median_ms'] / d['powertools_pip']['cpu_median_ms']:.2f} |"
                         for k, label in (("retrysafe_source", "retrysafe, layer as shipped (no bytecode)"),
                                          ("retrysafe_bytecode", "retrysafe, layer with hash-based bytecode"),
                                          ("powertools_pip", "Powertools, pip-installed (compiled)")))
        parts.append(f"""### Cold start as deployed (`benchmarks/deployed.py`, {d['measured']})

{d['runs']} fresh processes per variant, interleaved, load average {d['load_average'][0]:.1f} at the end; the
layer's folder read-only with `PYTHONDONTWRITEBYTECODE`, as under Lambda's `/opt`. CPU ms:

| variant | median | min | / Powertools |
|---|---|---|---|
{rows}
""")
    heads = [path.read_text().split("\n\n", 1)[0].strip()
             for path in (PROFILES / "replay_other_in_process.txt", PROFILES / "replay_other_socket.txt") if path.exists()]
    if heads:
        body = "\n".join(heads)
        parts.append(f"""### A replay in another container (`benchmarks/profile_replay.py`)

The first lines of `benchmarks/profiles/replay_other_*.txt` (the in-process one's profiles follow there):

```
{body}
```
""")
    return "## Measured separately\n\n" + "\n".join(parts) if parts else ""


def _load(m: dict[str, Any]) -> str:
    """A warning when the machine was busier than its CPUs during the run."""
    if max(m["load_average_before"][0], m["load_average_after"][0]) <= m["cpus"]:
        return ""
    return (f"\n\n**Measured under load** (load average above the {m['cpus']} CPUs): absolute times are slower "
            "than on an idle machine; the ratios compare measurements interleaved under the same load.")


def _socket_section(r: dict[str, Any]) -> str:
    """The socket variant, side by side with the in-process one."""
    sock, here = r["socket"], r
    cpu, cold, tput = sock["cpu_us"], sock["cold_start"], sock["latency_model"]
    rows = []
    for label, key in (("first request, median", "first_median"), ("first request, p90", "first_p90"),
                       ("replay in the same container, median", "replay_median"),
                       ("replay in another container, median", "replay_other_median"),
                       ("replay in another container, p90", "replay_other_p90")):
        rows.append(_row(label, [f"{cpu[s][key]:.0f} ({here['cpu_us'][s][key]:.0f})" for s in COLUMNS]))
    rows.append(_row("first request, validating client, median",
                     [(f"{cpu['retrysafe_atomic_validating']['first_median']:.0f} "
                      f"({here['cpu_us']['retrysafe_atomic_validating']['first_median']:.0f})"), "", ""]))
    for share, suffix, where in ((0, "", ""), (5, "", ", same container"), (5, "_other", ", another container"),
                                 (50, "", ", same container"), (50, "_other", ", another container")):
        key = f"rps_{share}{suffix}"
        rows.append(_row(f"requests/s, latency model, {share}% replays{where}",
                         [f"{tput[s][key]:.1f} ({here['latency_model'][s][key]:.1f})" for s in COLUMNS]))
    rc, pc = cold["retrysafe"], cold["powertools"]
    hrc, hpc = here["cold_start"]["retrysafe"], here["cold_start"]["powertools"]
    rows.append(_row(f"cold start CPU, median of {cold['runs']} (ms)",
                     [f"{rc['cpu_median_ms']:.0f} ({hrc['cpu_median_ms']:.0f})", "",
                      f"{pc['cpu_median_ms']:.0f} ({hpc['cpu_median_ms']:.0f})"]))
    same = all(sock["round_trips_and_units"][s][k] == here["round_trips_and_units"][s][k]
               for s in COLUMNS for k in ("first", "replay", "replay_other_container"))
    units = ("the same calls and capacity units as in process, per side and request kind" if same else
             "**calls or capacity units that differ from the in-process run**: see `results.json`")
    return f"""## Over a socket (new)

Every DynamoDB call of both libraries goes to the model served over HTTP/1.1 with keep-alive on
127.0.0.1 by another process (`benchmarks/ddb_server.py`, a threaded `http.server`), through botocore's
own urllib3 connection pool, as in a warm Lambda container (no TLS: HTTPS costs more than this
measures). The clients' CPU is this process's thread CPU (`time.thread_time`; `time.process_time` of the
fresh process for cold starts, its connection set-up included); the server's CPU is in its own process
and never counted. {sock['requests']} first requests (and as many replays of each kind) per side. The
server saw {units}.

| CPU µs per request, socket (in process) | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
{chr(10).join(rows)}

Ratios retrysafe atomic / Powertools over the socket: first request **{sock['ratios']['first_cpu']:.2f}**
(in process {r['ratios']['first_cpu']:.2f}), replay in another container **{sock['ratios']['replay_cpu_other']:.2f}**
({r['ratios']['replay_cpu_other']:.2f}), cold start **{sock['ratios']['cold_start']:.2f}**
({r['ratios']['cold_start']:.2f}). Each call's HTTP stack is paid once by a retrysafe atomic first request
and four times by Powertools'."""


def _transport_section(r: dict[str, Any]) -> str:
    """Issue 34 item 4: retrysafe on botocore and on the fast transport (awscrt), over the socket."""
    t = r["socket"]["transport"]
    cpu, cold, ratio = t["cpu_us"], t["cold_start"], t["ratios"]
    b, c = cold["retrysafe"], cold["retrysafe_awscrt"]
    rows = [_row("first request, median (µs)", [f"{cpu['botocore']['first_median']:.0f}",
                                               f"{cpu['awscrt']['first_median']:.0f}", f"**{ratio['first_cpu']:.2f}**"]),
            _row("replay in another container, median (µs)",
                 [f"{cpu['botocore']['replay_other_median']:.0f}", f"{cpu['awscrt']['replay_other_median']:.0f}",
                  f"{ratio['replay_other_cpu']:.2f}"]),
            _row(f"cold start CPU, median of {cold['runs']} (ms)",
                 [f"{b['cpu_median_ms']:.0f}", f"{c['cpu_median_ms']:.0f}", f"**{ratio['cold_start']:.2f}**"]),
            _row("cold start wall clock, median (ms)",
                 [f"{b['median_ms']:.0f}", f"{c['median_ms']:.0f}", f"{ratio['cold_start_wall']:.2f}"])]
    verdict = "met" if t["target_met"] else "**not met**"
    return f"""## The transport: botocore or awscrt (issue 34 item 4)

retrysafe (atomic) over the same socket on its botocore client and on the fast transport,
`retrysafe._crt` (`RETRYSAFE_TRANSPORT=crt`: awscrt's SigV4 signer and HTTP client; botocore's
standard-mode retries, CRC32 check, error shapes and exceptions),
{t['requests']} first requests and as many replays in another container per side, interleaved in blocks.
Process CPU (`time.process_time`: awscrt works on its own threads), fresh processes for cold starts.

| retrysafe atomic, socket | botocore | fast transport (awscrt) | awscrt / botocore |
|---|---|---|---|
{chr(10).join(rows)}

The bar for the opt-in transport, at most {t['target']:g} for both first-request CPU and cold
start: {verdict} in this run."""


def _write_units_section(r: dict[str, Any]) -> str:
    """Write units per path, each library, with what the difference is made of."""
    trips, quotes = r["round_trips_and_units"], r["record_only_units"]

    def cell(entry: dict[str, Any]) -> str:
        extra = f" (at least {entry['wcu_lower_bound']:g})" if entry["wcu_lower_bound"] != entry["wcu"] else ""
        return f"{entry['wcu']:g}{extra}: {' + '.join(_short(entry['calls'])) or 'no call'}"

    rows = [
        _row("first request, 1 item + 1 event", [cell(trips[s]["first"]) for s in COLUMNS]),
        _row("first request, nothing but the record", [cell(quotes[s]["first"]) for s in COLUMNS]),
        _row("replay, same container, 1 item + 1 event", [cell(trips[s]["replay"]) for s in COLUMNS]),
        _row("replay, another container, 1 item + 1 event",
             [cell(trips[s]["replay_other_container"]) for s in COLUMNS]),
        _row("replay, another container, nothing but the record",
             [cell(quotes[s]["replay_other_container"]) for s in COLUMNS]),
    ]
    first = trips["retrysafe_atomic"]["first"]
    return f"""## Write units per path

| write units: calls | retrysafe atomic | retrysafe claim-first | Powertools |
|---|---|---|---|
{chr(10).join(rows)}

A first request whose handler writes nothing but the record (`workload.quote`, ~1 KiB answer) costs
retrysafe atomic one conditional `PutItem`, no transaction: the record is compressed to one unit,
where Powertools writes its record twice (in progress, then completed with the uncompressed answer).
With one item and one event, retrysafe atomic's {first['wcu']:g} units are {first['table_wcu']:g} for
the transaction (record, order and event, one unit each, doubled because transactional writes cost
double) and {first['gsi_wcu']:g} for the event's entry in the outbox index (`outbox-unpublished`, which
the publisher and the sweeper query); Powertools' separate `PutItem`s cost single units but do not
commit together. Claim-first adds its claim (`PutItem`, one unit) to the same transaction; with nothing
but the record it completes the claim with a second `PutItem` conditioned on its owner token, no
transaction."""


def _sqs_section(r: dict[str, Any]) -> str:
    """The SQS redelivery figure: an already processed message received again by a cold container."""
    sides = ("retrysafe_atomic", "retrysafe_atomic_no_hints", "powertools")
    rows = "\n".join(
        _row(label, [f"{variant['sqs_redelivery_us'][s]['redelivery_median']:.0f}" for s in sides]
             + [f"{variant['ratios']['sqs_redelivery_cpu']:.2f}", f"{variant['ratios']['sqs_redelivery_cpu_no_hints']:.2f}"])
        for label, variant in (("in process, median µs", r), ("over a socket, median µs", r["socket"])))
    calls = _row("DynamoDB calls", [" + ".join(_short(r["sqs_redelivery_us"][s]["redelivery_calls"])) or "none"
                                    for s in sides] + ["", ""])
    floor = r["sqs_redelivery_us"]["refused_put_floor"]
    powertools = r["sqs_redelivery_us"]["powertools"]["redelivery_median"]
    return f"""## SQS redelivery at a cold container (receive count 2)

An SQS message already processed is received again (`ApproximateReceiveCount` 2: its deletion was lost,
or the visibility timeout ran out) by a container that has not seen it. retrysafe's `@idempotent_sqs`
(atomic) takes the count as a retry hint and claims first: one conditional `PutItem` answers with the
stored record and the handler does not run. Without hints (`retry_hints=False`) it runs the handler and
sends its transaction, which DynamoDB cancels. Powertools (`BatchProcessor` + `@idempotent_function` keyed
by `messageId`) makes one conditional `PutItem`. Thread CPU per redelivery ({r['sqs_redelivery_us']['powertools']['requests']}
per side, interleaved):

| | retrysafe atomic (hints) | retrysafe atomic, `retry_hints=False` | Powertools | ratio (hints) | ratio (no hints) |
|---|---|---|---|---|---|
{rows}
{calls}

Both sides now make the same single refused `PutItem`. botocore's work alone on it takes {floor:.0f} µs in
process (a client configured as retrysafe's store's): a library doing nothing else at all would reach
{floor / powertools:.2f} of Powertools' redelivery, so the rest of the gap to a lower ratio is botocore's,
not the protocol's."""


def _powertools_wins(r: dict[str, Any]) -> str:
    """The measurements of this run in which Powertools does better, each with its reason."""
    cpu, trips, tput, moto = r["cpu_us"], r["round_trips_and_units"], r["latency_model"], r["moto_server_rps"]
    rs, cf, pt = cpu["retrysafe_atomic"], cpu["retrysafe_claim_first"], cpu["powertools"]
    wins = []
    if rs["replay_other_median"] > pt["replay_other_median"]:
        wins.append(f"- **Replay CPU in another container, atomic mode**: {rs['replay_other_median']:.0f} µs against "
                    f"{pt['replay_other_median']:.0f} µs. "
                    "An atomic request cannot know it is a replay before DynamoDB answers, so it runs the handler and "
                    "sends its whole transaction (record, order, event), which DynamoDB cancels and answers with the "
                    f"stored record. Claim-first replays skip the handler ({cf['replay_other_median']:.0f} µs).")
    if tput["retrysafe_atomic"]["replay_other_ms"] > tput["powertools"]["replay_other_ms"]:
        wins.append(f"- **Replay latency in another container**: an atomic replay is one cancelled `TransactWriteItems` "
                    f"({r['latency_model']['transaction_ms']:g} ms "
                    f"in the model) where Powertools' is one failed `PutItem` ({r['latency_model']['call_ms']:g} ms); "
                    "the larger the share of replays, the smaller retrysafe's lead.")
    for kind, label in (("first", "a first request"), ("replay_other_container", "a replay in another container")):
        ours, theirs = trips["retrysafe_atomic"][kind]["wcu"], trips["powertools"][kind]["wcu"]
        if ours > theirs:
            why = ("transactional writes cost double and the outbox index costs one more write per event"
                   if kind == "first" else
                   "the cancelled transaction is counted at its upper bound (every item, doubled; "
                   f"{trips['retrysafe_atomic'][kind]['wcu_lower_bound']:g} if only the item whose condition failed "
                   "is charged: the record; the replay's event has an id of its own, so its condition holds)")
            wins.append(f"- **Write units for {label}**: {ours:g} against {theirs:g}: {why}. That is the price of "
                        "the record, the order and the event committing or failing together.")
    if moto["ratio"] < 1:
        wins.append(f"- **Throughput on moto's server** ({moto['ratio']:.2f}): moto's `TransactWriteItems` deep-copies "
                    "the tables it touches; informative only.")
    return "\n".join(wins) or "Nowhere in this run."


def _validation(r: dict[str, Any]) -> str:
    if r["retrysafe_client_validates"]:
        return "Both clients run botocore's parameter validation."
    return ("retrysafe's store creates its client with `parameter_validation=False` (it builds its requests "
            "itself; a test validates every request shape it sends against botocore's service model); the "
            "Powertools user's client keeps botocore's default validation.")


def _cutover_section(r: dict[str, Any]) -> str:
    """The cut-over from Powertools while its window is open: calls and units per retrysafe mode."""
    cut = r["cutover_units"]
    modes = ("retrysafe_atomic", "retrysafe_claim_first")

    def cell(entry: dict[str, Any]) -> str:
        return f"{' + '.join(_short(entry['calls']))}: {entry['wcu']:g} WCU, {entry['rcu']:g} RCU"

    rows = "\n".join(_row(label, [cell(cut[m][k]) for m in modes]) for label, k in (
        ("first request (no Powertools record)", "first"),
        ("retry of a request Powertools completed", "retry_of_a_powertools_request"),
        ("that retry again, another container", "that_retry_in_another_container")))
    return f"""## Cut-over from Powertools (window open)

`powertools_cutover=` on the workload: a first request pays one consistent `GetItem` on Powertools' table;
a retry Powertools completed is answered from its record and recorded with one write. After the window
(`until`) no lookup is made and these rows are those of the tables above.

| calls: units | retrysafe atomic | retrysafe claim-first |
|---|---|---|
{rows}"""


def _short(calls: list[str]) -> list[str]:
    names = {"TransactWriteItems": "TransactWrite", "UpdateItem": "Update", "PutItem": "Put", "GetItem": "Get",
             "DeleteItem": "Delete"}
    return [names.get(c, c) for c in calls]


def _split_rows(r: dict[str, Any]) -> str:
    """Table rows of the atomic CPU split: first request, replay here, replay in another container."""
    split = r["cpu_split_us"]
    labels = (("first request", "first"), ("replay, same container", "replay"),
              ("replay, another container", "replay_other"))
    return "\n".join(_row(label, [f"{split[k]['total']:.0f}", f"{split[k]['botocore_call']:.0f}",
                                   f"{split[k]['handler']:.0f}", f"{split['event']:.0f}",
                                   f"{split[k]['around_handler']:.0f}"]) for label, k in labels)


def _budget(r: dict[str, Any], ratio: float) -> str:
    """The first-request target as a CPU budget for retrysafe's work around the handler, in words."""
    b = r["first_request_budget_us"]
    target = b["budget"] + b["fixed"]
    verdict = ("so the target is met" if b["around_handler"] <= b["budget"] else
               f"{b['around_handler'] - b['budget']:.0f} µs too many, {1 - b['budget'] / b['around_handler']:.0%} "
               "of it would have to go")
    return (f"{ratio} x Powertools' {b['powertools']:.0f} µs is {target:.0f} µs. botocore's call, the handler's own "
            f"work and the event take {b['fixed']:.0f} µs of it: a library with no CPU at all around the handler "
            f"would reach {b['floor_ratio']:.2f}. That leaves {b['budget']:.0f} µs for retrysafe's work around "
            f"the handler, which takes {b['around_handler']:.0f} µs: {verdict}.")
