"""Step Functions state machines from the template, on a real ASL interpreter (``aws-local-stepfunctions``).

The interpreter (pinned in ``package.json``, run by ``sfn_runner.mjs`` on node) applies the
definition: paths, Parameters, ResultPath, Choice, Retry and Catch. Task states whose resource is
a function of the stack (its ARN, or ``arn:aws:states:::lambda:invoke`` with ``FunctionName``)
invoke the sandbox's function processes, after IAM allows ``lambda:InvokeFunction`` to the state
machine's role. A function error fails the attempt with the function's ``errorType`` (an
execution environment that died — crash, timeout — with ``Lambda.Unknown``, as Step Functions
reports a Lambda that returned no error type); a denied invoke with ``Lambda.AWSLambdaException``.

The context object: ``$$.Execution.Id``/``Name``/``Input``/``StartTime``/``RoleArn``,
``$$.StateMachine.Id``/``Name``, and ``$$.State.Name`` and ``$$.State.RetryCount`` per state and
attempt (the interpreter has no per-state context, so the sandbox points each state's
``$$.State.`` references at its own entry, kept current by the Task handlers;
``$$.State.EnteredTime`` is the execution's start time).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .assembly import ACCOUNT, REGION
from .functions import ENDED, STOPPED, Invocation
from .guard import Guard, Role
from .ledger import Ledger
from .provision import Provisioned

RUNNER = Path(__file__).with_name("sfn_runner.mjs")
PACKAGE = "aws-local-stepfunctions"


@dataclass(frozen=True)
class Machine:
    """One ``AWS::StepFunctions::StateMachine``: its ARN, definition and role."""

    logical_id: str
    name: str
    arn: str
    definition: dict[str, Any]
    role: Role | None
    tasks: dict[str, dict[str, str]]


@dataclass
class Execution:
    """One finished execution."""

    arn: str
    status: str
    output: Any = None
    error: str | None = None
    cause: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)


def node_modules() -> Path | None:
    """The ``node_modules`` directory holding the interpreter: the working directory's, else the checkout's."""
    for base in (Path.cwd(), *Path(__file__).resolve().parents):
        if (base / "node_modules" / PACKAGE).is_dir():
            return base / "node_modules"
    return None


def _states(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for name, state in definition.get("States", {}).items():
        found[name] = state
        for branch in state.get("Branches", []):
            found |= _states(branch)
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                found |= _states(state[key])
    return found


def _pointed(value: Any, target: str) -> Any:
    if isinstance(value, str):
        return value.replace("$$.State.", f"$$.Sandbox.{target}.")
    if isinstance(value, list):
        return [_pointed(v, target) for v in value]
    if isinstance(value, dict):
        return {k: v if k in ("States", "Branches", "Iterator", "ItemProcessor") else _pointed(v, target)
                for k, v in value.items()}
    return value


def prepared(definition: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The definition with each state's ``$$.State.`` pointed at its own context entry; state -> entry id."""
    ids: dict[str, str] = {}

    def walk(machine: dict[str, Any]) -> dict[str, Any]:
        states = {}
        for name, state in machine.get("States", {}).items():
            ids[name] = f"s{len(ids)}"
            state = _pointed(state, ids[name])
            if "Branches" in state:
                state["Branches"] = [walk(b) for b in state["Branches"]]
            for key in ("Iterator", "ItemProcessor"):
                if key in state:
                    state[key] = walk(state[key])
            states[name] = state
        return {**machine, "States": states}

    return walk(definition), ids


def machines(done: Provisioned, guard: Guard) -> dict[str, Machine]:
    """Every state machine of the stack, by logical id."""
    resolve = done.intrinsics.resolve
    functions = {str(done.intrinsics.get_att(f.logical_id, "Arn")): f.logical_id
                 for f in done.stack.of_type("AWS::Lambda::Function")}
    by_name = {str(done.intrinsics.ref(f.logical_id)): f.logical_id for f in done.stack.of_type("AWS::Lambda::Function")}
    found = {}
    for resource in done.stack.of_type("AWS::StepFunctions::StateMachine"):
        props = resource.properties
        raw = resolve(props.get("DefinitionString") or props.get("Definition"))
        definition = json.loads(raw) if isinstance(raw, str) else raw
        for key, value in resolve(props.get("DefinitionSubstitutions", {})).items():
            definition = json.loads(json.dumps(definition).replace("${" + key + "}", str(value)))
        tasks = {}
        for name, state in _states(definition).items():
            if state.get("Type") != "Task":
                continue
            resource_arn = str(state.get("Resource", ""))
            if resource_arn in functions:
                tasks[name] = {"function": functions[resource_arn], "integration": "direct"}
            elif resource_arn.startswith("arn:aws:states:::lambda:invoke"):
                target = str((state.get("Parameters") or {}).get("FunctionName", ""))
                base = target.split(":$LATEST")[0]
                function = functions.get(base) or by_name.get(base)
                if function:
                    tasks[name] = {"function": function, "integration": "invoke"}
        role = props.get("RoleArn")
        role_id = role["Fn::GetAtt"][0] if isinstance(role, dict) and "Fn::GetAtt" in role else None
        name = str(done.intrinsics.ref(resource.logical_id)).rsplit(":", 1)[-1]
        found[resource.logical_id] = Machine(resource.logical_id, name, str(done.intrinsics.ref(resource.logical_id)),
                                             definition, guard.role(done, role_id, name) if role_id else None, tasks)
    return found


class StepFunctions:
    """Runs executions of the sandbox's state machines (thread-safe ``run``)."""

    def __init__(self, invoke: Callable[[str, Any], Invocation], function_arn: Callable[[str], str], guard: Guard,
                 ledger: Ledger, modules: Path) -> None:
        self.invoke, self.function_arn, self.guard, self.ledger = invoke, function_arn, guard, ledger
        self.machines: dict[str, Machine] = {}
        self._pending: dict[str, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("Step Functions in the sandbox need node on PATH")
        self._server = _InvokeServer(self)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="sfn-invoke").start()
        # its own process group, as the functions' (a Ctrl-C is the sandbox's to handle)
        self._process = subprocess.Popen([node, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, env={**os.environ, "SANDBOX_NODE_MODULES": str(modules)},
                                         process_group=0)
        threading.Thread(target=self._read, daemon=True, name="sfn-answers").start()

    @property
    def url(self) -> str:
        """Where ``POST /executions/<state machine name>`` starts an execution and answers its outcome."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, found: dict[str, Machine]) -> None:
        """Make these state machines runnable."""
        self.machines |= found

    def machine(self, name: str) -> Machine:
        """A state machine by name, ARN or logical id."""
        for machine in self.machines.values():
            if name in (machine.name, machine.arn, machine.logical_id):
                return machine
        raise LookupError(f"no state machine {name!r}; the sandbox runs {[m.name for m in self.machines.values()]}")

    def run(self, name: str, payload: Any, execution_name: str | None = None, timeout: float = 300.0) -> Execution:
        """Start an execution and wait for its outcome."""
        machine = self.machine(name)
        execution_name = execution_name or str(uuid.uuid4())
        arn = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{machine.name}:{execution_name}"
        definition, ids = prepared(machine.definition)
        started = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        context = {"Execution": {"Id": arn, "Name": execution_name, "RoleArn": machine.role.arn if machine.role else ""},
                   "StateMachine": {"Id": machine.arn, "Name": machine.name},
                   "Sandbox": {sid: {"Name": state, "RetryCount": 0, "EnteredTime": started}
                               for state, sid in ids.items()}}
        request = {"id": f"{next(self._ids)}|{machine.logical_id}|{arn}", "definition": definition, "input": payload,
                   "context": context, "tasks": machine.tasks, "stateIds": ids, "invokeUrl": f"{self.url}/invoke"}
        done, answer = threading.Event(), list[dict[str, Any]]()
        with self._lock:
            self._pending[request["id"]] = (done, answer)
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
        if not done.wait(timeout):
            raise TimeoutError(f"execution {arn} did not finish within {timeout} s")
        result = answer[0]
        self.ledger.add("executions", f"{machine.name}: {result['status']}")
        return Execution(arn, result["status"], result.get("output"), result.get("error"), result.get("cause"),
                         result.get("history", []))

    def task(self, request: dict[str, Any]) -> dict[str, Any]:
        """One Lambda task attempt (called by the interpreter through the invoke server)."""
        _, logical_id, _ = str(request["execution"]).split("|", 2)
        machine = self.machines[logical_id]
        function_arn = self.function_arn(str(request["function"]))
        if machine.role is not None:
            decision = self.guard.decide(machine.role, "lambda:InvokeFunction", function_arn)
            if not decision.allowed:
                return {"error": {"errorType": "Lambda.AWSLambdaException", "errorMessage": (
                    f"User: {machine.role.session_arn} is not authorized to perform: lambda:InvokeFunction on "
                    f"resource: {function_arn} {decision.reason}")}}
        invocation = self.invoke(str(request["function"]), request["payload"])
        if invocation.error is None:
            return {"result": invocation.result}
        error = dict(invocation.error)
        if error.get("errorType") in ENDED | {STOPPED}:
            error = {"errorType": "Lambda.Unknown", "errorMessage": "The cause could not be determined because "
                     f"Lambda did not return an error type ({error.get('errorType')}: {error.get('errorMessage')})"}
        return {"error": error}

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            answer = json.loads(line)
            with self._lock:
                done, holder = self._pending.pop(answer["id"])
            holder.append(answer)
            done.set()

    def stop(self) -> None:
        """End the interpreter process and the invoke server."""
        self._server.shutdown()
        self._server.server_close()
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class _InvokeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, functions: StepFunctions) -> None:
        super().__init__(("127.0.0.1", 0), _InvokeHandler)
        self.functions = functions


class _InvokeHandler(BaseHTTPRequestHandler):
    server: _InvokeServer

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            request = json.loads(raw or b"null")
            if self.path == "/invoke":
                status, answer = 200, self.server.functions.task(request)
            elif self.path.startswith("/executions/"):
                execution = self.server.functions.run(self.path.removeprefix("/executions/"), request)
                status, answer = 200, {"executionArn": execution.arn, "status": execution.status,
                                       "output": execution.output, "error": execution.error, "cause": execution.cause}
            else:
                status, answer = 404, {"message": "POST /executions/<state machine name> starts an execution"}
        except LookupError as error:
            status, answer = 404, {"message": str(error)}
        except ValueError as error:
            status, answer = 400, {"message": f"the body must be JSON: {error}"}
        body = json.dumps(answer, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the ledger counts executions."""
