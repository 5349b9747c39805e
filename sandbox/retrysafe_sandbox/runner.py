"""The sandbox: an embedded AWS (moto's server on 127.0.0.1, :mod:`.embedded`), the provisioned stacks, and their app running.

``with Sandbox(options) as sandbox:`` starts everything; leaving the block stops the HTTP
fronts and pollers, ends every execution environment and stops the embedded AWS.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from .assembly import REGION, function_name, load_stacks
from .authorizers import Gate, authorizers
from .event_targets import AsyncConfig, EventTargetPoller, async_configs
from .functions import FunctionPool, Invocation, function_specs, log_file
from .guard import Guard
from .http_front import ApiServer
from .ledger import Ledger
from .provision import Provisioned, Provisioner, Schedule
from .routes import api_routes, gateway_response
from .sqs_poller import SqsPoller
from .stepfunctions import PACKAGE, StepFunctions, machines, node_modules
from .streams import StreamPoller

#: How long :meth:`Sandbox.stop` waits for the pollers, all together.
STOP_SECONDS = 5.0


@dataclass
class Options:
    """How to run: which assembly and stacks, the local tenant, ports, queue visibility, logs."""

    assembly: Path = Path("cdk.out")
    stacks: list[str] = field(default_factory=list)
    tenant: str = "local"
    port: int = 0
    aws_port: int = 0
    visibility_timeout: int | None = None
    log_dir: Path | None = None


class Sandbox:
    """Runs the synthesized app locally (see the module docstring)."""

    def __init__(self, options: Options, notice: Callable[[str], None] = print) -> None:
        self.options, self.notice = options, notice
        self.ledger = Ledger()
        self.guard = Guard(self.ledger)
        self.pools: dict[str, FunctionPool] = {}
        self.apis: list[ApiServer] = []
        self.pollers: list[SqsPoller | StreamPoller | EventTargetPoller] = []
        self.provisioned: list[Provisioned] = []
        self.stepfunctions: StepFunctions | None = None
        self._stop = threading.Event()
        self._logs: list[IO[str]] = []
        self._server: Any = None
        self.endpoint = ""

    # -- lifecycle ----------------------------------------------------------------------------------

    def __enter__(self) -> Sandbox:  # noqa: PYI034 - Sandbox is not meant to be subclassed
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start the embedded AWS, provision every selected stack, and run its app."""
        from .embedded import EmbeddedAws

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = EmbeddedAws(self.options.aws_port, self.guard)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        # moto's backends live as long as the process: a sandbox started after another one in it (tests)
        # would find the first one's tables, and its stream pollers assume streams that begin empty.
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST"),
                               timeout=30).close()
        stacks = load_stacks(self.options.assembly)
        chosen = [s for s in stacks if not self.options.stacks or s.name in self.options.stacks]
        if not chosen:
            raise ValueError(f"no stack named {self.options.stacks} in {self.options.assembly}; "
                             f"it has {[s.name for s in stacks]}")
        port = self.options.port
        for stack in chosen:
            done = Provisioner(self.client, self.options.visibility_timeout, self._target_allowed).provision(stack)
            self.provisioned.append(done)
            for reason, ids in done.skipped.items():
                self.notice(f"sandbox: {stack.name}: skipping {reason} (not emulated): {', '.join(ids)}")
            keys = self.guard.add_stack(done)
            while self.guard.notices:
                self.notice(f"sandbox: {self.guard.notices.pop(0)}")
            self._run_functions(done, keys)
            found = authorizers(done)
            for api, routes in api_routes(done).items():
                may_invoke = self._may_invoke("apigateway.amazonaws.com")
                server = ApiServer(routes, self.invoke, self.ledger, self.options.tenant, port,
                                   gateway_response(done, api, "BAD_REQUEST_PARAMETERS"),
                                   Gate(found, self.invoke, self.ledger, may_invoke=may_invoke), may_invoke)
                port = port + 1 if port else 0
                self.apis.append(server)
                server.start()
            self._run_mappings(done)
            self._run_event_targets(done)
            self._run_machines(done)
            for schedule in done.schedules:
                threading.Thread(target=self._every, args=(schedule,), daemon=True).start()

    def stop(self) -> None:
        """Stop serving and polling, end the execution environments and the embedded AWS.

        Takes about a second, however busy the app is: invocations in flight are cut short (their
        environments end, as a deployment's would), so nothing waits for a function's timeout.
        """
        self._stop.set()
        for server in self.apis:
            server.shutdown()
            server.server_close()
        if self.stepfunctions is not None:
            self.stepfunctions.stop()
        for pool in self.pools.values():
            pool.stop()
        # The pollers see the stop at their next step: a receive's 1 s wait at most, once invokes answer.
        deadline = time.monotonic() + STOP_SECONDS
        for poller in self.pollers:
            poller.join(timeout=max(0.0, deadline - time.monotonic()))
        for log in self._logs:
            log.close()
        if self._server is not None:
            self._server.stop()

    # -- wiring -------------------------------------------------------------------------------------

    def client(self, service: str, access_key: str = "sandbox") -> Any:
        """A boto3 client for the embedded AWS.

        With the default key its calls are the sandbox's own (not IAM-evaluated, counted as
        ``sandbox``); with a function's key they are made on that function's behalf, under its role.
        """
        import boto3

        client = boto3.session.Session().client(service, endpoint_url=self.endpoint, region_name=REGION,
                                                aws_access_key_id=access_key, aws_secret_access_key="sandbox")
        if access_key == "sandbox":
            client.meta.events.register("before-call", lambda model, **_: self.ledger.add(
                "sandbox_calls", f"{model.service_model.service_name}:{model.name}"))
        return client

    def _may_invoke(self, service: str) -> Callable[[str, str], bool]:
        """Whether ``service``, acting for a source ARN, may invoke a function (its ``AWS::Lambda::Permission`` s)."""
        def allowed(function: str, source_arn: str) -> bool:
            arn = self.pools[function].spec.arn
            return self.guard.decide_service(service, "lambda:InvokeFunction", arn, source_arn).allowed
        return allowed

    def _target_allowed(self, done: Provisioned, rule_arn: str, target_arn: str) -> bool:
        self.guard.add_stack(done)
        action = "sns:Publish" if target_arn.startswith("arn:aws:sns:") else "sqs:SendMessage"
        return self.guard.decide_service("events.amazonaws.com", action, target_arn, rule_arn).allowed

    def invoke(self, function: str, event: Any) -> Invocation:
        """Invoke a function (by logical id) as its event source would."""
        return self.pools[function].invoke(event)

    def _run_functions(self, done: Provisioned, keys: Mapping[str, str]) -> None:
        for spec in function_specs(done, self.options.visibility_timeout).values():
            spec = dataclasses.replace(spec, access_key=keys.get(spec.logical_id, "sandbox"))
            log = log_file(self.options.log_dir, spec) if self.options.log_dir else None
            if log is not None:
                self._logs.append(log)
            self.pools[spec.logical_id] = FunctionPool(spec, self.endpoint, log, self.ledger.invoked)

    def _run_mappings(self, done: Provisioned) -> None:
        functions = {done.intrinsics.ref(f.logical_id): f.logical_id for f in done.stack.of_type("AWS::Lambda::Function")}
        queues = {done.intrinsics.get_att(q.logical_id, "Arn"): done.intrinsics.ref(q.logical_id)
                  for q in done.stack.of_type("AWS::SQS::Queue")}
        for mapping in done.stack.of_type("AWS::Lambda::EventSourceMapping"):
            props = done.intrinsics.resolve(mapping.properties)
            pool = self.pools[functions[function_name(str(props["FunctionName"]))]]
            source = str(props.get("EventSourceArn", ""))
            if props.get("Enabled") is False:
                continue
            if source in queues:
                self.pollers.append(SqsPoller(props, queues[source], self.client("sqs", pool.spec.access_key), pool,
                                              self.ledger, self._stop))
            elif ":dynamodb:" in source and "/stream/" in source:
                destination = self._destination(queues, pool.spec.access_key)
                self.pollers.append(StreamPoller(props, self.client("dynamodbstreams", pool.spec.access_key),
                                                 destination, pool, self.ledger, self._stop))
            else:
                self.notice(f"sandbox: {done.stack.name}: skipping event source {source} of "
                            f"{pool.spec.logical_id} (not emulated)")
                continue
            self.pollers[-1].start()

    def _run_event_targets(self, done: Provisioned) -> None:
        configs = async_configs(done)
        queues = {done.intrinsics.get_att(q.logical_id, "Arn"): done.intrinsics.ref(q.logical_id)
                  for q in done.stack.of_type("AWS::SQS::Queue")}
        may_invoke = self._may_invoke("events.amazonaws.com")
        sqs = self.client("sqs")
        for target in done.event_targets:
            pool = self.pools[target.function_id]

            def dead_letter(arn: str, body: str, rule_arn: str = target.rule_arn) -> None:
                # EventBridge sends to a target's dead-letter queue under that queue's policy (aws:SourceArn the rule).
                allowed = self.guard.decide_service("events.amazonaws.com", "sqs:SendMessage", arn, rule_arn).allowed
                if allowed and arn in queues:
                    sqs.send_message(QueueUrl=queues[arn], MessageBody=body)
                else:
                    self.ledger.add("events", f"lost: the dead-letter queue {arn} refused EventBridge")

            self.pollers.append(EventTargetPoller(
                target, sqs, pool, configs.get(target.function_id, AsyncConfig()), may_invoke, dead_letter,
                self._destination(queues, pool.spec.access_key), self.ledger, self._stop))
            self.pollers[-1].start()

    def _run_machines(self, done: Provisioned) -> None:
        found = machines(done, self.guard)
        if not found:
            return
        modules = node_modules()
        if modules is None:
            self.notice(f"sandbox: {done.stack.name}: skipping state machines {', '.join(found)}: the ASL "
                        f"interpreter is not installed (npm ci installs {PACKAGE} from package-lock.json)")
            return
        if self.stepfunctions is None:
            self.stepfunctions = StepFunctions(
                self.invoke, lambda function: str(self.pools[function].spec.arn), self.guard, self.ledger, modules)
        self.stepfunctions.add(found)

    def _destination(self, queues: dict[str, str], access_key: str) -> Callable[[str, str], None]:
        sqs, sns = self.client("sqs", access_key), self.client("sns", access_key)

        def send(arn: str, body: str) -> None:
            if arn in queues:
                sqs.send_message(QueueUrl=queues[arn], MessageBody=body)
            else:
                sns.publish(TopicArn=arn, Message=body)
        return send

    def _every(self, schedule: Schedule) -> None:
        may_invoke = self._may_invoke("events.amazonaws.com")
        while not self._stop.wait(schedule.seconds):
            if may_invoke(schedule.function_id, schedule.rule_arn):
                self.invoke(schedule.function_id, {"source": "aws.events", "detail-type": "Scheduled Event",
                                               "resources": [schedule.rule], "detail": {}})

    # -- observation --------------------------------------------------------------------------------

    def dead_letter_queues(self) -> list[str]:
        """URLs of the queues failures end in: redrive targets, event source and asynchronous invocation
        on-failure destinations, and rule targets' dead-letter queues."""
        urls = []
        for done in self.provisioned:
            resolve = done.intrinsics.resolve
            by_arn = {resolve({"Fn::GetAtt": [q.logical_id, "Arn"]}): resolve({"Ref": q.logical_id})
                      for q in done.stack.of_type("AWS::SQS::Queue")}
            targets = [resolve(q.properties["RedrivePolicy"]).get("deadLetterTargetArn")
                       for q in done.stack.of_type("AWS::SQS::Queue") if "RedrivePolicy" in q.properties]
            targets += [resolve(m.properties.get("DestinationConfig", {})).get("OnFailure", {}).get("Destination")
                        for m in done.stack.of_type("AWS::Lambda::EventSourceMapping")]
            targets += [config.on_failure for config in async_configs(done).values()]
            targets += [target.dead_letter for target in done.event_targets]
            urls += [by_arn[arn] for arn in dict.fromkeys(targets) if arn in by_arn]
        return urls

    def settle(self, timeout: float = 60.0, quiet_for: float = 1.0) -> bool:
        """Wait until every poller is idle, every mapped queue is empty (visible and in flight) and every
        stream poller has delivered what its stream holds; ``False`` when ``timeout`` passed first."""
        sqs = self.client("sqs")
        urls = [p.queue_url for p in self.pollers if isinstance(p, (SqsPoller, EventTargetPoller))]
        streams = [p for p in self.pollers if isinstance(p, StreamPoller)]
        reader = self.client("dynamodbstreams") if streams else None
        deadline, quiet_since = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            waiting = sum(int(v) for url in urls for v in sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
            )["Attributes"].values())
            if waiting or any(p.busy for p in self.pollers) or not all(p.caught_up(reader) for p in streams):
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= quiet_for:
                return True
            time.sleep(0.2)
        return False
