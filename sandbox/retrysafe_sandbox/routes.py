"""API routes from the template: REST API (v1) resources and methods, HTTP API (v2) routes.

Each :class:`Route` knows its method, path template, target function (or a MOCK
integration's canned answer), authorization type and authorizer, its stage and the headers
the gateway requires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .provision import Provisioned


@dataclass(frozen=True)
class Route:
    """One method on one path of one API."""

    api: str
    version: int
    method: str
    path: str
    function: str | None
    authorization: str = "NONE"
    authorizer: str | None = None
    scopes: tuple[str, ...] = ()
    stage: str = "$default"
    required_headers: tuple[str, ...] = ()
    mock_status: int = 200
    mock_headers: dict[str, str] = field(default_factory=dict)

    @property
    def pattern(self) -> re.Pattern[str]:
        """The path template as a regular expression with named groups."""
        regex = re.sub(r"\{(\w+)\+\}", r"(?P<\1>.+)", re.escape(self.path).replace(r"\{", "{").replace(r"\}", "}"))
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", regex) + "$")

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """Path parameters if this route serves ``method path``, else ``None``."""
        if self.method not in (method, "ANY"):
            return None
        found = self.pattern.match(path)
        return found.groupdict() if found else None


def function_of(done: Provisioned, uri: Any) -> str | None:
    """The logical id of the function an integration or authorizer URI invokes."""
    text = str(done.intrinsics.resolve(uri))
    for resource in done.stack.of_type("AWS::Lambda::Function"):
        if done.intrinsics.get_att(resource.logical_id, "Arn") in text:
            return resource.logical_id
    return None


def _rest_path(done: Provisioned, resource_id: Any) -> str:
    if not isinstance(resource_id, dict) or "Ref" not in resource_id:
        return "/"  # Fn::GetAtt [api, RootResourceId]
    resource = done.stack.resources[resource_id["Ref"]].properties
    parent = _rest_path(done, resource["ParentId"])
    return parent.rstrip("/") + "/" + str(resource["PathPart"])


def _unquote(value: Any) -> str:
    return str(value).strip("'")


def _ref(value: Any) -> str | None:
    return str(value["Ref"]) if isinstance(value, dict) and "Ref" in value else None


def _stages(done: Provisioned) -> dict[str, str]:
    return {str(_ref(s.properties.get("RestApiId"))): str(s.properties.get("StageName", "prod"))
            for s in done.stack.of_type("AWS::ApiGateway::Stage")}


def rest_routes(done: Provisioned) -> list[Route]:
    """Routes of every REST API (``AWS::ApiGateway::Method``) in the stack."""
    routes, stages = [], _stages(done)
    for method in done.stack.of_type("AWS::ApiGateway::Method"):
        props = method.properties
        integration = props.get("Integration", {})
        required = tuple(name.split(".", 3)[3] for name, needed in props.get("RequestParameters", {}).items()
                         if needed and name.startswith("method.request.header.") and props.get("RequestValidatorId"))
        response = (integration.get("IntegrationResponses") or [{}])[0]
        api = str(props["RestApiId"].get("Ref", "api"))
        routes.append(Route(
            api=api, version=1, method=props["HttpMethod"], stage=stages.get(api, "prod"),
            authorizer=_ref(props.get("AuthorizerId")), scopes=tuple(props.get("AuthorizationScopes", ())),
            path=_rest_path(done, props["ResourceId"]),
            function=function_of(done, integration["Uri"]) if integration.get("Type") == "AWS_PROXY" else None,
            authorization=props.get("AuthorizationType", "NONE"), required_headers=required,
            mock_status=int(response.get("StatusCode", 200)),
            mock_headers={k.rsplit(".", 1)[1]: _unquote(v) for k, v in response.get("ResponseParameters", {}).items()
                          if k.startswith("method.response.header.")}))
    return routes


def http_routes(done: Provisioned) -> list[Route]:
    """Routes of every HTTP API (``AWS::ApiGatewayV2::Route``) in the stack."""
    routes = []
    for route in done.stack.of_type("AWS::ApiGatewayV2::Route"):
        props = route.properties
        target = str(done.intrinsics.resolve(props.get("Target", ""))).removeprefix("integrations/")
        integration = done.stack.resources.get(target)
        function = function_of(done, integration.properties.get("IntegrationUri")) if integration else None
        key = props["RouteKey"]
        method, path = ("ANY", "/{proxy+}") if key == "$default" else key.split(" ", 1)
        routes.append(Route(api=str(props["ApiId"].get("Ref", "api")), version=2, method=method, path=path,
                            function=function, authorization=props.get("AuthorizationType", "NONE"),
                            authorizer=_ref(props.get("AuthorizerId")),
                            scopes=tuple(props.get("AuthorizationScopes", ()))))
    return routes


def api_routes(done: Provisioned) -> dict[str, list[Route]]:
    """Routes per API (logical id), most specific paths first."""
    apis: dict[str, list[Route]] = {}
    for route in rest_routes(done) + http_routes(done):
        apis.setdefault(route.api, []).append(route)
    for routes in apis.values():
        routes.sort(key=lambda r: (r.path.count("{"), -r.path.count("/"), r.method == "ANY"))
    return apis


def gateway_response(done: Provisioned, api: str, kind: str) -> dict[str, Any] | None:
    """A REST API's customised gateway response of ``kind`` (e.g. ``BAD_REQUEST_PARAMETERS``)."""
    for resource in done.stack.of_type("AWS::ApiGateway::GatewayResponse"):
        props = resource.properties
        if props.get("ResponseType") == kind and props.get("RestApiId", {}).get("Ref") == api:
            return props
    return None
