"""What each adapter loads in a fresh interpreter: on import, once a handler is decorated, and after a first request.

A cold start pays for every module a handler's import loads, so each adapter loads only what it uses:
the HTTP decorator keyed by a header needs neither JMESPath nor the result serializers (and their
``dataclasses``/``inspect``), no adapter needs Powertools' idempotency or pydantic. Each case runs in its own
interpreter (the same ``sys.path``) and the test compares the set of modules it loaded with explicit lists,
never a time. After a first request botocore has loaded its own dependencies (``jmespath``, ``dataclasses``,
``inspect``...): from then on only retrysafe's modules and the optional libraries are checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from retrysafe import names
from retrysafe.testing import api_event, sqs_record, task_payload

from tests.helpers import EXECUTION, STATE_MACHINE, TABLE, create_idempotency_table

#: Loaded by no adapter's import (botocore brings some of them on the first request).
NEVER_ON_IMPORT = frozenset({
    "jmespath",  # only a JMESPath selector (key=, fingerprint= as an expression) compiles one
    "dataclasses", "inspect",  # the result serializers' (and jmespath's, botocore's) own imports
    "uuid", "botocore", "boto3",  # the store's client is created on the first request (outside the init phase)
    "retrysafe._results",  # the result serializers: only @idempotent and @idempotent_function pick one
})
#: Never loaded by a handler, not even by its first request. (Not ``awscrt``: botocore imports it whenever it
#: is installed, for its own CRT features.)
NEVER = frozenset({"aws_lambda_powertools.utilities.idempotency", "pydantic", "retrysafe.testing",
                   "retrysafe._cli",  # the operator's command line
                   "retrysafe._crt"})  # the fast transport: only when RETRYSAFE_TRANSPORT selects it
#: Powertools as a whole: only the middleware (its event handler) and the batch consumers (SQS, streams:
#: Powertools' batch processor, on the first request) load it.
POWERTOOLS = frozenset({"aws_lambda_powertools"})
ROOMS = frozenset({"retrysafe.http", "retrysafe.sqs", "retrysafe.streams", "retrysafe.stepfunctions",
                   "retrysafe.webhook", "retrysafe.outbox", "retrysafe._generic"})
#: The natural keys of @idempotent (EventBridge, SNS, S3) are JMESPath expressions compiled on import, and
#: the decorators pick a result serializer from the return annotation (inspect, dataclasses, _results).
GENERIC = frozenset({"jmespath", "inspect", "dataclasses", "retrysafe._results"})
#: A stream consumer's default key is a JMESPath expression, compiled when the decorator is applied.
STREAM_KEY = frozenset({"jmespath", "inspect"})


def _room(*allowed: str) -> frozenset[str]:
    """The other rooms than ``allowed``: an adapter never loads another trigger's room."""
    return ROOMS - set(allowed)


#: adapter -> (import, decoration, what it must not load on import, what the decoration may load too).
CASES: dict[str, tuple[str, str, frozenset[str], frozenset[str]]] = {
    "idempotent_http": (
        "from retrysafe import idempotent_http",
        "handler = idempotent_http(lambda event, context, txn: {'statusCode': 201, 'body': '{}'}, operation='Imports')",
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.http"), frozenset()),
    "IdempotencyMiddleware": (
        "from retrysafe import IdempotencyMiddleware",
        "handler = IdempotencyMiddleware(operation='Imports')",
        # Powertools' event handler, which the middleware plugs into, loads jmespath, dataclasses and botocore
        frozenset({"retrysafe._results", "boto3"}) | NEVER | _room("retrysafe.http"), frozenset()),
    "idempotent": (
        "from retrysafe import idempotent",
        "handler = idempotent(subscriber='imports')(lambda event, context, txn: None)",
        NEVER_ON_IMPORT - GENERIC | NEVER | POWERTOOLS | _room("retrysafe._generic"), frozenset()),
    "idempotent_function": (
        "from retrysafe import idempotent_function",
        "handler = idempotent_function(data_keyword_argument='order', subscriber='imports')(lambda order, txn: None)",
        NEVER_ON_IMPORT - GENERIC | NEVER | POWERTOOLS | _room("retrysafe._generic"), frozenset()),
    "idempotent_sqs": (
        "from retrysafe import idempotent_sqs",
        "handler = idempotent_sqs(lambda message, txn: None, subscriber='imports')",
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.sqs"), frozenset()),
    "idempotent_task": (
        "from retrysafe import idempotent_task",
        "handler = idempotent_task(lambda task, context, txn: {'done': True})",
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.stepfunctions") | {"retrysafe._select"}, frozenset()),
    "idempotent_kinesis": (
        "from retrysafe import idempotent_kinesis",
        "handler = idempotent_kinesis(subscriber='imports')(lambda message, txn: None)",
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.streams"), STREAM_KEY),
    "idempotent_dynamodb_stream": (
        "from retrysafe import idempotent_dynamodb_stream",
        "handler = idempotent_dynamodb_stream(subscriber='imports')(lambda change, txn: None)",
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.streams"), STREAM_KEY),
    "webhook": (
        "from retrysafe.webhook import handler",
        "",
        # importing the HTTP wire layer runs retrysafe/http/__init__.py, which imports the decorator
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.webhook", "retrysafe.http")
        | {"retrysafe.http._middleware"}, frozenset()),
    "outbox publisher": (
        "from retrysafe.outbox.publisher import handler",
        "",
        NEVER_ON_IMPORT | NEVER | POWERTOOLS | _room("retrysafe.outbox") | {"retrysafe._engine", "retrysafe._select"},
        frozenset()),
}

_PROBE = """
import json, sys
{imports}
loaded = {{"import": sorted(sys.modules)}}
{decoration}
loaded["decorate"] = sorted(sys.modules)
event = json.loads(sys.stdin.read() or "null")
if event is not None:
    class Context:  # the parts of Lambda's context the adapters read (retrysafe.testing's would be loaded)
        aws_request_id = "imports-request"
        function_name = "imports"
        memory_limit_in_mb = 256
        invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:imports"

        def get_remaining_time_in_millis(self):
            return 30_000

    loaded["answer"] = handler(event, Context())
    loaded["invoke"] = sorted(sys.modules)
print(json.dumps(loaded, default=str))
"""


def probe(case: str, event: Any = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``case``'s import and decoration (and with ``event`` one first invocation) in a fresh interpreter."""
    imports, decoration, _, _ = CASES[case]
    script = _PROBE.format(imports=imports, decoration=decoration)
    environ = {key: value for key, value in os.environ.items()
               if key not in ("AWS_LAMBDA_INITIALIZATION_TYPE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB")}
    environ |= {"PYTHONPATH": os.pathsep.join(sys.path), names.TABLE_ENV: TABLE, **(env or {})}
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(event), env=environ,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def loaded(modules: list[str], denied: frozenset[str]) -> list[str]:
    """The modules of ``modules`` that are, or are inside, a package of ``denied``."""
    return sorted(m for m in modules if any(m == d or m.startswith(d + ".") for d in denied))


@pytest.mark.parametrize("case", sorted(CASES))
def test_importing_and_decorating_loads_only_what_the_adapter_uses(case: str) -> None:
    _, _, denied, decoration_loads = CASES[case]
    result = probe(case)
    found = loaded(result["import"], denied)
    assert not found, f"importing {case} loads {found}"
    found = loaded(result["decorate"], denied - decoration_loads)
    assert not found, f"decorating with {case} loads {found}"


def test_a_jmespath_selector_loads_jmespath_when_the_decorator_compiles_it() -> None:
    """The deferred import still happens where it is needed: at decoration, not on the first event."""
    script = ("import sys\nfrom retrysafe import idempotent_sqs\nassert 'jmespath' not in sys.modules\n"
              "idempotent_sqs(lambda message, txn: None, subscriber='imports', key='body.order_id')\n"
              "assert 'jmespath' in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """moto's server on 127.0.0.1 with the idempotency table: the probes' first requests go there."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        create_idempotency_table(boto3.client("dynamodb", region_name="eu-west-1", endpoint_url=url))
        yield url
    finally:
        server.stop()


#: case -> a first event, and the answer that shows it ran.
FIRST_REQUESTS: dict[str, tuple[Any, Any]] = {
    "idempotent_http": (api_event("{}", headers={names.IDEMPOTENCY_KEY_HEADER: "imports-http"}), 201),
    "idempotent_sqs": ({"Records": [sqs_record({"order_id": "imports-sqs"}, message_id="imports-sqs")]},
                       {"batchItemFailures": []}),
    "idempotent_task": (task_payload({"order": 1}, execution=EXECUTION, state_machine=STATE_MACHINE), {"done": True}),
}


@pytest.mark.parametrize("case", sorted(FIRST_REQUESTS))
def test_a_first_request_loads_no_other_room_nor_the_serializers(case: str, endpoint: str) -> None:
    event, expected = FIRST_REQUESTS[case]
    result = probe(case, event, env={"AWS_ENDPOINT_URL_DYNAMODB": endpoint})
    answer = result["answer"]
    assert (answer["statusCode"] if case == "idempotent_http" else answer) == expected, answer
    # botocore has loaded jmespath, dataclasses, inspect...: what is left to check is retrysafe's and Powertools'
    denied = {name for name in CASES[case][2] if name.startswith("retrysafe.")} | NEVER
    if case == "idempotent_http":
        denied |= POWERTOOLS
    found = loaded(result["invoke"], frozenset(denied))
    assert not found, f"a first request of {case} loads {found}"
    assert "botocore" in result["invoke"]  # the request did reach DynamoDB through the store's client


def test_the_probe_sees_what_a_handler_loads() -> None:
    """The check itself: a module a handler does load is reported."""
    result = probe("idempotent")
    assert loaded(result["decorate"], frozenset({"retrysafe._results", "inspect"})) == ["inspect",
                                                                                       "retrysafe._results"]
