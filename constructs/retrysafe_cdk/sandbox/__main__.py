"""Command line: ``python -m retrysafe_cdk.sandbox {demo,serve}`` (``make demo`` / ``make sandbox``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

from . import scenario
from .runner import Options, Sandbox


def _options(args: argparse.Namespace) -> Options:
    return Options(assembly=Path(args.assembly), stacks=args.stack, tenant=args.tenant, port=args.port,
                   aws_port=args.aws_port, visibility_timeout=args.visibility_timeout,
                   log_dir=Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="retrysafe-sandbox-")))


def demo(args: argparse.Namespace) -> int:
    """Run the scenario, print the ledger; 1 if any intent did not have exactly one effect."""
    with Sandbox(_options(args)) as sandbox:
        report = scenario.run(sandbox)
        print("\n".join(report.steps))
        print(sandbox.ledger.render(report.effects))
        print(f"function logs: {sandbox.options.log_dir}")
    if report.violations:
        print(f"demo: {len(report.violations)} check(s) failed", file=sys.stderr)
        return 1
    print("demo: every intent applied exactly once")
    return 0


def serve(args: argparse.Namespace) -> int:
    """Keep the app running until Ctrl-C (or SIGTERM); print the ledger on the way out."""
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with Sandbox(_options(args)) as sandbox:
        for server in sandbox.apis:
            print(f"API: {server.url}  (tenant {args.tenant!r}; routes: "
                  f"{', '.join(f'{r.method} {r.path}' for r in server.routes if r.function)})")
        print(f"embedded AWS: {sandbox.endpoint}   function logs: {sandbox.options.log_dir}")
        print("Ctrl-C to stop.", flush=True)
        try:
            stopped.wait()
        except KeyboardInterrupt:
            pass
        print("\n" + sandbox.ledger.render())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run ``demo`` or ``serve``."""
    parser = argparse.ArgumentParser(prog="python -m retrysafe_cdk.sandbox", description=__doc__)
    parser.add_argument("command", choices=["demo", "serve"])
    parser.add_argument("--assembly", default="cdk.out", help="the synthesized cloud assembly (default cdk.out)")
    parser.add_argument("--stack", action="append", default=[], help="run only this stack (repeatable; default all)")
    parser.add_argument("--tenant", default=os.environ.get("SANDBOX_TENANT", "local"),
                        help="the tenant the emulated authorizer reports (default $SANDBOX_TENANT or 'local')")
    parser.add_argument("--port", type=int, default=int(os.environ.get("SANDBOX_PORT", "0")),
                        help="port of the first API on 127.0.0.1 (0: any free port)")
    parser.add_argument("--aws-port", type=int, default=0, help="port of the embedded AWS on 127.0.0.1 (0: free)")
    parser.add_argument("--visibility-timeout", type=int, default=None,
                        help="override every queue's visibility timeout, in seconds (short redelivery)")
    parser.add_argument("--logs", default=None, help="directory for the functions' logs (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.command == "demo" and args.visibility_timeout is None:
        args.visibility_timeout = 2
    return demo(args) if args.command == "demo" else serve(args)


if __name__ == "__main__":
    sys.exit(main())
