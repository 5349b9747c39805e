"""Lambda functions of a stack, invoked as Lambda invokes them: one process per execution environment.

A :class:`FunctionPool` keeps warm worker processes (:mod:`retrysafe_sandbox.worker`) and
starts another when all are busy, as Lambda scales out. An invocation that outlives the
function's ``Timeout`` kills its environment, as Lambda does.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from retrysafe import names

from . import worker
from .assembly import ACCOUNT, REGION
from .provision import Provisioned
from .worker import CODE_PATH_ENV, CRASH_EXIT_CODE

INIT_SECONDS = 10.0
#: The error of an invocation the sandbox's own stop cut short (or refused after it).
STOPPED = "Sandbox.Stopped"
#: The errors of an invocation whose execution environment ended under it.
ENDED = frozenset({"Sandbox.InjectedCrash", "Sandbox.Timeout", "Runtime.ExitError"})


@dataclass(frozen=True)
class FunctionSpec:
    """What the sandbox needs to run one ``AWS::Lambda::Function``."""

    logical_id: str
    name: str
    handler: str
    code_paths: tuple[str, ...]
    environment: Mapping[str, str]
    timeout: float
    memory: int
    #: The credentials' access key: names the function's role to the embedded AWS's IAM guard.
    access_key: str = "sandbox"

    @property
    def arn(self) -> str:
        """The function's ARN."""
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.name}"


@dataclass
class Invocation:
    """One invocation's answer: the result or the error, and what the environment counted."""

    result: Any = None
    error: dict[str, str] | None = None
    calls: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)


def function_specs(done: Provisioned, visibility_timeout: int | None = None) -> dict[str, FunctionSpec]:
    """Every function of the stack: handler, code and layer directories, resolved environment, timeout.

    Inline code (``ZipFile``) contributes nothing to import: its handler is in a layer.
    ``visibility_timeout`` (the sandbox's queue override) also replaces the runtime's
    visibility-sized lease variable, so claims lapse when messages reappear.
    """
    stack, specs = done.stack, {}
    for resource in stack.of_type("AWS::Lambda::Function"):
        props = resource.properties
        code = stack.asset_dir(resource)
        layers = [stack.resources[layer["Ref"]] for layer in props.get("Layers", []) if "Ref" in layer]
        paths = [str(code)] if code else []
        paths += [str(d / "python") for d in map(stack.asset_dir, layers) if d is not None]
        environment = {k: str(v) for k, v in
                       done.intrinsics.resolve(props.get("Environment", {}).get("Variables", {})).items()}
        if visibility_timeout is not None and names.VISIBILITY_TIMEOUT_ENV in environment:
            environment[names.VISIBILITY_TIMEOUT_ENV] = str(visibility_timeout)
        specs[resource.logical_id] = FunctionSpec(
            resource.logical_id, done.intrinsics.ref(resource.logical_id), props["Handler"], tuple(paths),
            environment, float(props.get("Timeout", 3)), int(props.get("MemorySize", 128)))
    return specs


def _wire(value: Any) -> Any:
    """How Lambda puts non-JSON values on the wire: timestamps as epoch seconds, binary as base64."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class _Environment:
    """One worker process."""

    def __init__(self, spec: FunctionSpec, endpoint: str, log: IO[str] | None) -> None:
        env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "TZ": ":UTC",
               **spec.environment,
               "AWS_ENDPOINT_URL": endpoint, "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
               "AWS_ACCESS_KEY_ID": spec.access_key, "AWS_SECRET_ACCESS_KEY": "sandbox", "AWS_SESSION_TOKEN": "sandbox",
               "AWS_LAMBDA_FUNCTION_NAME": spec.name, "AWS_LAMBDA_FUNCTION_TIMEOUT": str(spec.timeout),
               "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory), "_HANDLER": spec.handler,
               "SANDBOX_ACCOUNT": ACCOUNT, CODE_PATH_ENV: os.pathsep.join(spec.code_paths),
               "PYTHONUNBUFFERED": "1"}
        # Run by path: as a module it would import the whole sandbox package into every function process.
        # In its own process group: a Ctrl-C at the terminal is the sandbox's to handle (it ends its
        # environments itself); a worker whose sandbox died ends when its stdin closes.
        self.process = subprocess.Popen([sys.executable, worker.__file__], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=log if log is not None else subprocess.DEVNULL, process_group=0)

    def invoke(self, request: dict[str, Any], timeout: float) -> Invocation:
        assert self.process.stdin is not None and self.process.stdout is not None
        answer: list[str] = []
        try:
            self.process.stdin.write(json.dumps(request, default=_wire) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):  # ended (or its pipe closed by FunctionPool.stop) before this request
            self.stop()
            return Invocation(error={"errorType": STOPPED, "errorMessage": "execution environment ended"})
        reader = threading.Thread(target=lambda: answer.append(self.process.stdout.readline()),  # type: ignore[union-attr]
                                  daemon=True)
        reader.start()
        reader.join(timeout)
        if not answer or not answer[0]:
            self.stop()
            code = self.process.returncode
            kind = ("Sandbox.InjectedCrash" if code == CRASH_EXIT_CODE else
                    "Sandbox.Timeout" if code is None or code < 0 else "Runtime.ExitError")
            return Invocation(error={"errorType": kind, "errorMessage": f"execution environment ended ({code})"})
        return Invocation(**json.loads(answer[0]))

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()


class FunctionPool:
    """Warm execution environments of one function; thread-safe ``invoke``."""

    def __init__(self, spec: FunctionSpec, endpoint: str, log: IO[str] | None = None,
                 on_invoke: Callable[[FunctionSpec, Invocation], None] | None = None) -> None:
        self.spec, self._endpoint, self._log, self._on_invoke = spec, endpoint, log, on_invoke
        self._idle: list[_Environment] = []
        self._all: list[_Environment] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._crash_after: str | None = None
        self._stopped = False

    def crash_once_after(self, call: str) -> None:
        """Kill the next invocation's environment right after ``call`` succeeds: ``service:Operation``, or
        ``service:Operation@TableName`` for a call on one table only."""
        self._crash_after = call

    def invoke(self, event: Any) -> Invocation:
        """Run one invocation in a warm environment, or a new one (cold start)."""
        with self._lock:
            if self._stopped:
                return Invocation(error={"errorType": STOPPED, "errorMessage": "the sandbox is stopping"})
            environment = self._idle.pop() if self._idle else None
            crash, self._crash_after = self._crash_after, None
            request_id = f"{self.spec.logical_id}-{next(self._ids)}"
            cold = environment is None
            if environment is None:
                environment = _Environment(self.spec, self._endpoint, self._log)
                self._all.append(environment)
        # Like Lambda, the init phase (imports) does not count against the function's timeout.
        outcome = environment.invoke({"event": event, "request_id": request_id, "crash_after": crash},
                                     self.spec.timeout + (INIT_SECONDS if cold else 0.5))
        with self._lock:
            stopped = self._stopped
            if environment.alive and not stopped:
                self._idle.append(environment)
            elif environment in self._all:
                self._all.remove(environment)
        if stopped and outcome.error is not None and outcome.error["errorType"] in ENDED | {STOPPED}:
            # its environment was ended by stop(), not by the function: not an invocation of the app
            return Invocation(error={"errorType": STOPPED, "errorMessage": "the sandbox stopped"})
        if self._on_invoke is not None:
            self._on_invoke(self.spec, outcome)
        return outcome

    def stop(self) -> None:
        """End every environment; invocations in flight answer ``Sandbox.Stopped``, later ones are refused."""
        with self._lock:
            self._stopped = True
            environments, self._all, self._idle = self._all, [], []
        for environment in environments:
            if environment.process.stdin is not None:
                environment.process.stdin.close()
            environment.stop()


def log_file(directory: Path, spec: FunctionSpec) -> IO[str]:
    """The function's log (its stderr and its handler's prints): ``<directory>/<logical id>.log``."""
    directory.mkdir(parents=True, exist_ok=True)
    return open(directory / f"{spec.logical_id}.log", "a", buffering=1)
