"""The tenant of IAM-authorized callers tells them apart: Cognito identity pool users share one role ARN."""

from __future__ import annotations

from typing import Any

import pytest
from retrysafe import names
from retrysafe.testing._events import DrillContext, http_event, rest_event

from tests.helpers import problem
from tests.runtime.http.test_http_contract import OrdersApi, build, orders_in

ACCOUNT = "123456789012"
POOL = "eu-west-1:0f6a2c3e-1111-2222-3333-444455556666"
#: What every user of an identity pool signs as: one assumed role, one session name.
POOL_ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/Cognito_ShopAuth_Role/CognitoIdentityCredentials"


def rest_iam(identity: dict[str, Any], body: Any = None) -> dict[str, Any]:
    """A REST API (v1) event authorized by IAM: no authorizer, the caller in ``requestContext.identity``."""
    event = rest_event(body or {"amount": 1}, tenant=None)
    event["requestContext"]["identity"] = {"sourceIp": "203.0.113.9", "cognitoIdentityPoolId": None,
                                           "cognitoIdentityId": None, "cognitoAuthenticationType": None,
                                           "caller": None, "user": None, "userArn": None, "accountId": None,
                                           **identity}
    return event


def http_iam(iam: dict[str, Any], body: Any = None) -> dict[str, Any]:
    """An HTTP API (v2) event authorized by IAM: the caller in ``requestContext.authorizer.iam``."""
    event = http_event(body or {"amount": 1}, tenant=None)
    event["requestContext"]["authorizer"] = {"iam": {"accessKey": "ASIA0000EXAMPLE", "accountId": None,
                                                     "callerId": None, "cognitoIdentity": None,
                                                     "principalOrgId": None, "userArn": None, "userId": None,
                                                     **iam}}
    return event


def rest_pool_user(identity_id: str) -> dict[str, Any]:
    return rest_iam({"cognitoIdentityPoolId": POOL.split(":")[0] + ":pool", "cognitoIdentityId": identity_id,
                     "cognitoAuthenticationType": "authenticated", "accountId": ACCOUNT,
                     "caller": "AROAEXAMPLE:CognitoIdentityCredentials", "userArn": POOL_ROLE,
                     "user": "AROAEXAMPLE:CognitoIdentityCredentials"})


def http_pool_user(identity_id: str) -> dict[str, Any]:
    return http_iam({"accountId": ACCOUNT, "callerId": "AROAEXAMPLE:CognitoIdentityCredentials",
                     "userArn": POOL_ROLE, "userId": "AROAEXAMPLE:CognitoIdentityCredentials",
                     "cognitoIdentity": {"amr": ["authenticated", "cognito-idp.eu-west-1.amazonaws.com/pool"],
                                         "identityId": identity_id, "identityPoolId": POOL}})


@pytest.mark.parametrize("pool_user", [rest_pool_user, http_pool_user])
def test_users_of_one_identity_pool_are_different_tenants(ddb, store, pool_user):
    api = OrdersApi()
    handler = build(store, api)
    alice = handler(pool_user("eu-west-1:aaaaaaaa-0000-0000-0000-000000000001"), DrillContext())
    bob = handler(pool_user("eu-west-1:bbbbbbbb-0000-0000-0000-000000000002"), DrillContext())
    # Same key, same body: Bob's request is his own intent, not a replay of Alice's stored answer.
    assert alice["statusCode"] == bob["statusCode"] == 201 and names.REPLAYED_HEADER not in bob["headers"]
    assert api.runs == 2 and len(orders_in(ddb)) == 2 and alice["body"] != bob["body"]
    again = handler(pool_user("eu-west-1:aaaaaaaa-0000-0000-0000-000000000001"), DrillContext())
    assert again["headers"][names.REPLAYED_HEADER] == "true" and again["body"] == alice["body"]


@pytest.mark.parametrize("event", [
    lambda arn: rest_iam({"userArn": arn, "accountId": ACCOUNT, "caller": "AIDAEXAMPLE"}),
    lambda arn: http_iam({"userArn": arn, "accountId": ACCOUNT, "callerId": "AIDAEXAMPLE"}),
])
def test_other_iam_callers_are_told_apart_by_their_full_arn(ddb, store, event):
    api = OrdersApi()
    handler = build(store, api)
    handler(event(f"arn:aws:iam::{ACCOUNT}:user/alice"), DrillContext())
    handler(event(f"arn:aws:sts::{ACCOUNT}:assumed-role/Deployer/alice"), DrillContext())
    handler(event(f"arn:aws:sts::{ACCOUNT}:assumed-role/Deployer/bob"), DrillContext())
    assert api.runs == 3
    replay = handler(event(f"arn:aws:iam::{ACCOUNT}:user/alice"), DrillContext())
    assert replay["headers"][names.REPLAYED_HEADER] == "true"


def test_a_caller_without_an_arn_is_its_caller_id_in_its_account(ddb, store, calls):
    api = OrdersApi()
    handler = build(store, api)
    handler(rest_iam({"accountId": ACCOUNT, "caller": "AIDAALICE"}), DrillContext())
    handler(rest_iam({"accountId": ACCOUNT, "caller": "AIDABOB"}), DrillContext())
    assert api.runs == 2
    # The account alone would merge every principal of the account into one tenant: refused.
    calls.reset()
    response = handler(rest_iam({"accountId": ACCOUNT}), DrillContext())
    assert response["statusCode"] == 401 and problem(response)["type"].endswith("tenant-required")
    assert api.runs == 2 and calls.total == 0
