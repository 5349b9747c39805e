"""Command line: ``python -m retrysafe_sandbox {demo,serve,token}`` (``make demo`` / ``make sandbox``).

``demo`` runs the app's scenarios and ``serve`` prints its authorizers' credentials through the hooks
the app names in ``cdk.json`` (see :mod:`retrysafe_sandbox.hooks`) or ``--scenario`` / ``--authorization``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from .hooks import Authorization, HookError, Hooks
from .http_front import ApiServer
from .runner import Options, Sandbox
from .scenarios import run_scenarios
from .tokens import LOCAL_SECRET_KEY, mint


def _options(args: argparse.Namespace) -> Options:
    return Options(assembly=Path(args.assembly), stacks=args.stack, tenant=args.tenant, port=args.port,
                   aws_port=args.aws_port, visibility_timeout=args.visibility_timeout,
                   log_dir=Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="retrysafe-sandbox-")))


#: What each command imports beyond the standard library and boto3: the ``sandbox`` extra.
NEEDS = {"demo": ("moto", "joserfc"), "serve": ("moto", "joserfc"), "token": ("joserfc",)}


def _missing(command: str) -> list[str]:
    """The packages ``command`` needs that are not installed."""
    def installed(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except ImportError:
            return False
    return [name for name in NEEDS[command] if not installed(name)]


def _hooks(args: argparse.Namespace) -> Hooks:
    return Hooks.from_cdk_json(Path(args.cdk_json)).replaced(args.scenario, args.authorization)


def demo(args: argparse.Namespace) -> int:
    """Run the app's scenarios, print the ledger; 1 if any intent did not have exactly one effect."""
    scenarios = _hooks(args).scenario_functions()
    if not scenarios:
        print(f"demo: no scenario to run: name them in {args.cdk_json} (context.retrysafe_sandbox.scenarios) "
              "or pass --scenario MODULE:FUNCTION", file=sys.stderr)
        return 2
    with Sandbox(_options(args)) as sandbox:
        report = run_scenarios(sandbox, scenarios)
        print("\n".join(report.steps))
        print(sandbox.ledger.render(report.effects))
        print(f"function logs: {sandbox.options.log_dir}")
    if report.violations:
        print(f"demo: {len(report.violations)} check(s) failed", file=sys.stderr)
        return 1
    print("demo: every intent applied exactly once")
    return 0


def credentials(sandbox: Sandbox, server: ApiServer, tenant: str, authorization: Authorization | None = None
                ) -> list[str]:
    """How a client authenticates as ``tenant`` on each authorizer of one API (printed by ``serve``).

    For a Lambda authorizer only the app knows what it accepts: ``authorization`` (the app's hook) makes
    the header; without it, or when it raises ``LookupError``, the line names the identity source only.
    """
    lines, seen = [], set()
    for route in server.routes:
        spec = server.gate.authorizers.get(route.authorizer or "")
        if spec is None:
            if route.authorization == "AWS_IAM" and "AWS_IAM" not in seen:
                seen.add("AWS_IAM")
                lines.append(f"  AWS_IAM: curl --aws-sigv4 aws:amz:eu-west-1:execute-api --user {tenant}:{LOCAL_SECRET_KEY}")
            continue
        if spec.logical_id in seen:
            continue
        seen.add(spec.logical_id)
        if spec.kind in ("JWT", "COGNITO_USER_POOLS"):
            scopes = sorted({s for r in server.routes if r.authorizer == spec.logical_id for s in r.scopes})
            token = mint(tenant, spec.issuer or "https://sandbox.local", spec.audience or ("sandbox",), scopes)
            lines.append(f"  {spec.logical_id} ({spec.kind}): -H 'Authorization: Bearer {token}'")
            continue
        try:
            example = f": -H 'Authorization: {authorization(sandbox, tenant, route.path)}'" if authorization else ""
        except LookupError:
            example = ""
        lines.append(f"  {spec.logical_id} (Lambda {spec.kind}, identity {', '.join(spec.identity) or '-'}){example}")
    return lines


def serve(args: argparse.Namespace) -> int:
    """Keep the app running until Ctrl-C (SIGINT) or SIGTERM, then stop it and print the ledger.

    A second signal while it stops ends the process at once (exit status 128 + the signal).
    """
    authorization = _hooks(args).authorization_function()
    signalled: list[int] = []

    def on_signal(number: int, _frame: object) -> None:
        if signalled:
            os._exit(128 + number)
        signalled.append(number)

    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        with Sandbox(_options(args)) as sandbox:
            for server in sandbox.apis:
                print(f"API: {server.url}  (tenant {args.tenant!r}; routes: "
                      f"{', '.join(f'{r.method} {r.path}' for r in server.routes if r.function)})")
                print("\n".join(credentials(sandbox, server, args.tenant, authorization)))
            if sandbox.stepfunctions is not None:
                for machine in sandbox.stepfunctions.machines.values():
                    print(f"state machine {machine.name}: curl -X POST {sandbox.stepfunctions.url}/executions/"
                          f"{machine.name} -d '<input JSON>'")
            print(f"embedded AWS: {sandbox.endpoint}   function logs: {sandbox.options.log_dir}")
            print("Ctrl-C to stop.", flush=True)
            # The handler only records the signal (an Event set from a handler can deadlock with its waiter).
            while not signalled:
                time.sleep(0.1)
            print(f"\n{signal.Signals(signalled[0]).name}: stopping (again to quit at once)", flush=True)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    print(sandbox.ledger.render(), flush=True)
    return 0


def token(args: argparse.Namespace) -> int:
    """Print a local JWT for ``--tenant`` (``--issuer``, ``--audience``, ``--scope`` as the authorizer wants)."""
    print(mint(args.tenant, args.issuer, args.audience or ["sandbox"], args.scope))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run ``demo``, ``serve`` or ``token``."""
    parser = argparse.ArgumentParser(prog="python -m retrysafe_sandbox", description=__doc__)
    parser.add_argument("command", choices=["demo", "serve", "token"])
    parser.add_argument("--assembly", default="cdk.out", help="the synthesized cloud assembly (default cdk.out)")
    parser.add_argument("--stack", action="append", default=[], help="run only this stack (repeatable; default all)")
    parser.add_argument("--tenant", default=os.environ.get("SANDBOX_TENANT", "local"),
                        help="the tenant tokens are minted for, and the one routes whose authorizer is not in "
                             "the template report (default $SANDBOX_TENANT or 'local')")
    parser.add_argument("--issuer", default="https://sandbox.local", help="token: the JWT's iss")
    parser.add_argument("--audience", action="append", default=[], help="token: the JWT's aud (repeatable)")
    parser.add_argument("--scope", action="append", default=[], help="token: a scope the JWT grants (repeatable)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("SANDBOX_PORT", "0")),
                        help="port of the first API on 127.0.0.1 (0: any free port)")
    parser.add_argument("--aws-port", type=int, default=0, help="port of the embedded AWS on 127.0.0.1 (0: free)")
    parser.add_argument("--visibility-timeout", type=int, default=None,
                        help="override every queue's visibility timeout, in seconds (short redelivery)")
    parser.add_argument("--logs", default=None, help="directory for the functions' logs (default: a temp dir)")
    parser.add_argument("--cdk-json", default="cdk.json",
                        help="the app's cdk.json, whose context.retrysafe_sandbox names its hooks (default cdk.json)")
    parser.add_argument("--scenario", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="demo: a scenario to run (repeatable, in order; replaces the cdk.json ones)")
    parser.add_argument("--authorization", default=None, metavar="MODULE:FUNCTION",
                        help="serve: makes an Authorization header for a Lambda authorizer (replaces cdk.json's)")
    args = parser.parse_args(argv)
    if args.command == "demo" and args.visibility_timeout is None:
        args.visibility_timeout = 2
    missing = _missing(args.command)
    if missing:
        print(f"{parser.prog} {args.command}: needs {', '.join(missing)}, which the sandbox extra installs: "
              "pip install 'retrysafe[sandbox]'", file=sys.stderr)
        return 2
    try:
        return {"demo": demo, "serve": serve, "token": token}[args.command](args)
    except HookError as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
