"""One Lambda execution environment: a process that imports a handler and runs invocations.

Started by :class:`retrysafe_sandbox.functions.FunctionPool` with the function's
environment. Like Lambda, it puts the code directory and each layer's ``python/`` directory
first on ``sys.path``, imports ``Handler`` once (cold start), then serves invocations read
as JSON lines from stdin, answering JSON lines on the original stdout (the handler's own
prints go to stderr, the function's log). Every botocore client it creates is counted with
``before-call`` hooks; an invocation may arm a crash: the process dies right after a given
API call succeeded, as a Lambda killed at that point would.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections import Counter
from typing import Any

CODE_PATH_ENV = "SANDBOX_CODE_PATHS"
CRASH_EXIT_CODE = 86
#: Publishing calls and the request member listing their entries (``None``: one event per call).
PUBLISH = {"events:PutEvents": "Entries", "sns:PublishBatch": "PublishBatchRequestEntries",
           "sqs:SendMessageBatch": "Entries", "sns:Publish": None, "sqs:SendMessage": None}


class Context:
    """The Lambda context object, with a real remaining-time clock."""

    def __init__(self, request_id: str, timeout_seconds: float) -> None:
        self.aws_request_id = request_id
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "sandbox")
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        region, account = os.environ.get("AWS_REGION", ""), os.environ.get("SANDBOX_ACCOUNT", "")
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{account}:function:{self.function_name}"
        self.log_group_name = f"/aws/lambda/{self.function_name}"
        self.log_stream_name = "sandbox"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds until the function's timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Instruments:
    """Counts API calls of every botocore client and holds the armed crash, if any."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.crash_after: str | None = None

    def install(self) -> None:
        """Hook every client created from now on, in every botocore session."""
        import botocore.session

        create_client = botocore.session.Session.create_client
        instruments = self

        def counted(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = create_client(session, *args, **kwargs)
            client.meta.events.register("before-call", instruments.before_call)
            client.meta.events.register("before-parameter-build", instruments.before_parameter_build)
            client.meta.events.register("after-call", instruments.after_call)
            return client

        botocore.session.Session.create_client = counted

    def before_call(self, model: Any, **_: Any) -> None:
        """Count one round trip as ``service:Operation``."""
        self.calls[f"{model.service_model.service_name}:{model.name}"] += 1

    def before_parameter_build(self, model: Any, params: dict[str, Any], context: dict[str, Any],
                               **_: Any) -> None:
        """Count the events a publishing call carries; note the table a call writes (for a table-scoped crash)."""
        name = f"{model.service_model.service_name}:{model.name}"
        if isinstance(params.get("TableName"), str):
            context["sandbox_table"] = params["TableName"]
        if name in PUBLISH:
            entries = PUBLISH[name]
            self.outcomes["Published"] += 1 if entries is None else len(params.get(entries, []))

    def after_call(self, model: Any, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        """Die here once if a crash is armed for this call (``service:Operation`` or ``...@Table``) and it succeeded."""
        name = f"{model.service_model.service_name}:{model.name}"
        armed = {name, f"{name}@{context.get('sandbox_table')}"}
        if self.crash_after in armed and http_response.status_code < 300:
            sys.stderr.write(f"sandbox: injected crash after {name} succeeded\n")
            sys.stderr.flush()
            os._exit(CRASH_EXIT_CODE)

    def count_outcomes(self) -> None:
        """Tally retrysafe's engine outcomes (``Executed``, ``Replayed``...) when the runtime is used."""
        try:
            from retrysafe._observability import telemetry
        except ImportError:
            return
        count = telemetry.count

        def tally(name: str, *args: Any, **kwargs: Any) -> None:
            self.outcomes[name] += 1
            count(name, *args, **kwargs)

        telemetry.count = tally  # type: ignore[method-assign]


def main() -> None:
    """Serve invocations until stdin closes."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for path in reversed(os.environ.pop(CODE_PATH_ENV, "").split(os.pathsep)):
        if path:
            sys.path.insert(0, path)
    instruments = Instruments()
    instruments.install()
    module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
    handler = getattr(importlib.import_module(module_name), function_name)
    instruments.count_outcomes()
    timeout = float(os.environ["AWS_LAMBDA_FUNCTION_TIMEOUT"])
    for line in sys.stdin:
        request = json.loads(line)
        instruments.calls.clear()
        instruments.outcomes.clear()
        instruments.crash_after = request.get("crash_after")
        answer: dict[str, Any] = {}
        try:
            answer["result"] = handler(request["event"], Context(request["request_id"], timeout))
        except Exception as error:  # noqa: BLE001 - reported as Lambda reports a function error
            traceback.print_exc()
            answer["error"] = {"errorType": type(error).__name__, "errorMessage": str(error)}
        answer["calls"], answer["outcomes"] = dict(instruments.calls), dict(instruments.outcomes)
        protocol.write(json.dumps(answer, default=str) + "\n")


if __name__ == "__main__":
    main()
