"""API Gateway in front of idempotent functions: REST APIs (v1) and HTTP APIs (v2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs

from constructs import Construct

from .function import IdempotentFunction
from .nag import acknowledge

KEY_HEADER = "Idempotency-Key"
ALLOW_HEADERS = ("Content-Type", "Authorization", KEY_HEADER)
EXPOSE_HEADERS = ("Idempotent-Replayed", "Retry-After", "Location")
_PROBLEM = json.dumps({"type": "about:blank", "title": "Bad Request", "status": 400,
                       "detail": "$context.error.validationErrorString"})


def _access_log_group(scope: Construct, retention: logs.RetentionDays) -> logs.LogGroup:
    return logs.LogGroup(scope, "AccessLogs", retention=retention, removal_policy=RemovalPolicy.DESTROY)


class IdempotentRestApi(Construct):
    """A REST API (API Gateway v1) routing methods to :class:`IdempotentFunction` s.

    Props:

    - ``authorizer``: the authorizer every route uses (Lambda TOKEN/REQUEST or Cognito); the
      runtime reads the tenant from its context/claims. Required unless ``iam_authorization``.
    - ``iam_authorization``: use AWS_IAM instead (tenant = IAM caller). Default False.
    - ``cors_origins``: allowed origins (default: no CORS). ``Idempotency-Key`` is an allowed header;
      ``Idempotent-Replayed``, ``Retry-After`` and ``Location`` are exposed.
    - ``throttling_rate_limit`` / ``throttling_burst_limit``: stage defaults 100 rps / 200.
    - ``stage_name``: default ``prod``. ``log_retention``: access logs, default one month.
    - ``rest_api``: an existing ``apigateway.RestApi`` to add routes to instead of a new one.

    Every method gets request validation (body and parameters); routes that require a key
    declare the ``Idempotency-Key`` header, so a request without it is refused with a 400
    problem+json at the gateway. Attributes: ``rest_api``, ``access_logs``, ``validator``, ``url``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, authorizer: apigw.IAuthorizer | None = None,
                 iam_authorization: bool = False, cors_origins: Sequence[str] = (),
                 throttling_rate_limit: int = 100, throttling_burst_limit: int = 200, stage_name: str = "prod",
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
                 rest_api: apigw.RestApi | None = None) -> None:
        super().__init__(scope, construct_id)
        if (authorizer is None) == (not iam_authorization):
            raise ValueError(f"{self.node.path}: pass exactly one of authorizer=... (the tenant comes from it) or "
                             "iam_authorization=True; an idempotency key is only safe when scoped to a "
                             "caller the API authenticated.")
        self.authorizer = authorizer
        self.iam_authorization = iam_authorization
        self.access_logs = _access_log_group(self, log_retention)
        cors = apigw.CorsOptions(allow_origins=list(cors_origins), allow_headers=list(ALLOW_HEADERS),
                                 expose_headers=list(EXPOSE_HEADERS), max_age=Duration.hours(1)) if cors_origins else None
        self.rest_api = rest_api or apigw.RestApi(
            self, "Api", default_cors_preflight_options=cors, cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.DESTROY,
            deploy_options=apigw.StageOptions(
                stage_name=stage_name, throttling_rate_limit=throttling_rate_limit,
                throttling_burst_limit=throttling_burst_limit, logging_level=apigw.MethodLoggingLevel.ERROR,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True, http_method=True, ip=True, protocol=True, request_time=True,
                    resource_path=True, response_length=True, status=True, user=True)),
        )
        if rest_api is None:
            acknowledge(self.rest_api, "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                                       "service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
                        "API Gateway's account-level CloudWatch role uses the AWS-managed "
                        "AmazonAPIGatewayPushToCloudWatchLogs policy, as AWS documents for execution logging.")
            acknowledge(self.rest_api, "AwsSolutions-APIG3",
                        "WAF is an account/edge decision; attach a WebACL to the stage where required.")
        self.validator = self.rest_api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True)
        self.rest_api.add_gateway_response(
            "BadRequestParameters", type=apigw.ResponseType.BAD_REQUEST_PARAMETERS, status_code="400",
            response_headers={"Content-Type": "'application/problem+json'"},
            templates={"application/json": _PROBLEM})

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
        params = {f"method.request.header.{KEY_HEADER}": True} if key_required else None
        authorizer = None if public or self.iam_authorization else self.authorizer
        kind = (apigw.AuthorizationType.NONE if public else apigw.AuthorizationType.IAM if self.iam_authorization
                else None)
        added = resource.add_method(http_method, apigw.LambdaIntegration(function.function),
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

    def metric_server_errors(self) -> cloudwatch.Metric:
        """5xx responses (sum per 5 minutes)."""
        return self.rest_api.metric_server_error(statistic="Sum")

    def metric_client_errors(self) -> cloudwatch.Metric:
        """4xx responses, including 409 in-flight and 422 key reuse (sum per 5 minutes)."""
        return self.rest_api.metric_client_error(statistic="Sum")


class IdempotentHttpApi(Construct):
    """An HTTP API (API Gateway v2) routing methods to :class:`IdempotentFunction` s.

    Props: ``authorizer`` (an ``IHttpRouteAuthorizer``: JWT, Lambda or IAM; required, the tenant
    comes from it), ``cors_origins`` (default none; ``Idempotency-Key`` allowed),
    ``throttling_rate_limit`` / ``throttling_burst_limit`` (100 / 200), ``log_retention``.
    HTTP APIs have no request validation: the runtime answers a missing or malformed key with a
    400 problem+json. Attributes: ``http_api``, ``access_logs``, ``url``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, authorizer: apigwv2.IHttpRouteAuthorizer,
                 cors_origins: Sequence[str] = (), throttling_rate_limit: int = 100,
                 throttling_burst_limit: int = 200,
                 log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = _access_log_group(self, log_retention)
        cors = apigwv2.CorsPreflightOptions(
            allow_origins=list(cors_origins), allow_headers=list(ALLOW_HEADERS), expose_headers=list(EXPOSE_HEADERS),
            allow_methods=[apigwv2.CorsHttpMethod.ANY], max_age=Duration.hours(1)) if cors_origins else None
        self.http_api = apigwv2.HttpApi(self, "Api", default_authorizer=authorizer, cors_preflight=cors)
        assert self.http_api.default_stage is not None
        stage = cast(apigwv2.CfnStage, self.http_api.default_stage.node.default_child)
        stage.access_log_settings = apigwv2.CfnStage.AccessLogSettingsProperty(
            destination_arn=self.access_logs.log_group_arn,
            format=json.dumps({"requestId": "$context.requestId", "ip": "$context.identity.sourceIp",
                               "requestTime": "$context.requestTime", "routeKey": "$context.routeKey",
                               "status": "$context.status", "responseLength": "$context.responseLength",
                               "integrationError": "$context.integrationErrorMessage"}))
        stage.default_route_settings = apigwv2.CfnStage.RouteSettingsProperty(
            throttling_rate_limit=throttling_rate_limit, throttling_burst_limit=throttling_burst_limit)

    @property
    def url(self) -> str:
        """The default stage's URL."""
        return self.http_api.url or ""

    def add_route(self, method: str, path: str, function: IdempotentFunction) -> list[apigwv2.HttpRoute]:
        """Route ``method path`` to ``function`` (behind the default authorizer)."""
        integration = integrations.HttpLambdaIntegration(f"{method}{path}".replace("/", "_"), function.function)
        return self.http_api.add_routes(path=path, methods=[apigwv2.HttpMethod(method.upper())],
                                        integration=integration)

    def metric_server_errors(self) -> cloudwatch.Metric:
        """5xx responses (sum per 5 minutes)."""
        return self.http_api.metric_server_error(statistic="Sum")
