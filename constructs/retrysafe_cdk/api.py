"""API Gateway in front of idempotent functions: REST APIs (v1) and HTTP APIs (v2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from aws_cdk import Duration, FeatureFlags, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from retrysafe import names

from constructs import Construct

from ._props import refuse_ignored, refuse_owned, struct_values
from .function import IdempotentFunction
from .nag import acknowledge

_DEFAULT_RATE = 100
_DEFAULT_BURST = 200
_ALLOW_HEADERS = ("Content-Type", "Authorization", names.IDEMPOTENCY_KEY_HEADER)
_EXPOSE_HEADERS = (names.REPLAYED_HEADER, "Retry-After", "Location")
_PROBLEM = json.dumps({"type": "about:blank", "title": "Bad Request", "status": 400,
                       "detail": "$context.error.validationErrorString"})


def _access_log_group(scope: Construct) -> logs.LogGroup:
    return logs.LogGroup(scope, "AccessLogs", retention=logs.RetentionDays.ONE_MONTH,
                         removal_policy=RemovalPolicy.DESTROY)


_CLOUDWATCH_ROLE_FLAG = "@aws-cdk/aws-apigateway:disableCloudWatchRole"


def _creates_cloudwatch_role(scope: Construct, explicit: bool | None) -> bool:
    """Whether this API should create the account-level CloudWatch role (and its ``AWS::ApiGateway::Account``).

    ``explicit`` wins; otherwise CDK's feature flag decides (set: no role). Never a second one in a stack.
    """
    wanted = explicit if explicit is not None else not FeatureFlags.of(scope).is_enabled(_CLOUDWATCH_ROLE_FLAG)
    stack = Stack.of(scope)
    return bool(wanted) and not any(isinstance(c, apigw.CfnAccount) and Stack.of(c) is stack
                                    for c in stack.node.find_all())


def _has_bad_request_response(api: apigw.RestApi) -> bool:
    """Whether the API already has a ``BAD_REQUEST_PARAMETERS`` gateway response (from anyone in the app)."""
    stack = Stack.of(api)
    api_id = stack.resolve(api.rest_api_id)
    return any(isinstance(c, apigw.CfnGatewayResponse) and c.response_type == "BAD_REQUEST_PARAMETERS"
               and stack.resolve(c.rest_api_id) == api_id for c in stack.node.find_all())


def _union(ours: Sequence[str], theirs: Sequence[str] | None) -> list[str]:
    return list(dict.fromkeys([*ours, *(theirs or ())]))


def _rest_cors(user: apigw.CorsOptions | None) -> apigw.CorsOptions | None:
    """The user's CORS with retrysafe's headers added (``Idempotency-Key`` allowed, replay headers exposed)."""
    if user is None:
        return None
    values = struct_values(user)
    return apigw.CorsOptions(**{"max_age": Duration.hours(1), **values,
                                "allow_headers": _union(_ALLOW_HEADERS, values.get("allow_headers")),
                                "expose_headers": _union(_EXPOSE_HEADERS, values.get("expose_headers"))})


class IdempotentRestApi(Construct):
    """A REST API (API Gateway v1) routing methods to :class:`IdempotentFunction` s.

    :param authorizer: the authorizer every route uses (Lambda TOKEN/REQUEST or Cognito); the runtime
        reads the tenant from its context/claims. Required unless ``iam_authorization``.
    :param iam_authorization: use AWS_IAM instead (tenant = IAM caller). @default False.
    :param rest_api_props: every ``apigateway.RestApi`` setting of the API the construct creates, over
        retrysafe's defaults. ``default_cors_preflight_options`` gets ``Idempotency-Key`` added to its allowed
        headers, ``Idempotent-Replayed``, ``Retry-After`` and ``Location`` to its exposed ones (max age one
        hour unless set). ``cloud_watch_role`` creates API Gateway's account-level CloudWatch Logs role (an
        ``AWS::ApiGateway::Account``), never a second one in a stack that already has one. The stage's
        throttling, access logs and name are not ``RestApiProps`` fields of their own but
        ``deploy_options`` (a ``StageOptions``): that struct is merged field by field, so
        ``deploy_options=StageOptions(throttling_rate_limit=50)`` keeps the access logs and the stage name;
        an ``access_log_destination`` of your own replaces the log group the construct creates (which is
        how to choose another retention). @default no CORS; ``cloud_watch_role`` as CDK's
        ``@aws-cdk/aws-apigateway:disableCloudWatchRole`` feature flag says (set: none; the account must then
        already have the role, which execution logging needs), removal policy ``DESTROY``; ``deploy_options``:
        stage ``prod``, throttling 100 rps / 200 burst, ERROR execution logging, JSON access logs to a new log
        group kept one month.
    :param existing_rest_api: an ``apigateway.RestApi`` to add routes to instead of a new one. Its stage,
        throttling, access logs and CORS are its own: ``rest_api_props`` is refused with it, and no log group
        is created. Several wrappers may share one API (each has its own validator). @default a new API.
    :param problem_json_bad_request: add the API-wide ``BAD_REQUEST_PARAMETERS`` gateway response that answers a
        missing ``Idempotency-Key`` with a 400 problem+json. It applies to every route of the API (API Gateway
        has no per-method gateway responses), and is never added twice: an API that already has that response
        keeps it. @default True for a new API, False with ``existing_rest_api`` (the API's other routes keep
        their 400s; a missing key then gets API Gateway's own 400 body).

    Every method gets request validation (body and parameters); routes that require a key
    declare the ``Idempotency-Key`` header, so a request without it is refused with a 400
    at the gateway. Attributes: ``rest_api``, ``access_logs`` (None with ``existing_rest_api`` or an
    ``access_log_destination`` of your own), ``validator``, ``bad_request_response`` (None unless this wrapper
    added it), ``url``, ``cloud_watch_role`` and ``account`` (None unless this API created them).
    """

    def __init__(self, scope: Construct, construct_id: str, *, authorizer: apigw.IAuthorizer | None = None,
                 iam_authorization: bool = False, rest_api_props: apigw.RestApiProps | None = None,
                 existing_rest_api: apigw.RestApi | None = None,
                 problem_json_bad_request: bool | None = None) -> None:
        super().__init__(scope, construct_id)
        if (authorizer is None) == (not iam_authorization):
            raise ValueError(f"{self.node.path}: pass exactly one of authorizer=... (the tenant comes from it) or "
                             "iam_authorization=True; an idempotency key is only safe when scoped to a "
                             "caller the API authenticated.")
        self.authorizer = authorizer
        self.iam_authorization = iam_authorization
        self.cloud_watch_role: iam.IRole | None = None
        self.account: apigw.CfnAccount | None = None
        self.access_logs: logs.LogGroup | None = None
        refuse_ignored(self, "existing_rest_api", existing_rest_api, {"rest_api_props": struct_values(rest_api_props)},
                       "configure that RestApi itself (deploy_options=StageOptions(stage_name=..., "
                       "throttling_rate_limit=..., throttling_burst_limit=..., access_log_destination=...), "
                       "default_cors_preflight_options=..., cloud_watch_role=...)")
        self.rest_api = existing_rest_api or self._new_api(rest_api_props)
        # A child of this construct, not of the API: two wrappers can share one API.
        self.validator = apigw.RequestValidator(self, "Validator", rest_api=self.rest_api,
                                                validate_request_body=True, validate_request_parameters=True)
        self.bad_request_response: apigw.GatewayResponse | None = None
        wanted = existing_rest_api is None if problem_json_bad_request is None else problem_json_bad_request
        if wanted and not _has_bad_request_response(self.rest_api):
            self.bad_request_response = apigw.GatewayResponse(
                self, "BadRequestParameters", rest_api=self.rest_api, type=apigw.ResponseType.BAD_REQUEST_PARAMETERS,
                status_code="400", response_headers={"Content-Type": "'application/problem+json'"},
                templates={"application/json": _PROBLEM})

    def _new_api(self, rest_api_props: apigw.RestApiProps | None) -> apigw.RestApi:
        user = struct_values(rest_api_props)
        stage = struct_values(user.pop("deploy_options", None))
        if "access_log_destination" not in stage:
            self.access_logs = _access_log_group(self)
            stage["access_log_destination"] = apigw.LogGroupLogDestination(self.access_logs)
        role = _creates_cloudwatch_role(self, user.pop("cloud_watch_role", None))
        api = apigw.RestApi(self, "Api", **{
            **user, "cloud_watch_role": role,
            "cloud_watch_role_removal_policy": user.get("cloud_watch_role_removal_policy",
                                                        RemovalPolicy.DESTROY) if role else None,
            "default_cors_preflight_options": _rest_cors(user.get("default_cors_preflight_options")),
            "deploy_options": apigw.StageOptions(**{
                "stage_name": "prod", "throttling_rate_limit": _DEFAULT_RATE,
                "throttling_burst_limit": _DEFAULT_BURST, "logging_level": apigw.MethodLoggingLevel.ERROR,
                "access_log_format": apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True, http_method=True, ip=True, protocol=True, request_time=True,
                    resource_path=True, response_length=True, status=True, user=True),
                **stage})})
        if role:
            self.cloud_watch_role = cast(iam.IRole, api.node.find_child("CloudWatchRole"))
            self.account = cast(apigw.CfnAccount, api.node.find_child("Account"))
            acknowledge(api, "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                             "service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
                        "API Gateway's account-level CloudWatch role uses the AWS-managed "
                        "AmazonAPIGatewayPushToCloudWatchLogs policy, as AWS documents for execution logging.")
        acknowledge(api, "AwsSolutions-APIG3",
                    "WAF is an account/edge decision; attach a WebACL to the stage where required.")
        return api

    @property
    def url(self) -> str:
        """The deployed stage's URL."""
        return self.rest_api.url

    def add_route(self, http_method: str, path: str, function: IdempotentFunction, *, key_required: bool = True,
                  public: bool = False) -> apigw.Method:
        """Route ``http_method path`` to ``function``.

        ``key_required``: the gateway refuses requests without ``Idempotency-Key`` (400).
        ``public``: no authorizer; only for routes that authenticate requests themselves
        (signed webhooks).
        """
        resource = self.rest_api.root.resource_for_path(path)
        params = {f"method.request.header.{names.IDEMPOTENCY_KEY_HEADER}": True} if key_required else None
        authorizer = None if public or self.iam_authorization else self.authorizer
        kind = (apigw.AuthorizationType.NONE if public else apigw.AuthorizationType.IAM if self.iam_authorization
                else None)
        added = resource.add_method(http_method, apigw.LambdaIntegration(function.invoke_target),
                                    request_validator=self.validator, request_parameters=params,
                                    authorizer=authorizer, authorization_type=kind)
        if public:
            reason = "The route authenticates each request itself (HMAC signature over the raw body)."
            acknowledge(added, "AwsSolutions-APIG4", reason)
            acknowledge(added, "AwsSolutions-COG4", reason)
        elif not isinstance(self.authorizer, apigw.CognitoUserPoolsAuthorizer):
            acknowledge(added, "AwsSolutions-COG4",
                        "Callers are authenticated by the pluggable authorizer passed to the construct "
                        "(Lambda or IAM), which also supplies the tenant.")
        return added

    def metric_server_errors(self, **options: Any) -> cloudwatch.Metric:
        """5xx responses (sum per 5 minutes; ``options``: ``MetricOptions`` fields)."""
        return self.rest_api.metric_server_error(**{"statistic": "Sum", **options})

    def metric_client_errors(self, **options: Any) -> cloudwatch.Metric:
        """4xx responses, including 409 in-flight and 422 key reuse (sum per 5 minutes)."""
        return self.rest_api.metric_client_error(**{"statistic": "Sum", **options})


#: ``apigatewayv2.HttpApi`` props the construct decides itself, with where each one goes instead.
_OWNED_HTTP_API_PROPS = {
    "default_authorizer": "pass authorizer=... (every route uses it; the tenant comes from it)",
    "create_default_stage": "the construct configures the default stage (throttling, access logs); "
                            "add stages of your own with http_api.add_stage(...)",
}


class IdempotentHttpApi(Construct):
    """An HTTP API (API Gateway v2) routing methods to :class:`IdempotentFunction` s.

    :param authorizer: an ``IHttpRouteAuthorizer`` (JWT, Lambda or IAM; required: the tenant comes from it).
    :param http_api_props: every ``apigatewayv2.HttpApi`` setting of the API the construct creates
        (``api_name``, ``description``, ``cors_preflight``, domain mapping...), except
        ``default_authorizer`` and ``create_default_stage``, which are refused there (the construct decides
        them). ``cors_preflight`` gets ``Idempotency-Key`` added to its allowed headers,
        ``Idempotent-Replayed``, ``Retry-After`` and ``Location`` to its exposed ones (all methods and max
        age one hour unless set). ``HttpApiProps`` has no stage settings, so the default stage's throttling
        (100 rps / 200 burst) and JSON access logs (a new log group kept one month) are not props: change
        them on ``http_api.default_stage.node.default_child`` (its ``CfnStage``). @default no CORS.
    :param existing_http_api: an ``HttpApi`` to add routes to (its stage, throttling, access logs and CORS are
        its own: ``http_api_props`` is refused with it, and no log group is created). @default a new API.

    HTTP APIs have no request validation: the runtime answers a missing or malformed key with a
    400 problem+json. Attributes: ``http_api``, ``authorizer``, ``access_logs`` (None with
    ``existing_http_api``), ``url``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, authorizer: apigwv2.IHttpRouteAuthorizer,
                 http_api_props: apigwv2.HttpApiProps | None = None,
                 existing_http_api: apigwv2.HttpApi | None = None) -> None:
        super().__init__(scope, construct_id)
        self.authorizer = authorizer
        self.access_logs: logs.LogGroup | None = None
        user = struct_values(http_api_props)
        refuse_ignored(self, "existing_http_api", existing_http_api, {"http_api_props": user},
                       "configure that HttpApi's stage and CORS itself")
        if existing_http_api is not None:
            self.http_api = existing_http_api
            return
        refuse_owned(self, "http_api_props", user, _OWNED_HTTP_API_PROPS)
        self.access_logs = _access_log_group(self)
        cors = user.pop("cors_preflight", None)
        if cors is not None:
            values = struct_values(cors)
            cors = apigwv2.CorsPreflightOptions(**{
                "allow_methods": [apigwv2.CorsHttpMethod.ANY], "max_age": Duration.hours(1), **values,
                "allow_headers": _union(_ALLOW_HEADERS, values.get("allow_headers")),
                "expose_headers": _union(_EXPOSE_HEADERS, values.get("expose_headers"))})
        self.http_api = apigwv2.HttpApi(self, "Api", **user, default_authorizer=authorizer, cors_preflight=cors)
        assert self.http_api.default_stage is not None
        stage = cast(apigwv2.CfnStage, self.http_api.default_stage.node.default_child)
        stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn,
            format=json.dumps({"requestId": "$context.requestId", "ip": "$context.identity.sourceIp",
                               "requestTime": "$context.requestTime", "routeKey": "$context.routeKey",
                               "status": "$context.status", "responseLength": "$context.responseLength",
                               "integrationError": "$context.integrationErrorMessage"}))
        stage.default_route_settings = apigwv2.CfnStage.RouteSettingsProperty(
            throttling_rate_limit=_DEFAULT_RATE, throttling_burst_limit=_DEFAULT_BURST)

    @property
    def url(self) -> str:
        """The default stage's URL."""
        return self.http_api.url or ""

    def add_route(self, method: str, path: str, function: IdempotentFunction, *,
                  public: bool = False) -> list[apigwv2.HttpRoute]:
        """Route ``method path`` to ``function`` behind the construct's authorizer.

        ``public``: no authorizer; only for routes that authenticate requests themselves (signed webhooks).
        """
        integration = integrations.HttpLambdaIntegration(f"{method}{path}".replace("/", "_"),
                                                         function.invoke_target)
        routes = self.http_api.add_routes(path=path, methods=[apigwv2.HttpMethod(method.upper())],
                                          integration=integration,
                                          authorizer=apigwv2.HttpNoneAuthorizer() if public else self.authorizer)
        if public:
            reason = "The route authenticates each request itself (HMAC signature over the raw body)."
            for route in routes:
                acknowledge(route, "AwsSolutions-APIG4", reason)
        return routes

    def metric_server_errors(self, **options: Any) -> cloudwatch.Metric:
        """5xx responses (sum per 5 minutes; ``options``: ``MetricOptions`` fields)."""
        return self.http_api.metric_server_error(**{"statistic": "Sum", **options})

    def metric_client_errors(self, **options: Any) -> cloudwatch.Metric:
        """4xx responses, including 409 in-flight and 422 key reuse (sum per 5 minutes)."""
        return self.http_api.metric_client_error(**{"statistic": "Sum", **options})
