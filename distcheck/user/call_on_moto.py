"""The handler called twice on moto with one Idempotency-Key: a first run, then its stored answer replayed."""

import os

import boto3
from moto import mock_aws
from retrysafe.testing import DrillContext, api_event

os.environ.update({"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing",
                   "AWS_SECRET_ACCESS_KEY": "testing", "RETRYSAFE_TABLE": "idempotency"})
with mock_aws():
    for name in ("idempotency", "greetings"):
        boto3.client("dynamodb", region_name="eu-west-1").create_table(
            TableName=name, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    from handlers.greetings import handler

    event = api_event('{"name": "ada"}', headers={"Idempotency-Key": "greet-ada-1"})
    first, again = handler(event, DrillContext()), handler(event, DrillContext())
    assert first["statusCode"] == 201, first
    assert again["body"] == first["body"] and again["headers"]["Idempotent-Replayed"] == "true", again
    assert boto3.client("dynamodb", region_name="eu-west-1").scan(TableName="greetings")["Count"] == 1
    print("handler on moto: 201, then replayed")
