"""IAM for every call to the embedded AWS: each role's policies from the template, evaluated per request.

Every function runs with credentials whose access key names its role (as Lambda hands a function
its role's session credentials); the pollers that act for a function (SQS and stream event source
mappings, their on-failure destinations) use the same key. :class:`Guard` sits in front of the
embedded AWS: it reads the caller's access key from the SigV4 ``Authorization`` header, turns the
request into the actions and resources IAM checks (:mod:`.calls`), and evaluates them
(:mod:`.iam`) against the role's identity policies (``AWS::IAM::Policy``, inline role policies,
``AWS::IAM::ManagedPolicy``) and the target's resource policy (``AWS::SQS::QueuePolicy``,
``AWS::SNS::TopicPolicy``, ``AWS::S3::BucketPolicy`` (for the bucket and its objects),
``AWS::SecretsManager::ResourcePolicy``, and ``AWS::Lambda::Permission``
for the services that invoke functions: API Gateway, EventBridge schedules). A denied call is answered
as AWS answers it (``AccessDeniedException``; SNS ``AuthorizationError``; S3 ``AccessDenied``) and
never reaches the service; it is listed in the ledger with the missing action and resource. Calls with the
sandbox's own credentials (provisioning, the demo's checks) are not evaluated.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from .assembly import ACCOUNT, REGION
from .calls import TARGETS, checks, query_params, s3_checks
from .iam import Decision, Policies, Principal, UnsupportedPolicy, evaluate
from .ledger import Ledger
from .provision import Provisioned

#: Identity policies of AWS managed policies a construct may attach (by name).
MANAGED = {
    "AWSLambdaBasicExecutionRole": [{"Effect": "Allow", "Resource": "*", "Action": [
        "logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"]}],
}
#: Condition keys every function call carries (calls from Lambda to AWS use TLS).
CALL_CONTEXT = {"aws:SecureTransport": "true", "aws:PrincipalAccount": ACCOUNT}
Response = tuple[str, list[tuple[str, str]], bytes]


@dataclass
class Role:
    """A role functions run with: its ARN, session name and policies."""

    logical_id: str
    arn: str
    session: str
    policies: Policies

    @property
    def principal(self) -> Principal:
        """The principal resource policies see (the role; the account for ``"AWS": account``)."""
        return Principal(arn=self.arn, account=ACCOUNT)

    @property
    def session_arn(self) -> str:
        """How AWS names the caller in an access-denied message."""
        name = self.arn.rsplit("/", 1)[-1]
        return f"arn:aws:sts::{ACCOUNT}:assumed-role/{name}/{self.session}"


class Guard:
    """Evaluates each request's actions against its caller's role (see the module docstring)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.notices: list[str] = []
        self._roles: dict[str, Role] = {}
        self._resource_policies: dict[str, list[Mapping[str, Any]]] = {}
        self._secrets: dict[str, str] = {}
        self._unknown: dict[str, list[str]] = {}
        self._stacks: dict[str, dict[str, str]] = {}
        self._policies: dict[tuple[str, str], Policies] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- what the templates say ---------------------------------------------------------------------

    def add_stack(self, done: Provisioned) -> dict[str, str]:
        """Read a provisioned stack's roles and resource policies; the access key of each function's role.

        Reading a stack again answers the same keys.
        """
        resolve, stack = done.intrinsics.resolve, done.stack
        if stack.name in self._stacks:
            return self._stacks[stack.name]
        documents: dict[str, list[Mapping[str, Any]]] = {}
        boundaries: dict[str, Mapping[str, Any]] = {}
        managed = {done.intrinsics.ref(p.logical_id): resolve(p.properties["PolicyDocument"])
                   for p in stack.of_type("AWS::IAM::ManagedPolicy")}
        for role in stack.of_type("AWS::IAM::Role"):
            props = role.properties
            found = documents.setdefault(role.logical_id, [])
            found += [resolve(p["PolicyDocument"]) for p in props.get("Policies", [])]
            for arn in resolve(props.get("ManagedPolicyArns", [])):
                found.append(self._managed(stack.name, role.logical_id, str(arn), managed))
            if "PermissionsBoundary" in props:
                boundaries[role.logical_id] = self._managed(stack.name, role.logical_id,
                                                            str(resolve(props["PermissionsBoundary"])), managed)
        for policy in stack.of_type("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            for role in policy.properties.get("Roles", []):
                if isinstance(role, dict) and "Ref" in role and role["Ref"] in documents:
                    documents[role["Ref"]].append(resolve(policy.properties["PolicyDocument"]))
        for kind, key in (("AWS::SQS::QueuePolicy", "Queues"), ("AWS::SNS::TopicPolicy", "Topics")):
            for policy in stack.of_type(kind):
                document = resolve(policy.properties["PolicyDocument"])
                for target in resolve(policy.properties.get(key, [])):
                    self._resource_policies.setdefault(self._arn_of(done, str(target)), []).append(document)
        for policy in stack.of_type("AWS::S3::BucketPolicy"):
            bucket = str(resolve(policy.properties["Bucket"]))
            self._resource_policies.setdefault(f"arn:aws:s3:::{bucket}", []).append(
                resolve(policy.properties["PolicyDocument"]))
        for policy in stack.of_type("AWS::SecretsManager::ResourcePolicy"):
            self._resource_policies.setdefault(str(resolve(policy.properties["SecretId"])), []).append(
                resolve(policy.properties["ResourcePolicy"]))
        for permission in stack.of_type("AWS::Lambda::Permission"):
            props = resolve(permission.properties)
            target = str(props["FunctionName"])
            target = target if target.startswith("arn:") else f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{target}"
            principal = str(props["Principal"])
            statement: dict[str, Any] = {
                "Effect": "Allow", "Action": props["Action"], "Resource": target,
                "Principal": {"Service": principal} if principal.endswith(".amazonaws.com") else {"AWS": principal}}
            conditions = {k: v for k, v in (("ArnLike", ("aws:SourceArn", props.get("SourceArn"))),
                                            ("StringEquals", ("aws:SourceAccount", props.get("SourceAccount"))))
                          if v[1] is not None}
            if conditions:
                statement["Condition"] = {op: {key: value} for op, (key, value) in conditions.items()}
            self._resource_policies.setdefault(target, []).append({"Statement": [statement]})
        for secret in stack.of_type("AWS::SecretsManager::Secret"):
            arn = str(done.intrinsics.ref(secret.logical_id))
            self._secrets[arn.rsplit(":", 1)[-1].rsplit("-", 1)[0]] = arn
        for role_id, found in documents.items():
            self._policies[(stack.name, role_id)] = Policies(found, boundaries.get(role_id))
        keys = {}
        for function in stack.of_type("AWS::Lambda::Function"):
            reference = function.properties.get("Role", {})
            role_id = str(reference.get("Fn::GetAtt", [""])[0]) if isinstance(reference, dict) else ""
            if role_id not in documents:
                self.notices.append(f"{stack.name}: {function.logical_id} has a role outside the template; "
                                    "its calls are not evaluated")
                continue
            for name in self._unknown.get(role_id, []):
                self.notices.append(f"{stack.name}: {role_id} uses the managed policy {name}, which the sandbox "
                                    "does not know; it grants nothing here")
            assumed = self.role(done, role_id, str(done.intrinsics.ref(function.logical_id)))
            assert assumed is not None
            keys[function.logical_id] = self.register(assumed)
        self._stacks[stack.name] = keys
        return keys

    def role(self, done: Provisioned, role_id: str, session: str) -> Role | None:
        """The stack's role ``role_id`` as assumed by ``session`` (``None``: not a role of the template)."""
        policies = self._policies.get((done.stack.name, role_id))
        if policies is None:
            return None
        return Role(role_id, str(done.intrinsics.get_att(role_id, "Arn")), session, policies)

    def _managed(self, stack: str, role: str, arn: str, in_template: Mapping[str, Any]) -> Mapping[str, Any]:
        if arn in in_template:
            return dict(in_template[arn])
        name = arn.rsplit("/", 1)[-1]
        if name not in MANAGED:
            self._unknown.setdefault(role, []).append(name)
        return {"Statement": MANAGED.get(name, [])}

    @staticmethod
    def _arn_of(done: Provisioned, target: str) -> str:
        if target.startswith("arn:"):
            return target
        for queue in done.stack.of_type("AWS::SQS::Queue"):
            if done.intrinsics.ref(queue.logical_id) == target:
                return str(done.intrinsics.get_att(queue.logical_id, "Arn"))
        return target

    def register(self, role: Role) -> str:
        """The access key a function (and its pollers) call AWS with."""
        with self._lock:
            key = f"ASIASANDBOX{next(self._ids):09d}"
            self._roles[key] = role
        return key

    def secret_arn(self, secret_id: str) -> str:
        """A secret's full ARN from its name or ARN."""
        return secret_id if secret_id.startswith("arn:") else self._secrets.get(secret_id, secret_id)

    # -- evaluation ---------------------------------------------------------------------------------

    def decide(self, role: Role, action: str, resource: str, context: Mapping[str, str] | None = None) -> Decision:
        """Evaluate one action of ``role`` on ``resource``, count it, and list it when denied."""
        try:
            decision = evaluate(role.policies, action, resource, {**CALL_CONTEXT, **(context or {})},
                                self._resource_policy(resource), role.principal)
        except UnsupportedPolicy as error:
            decision = Decision(False, reason=f"(not evaluated: {error})")
        self._count(f"{role.logical_id}: {action} on {resource}", decision)
        return decision

    def _resource_policy(self, resource: str) -> list[Mapping[str, Any]]:
        """The resource's policies; an S3 object's are its bucket's."""
        if resource.startswith("arn:aws:s3:::"):
            resource = resource.partition("/")[0]
        return self._resource_policies.get(resource, [])

    def decide_service(self, service: str, action: str, resource: str, source_arn: str) -> Decision:
        """A service principal acting for a resource (an EventBridge rule delivering to a queue)."""
        try:
            decision = evaluate(Policies(), action, resource, {**CALL_CONTEXT, "aws:SourceArn": source_arn},
                                self._resource_policy(resource), Principal(service=service))
        except UnsupportedPolicy as error:
            decision = Decision(False, reason=f"(not evaluated: {error})")
        self._count(f"{service} for {source_arn}: {action} on {resource}", decision)
        return decision

    def _count(self, what: str, decision: Decision) -> None:
        self.ledger.add("iam", "allowed" if decision.allowed else "denied")
        if not decision.allowed:
            self.ledger.add("denied", what)

    def check(self, environ: Mapping[str, Any], body: bytes) -> Response | None:
        """``None`` to pass the request on, else the access-denied answer."""
        found = re.search(r"Credential=([^/]+)/[^/]+/[^/]+/([^/]+)/", environ.get("HTTP_AUTHORIZATION", ""))
        role = self._roles.get(found.group(1)) if found else None
        if role is None or found is None:
            return None
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if found.group(2) == "s3":  # REST: the method and path say what the call is (never the body)
            # WSGI's PATH_INFO is the decoded path, as latin-1 characters
            path = str(environ.get("PATH_INFO", "")).encode("latin-1").decode("utf-8", errors="replace")
            service, calls = "s3", s3_checks(str(environ.get("REQUEST_METHOD", "")), path,
                                             parse_qs(str(environ.get("QUERY_STRING", "")), keep_blank_values=True))
        elif target:
            prefix, _, operation = target.partition(".")
            service = TARGETS.get(prefix, found.group(2))
            try:
                params = json.loads(body or b"{}")
            except ValueError:
                return None  # not a request IAM could read: the service refuses it itself
            calls = checks(service, operation, params, self.secret_arn)
        else:
            params = query_params(parse_qs(body.decode(errors="replace")))
            service = found.group(2)
            calls = checks(service, str(params.get("Action", "")), params, self.secret_arn)
        for action, resource in calls:
            decision = self.decide(role, action, resource)
            if not decision.allowed:
                message = (f"User: {role.session_arn} is not authorized to perform: {action} on resource: "
                           f"{resource} {decision.reason}")
                return denied(service, bool(target), message)
        return None


def denied(service: str, json_protocol: bool, message: str) -> Response:
    """The wire answer AWS gives a denied call (JSON protocol or query protocol)."""
    request_id = str(uuid.uuid4())
    if json_protocol:
        headers = [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", request_id)]
        if service == "sqs":
            headers.append(("x-amzn-query-error", "AccessDenied;Sender"))
        body = json.dumps({"__type": "com.amazon.coral.service#AccessDeniedException", "message": message})
        return "400 Bad Request", headers, body.encode()
    code = "AuthorizationError" if service == "sns" else "AccessDenied"
    xml = (f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{_escape(message)}</Message>"
           f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>")
    return "403 Forbidden", [("Content-Type", "text/xml"), ("x-amzn-RequestId", request_id)], xml.encode()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def middleware(app: Callable[..., Iterable[bytes]], guard: Guard) -> Callable[..., Iterable[bytes]]:
    """A WSGI wrapper answering denied requests itself and passing the others to ``app``."""
    import io

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        answer = guard.check(environ, body)
        if answer is None:
            return app(environ, start_response)
        status, headers, raw = answer
        start_response(status, [*headers, ("Content-Length", str(len(raw)))])
        return [raw]

    return guarded
