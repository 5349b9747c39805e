"""The handler called twice on moto with one Idempotency-Key: a first run, then its stored answer replayed.

Then the operator's command line, as the ``retrysafe`` console script's entry point, inspects the record
(on the same in-process moto, which a separate process could not reach) without showing the key."""

import contextlib
import importlib.metadata
import io
import os
import sys

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

    # The console script's entry point, loaded as the `retrysafe` script loads it.
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="retrysafe")
    out = io.StringIO()
    sys.stdin = io.StringIO("greet-ada-1\n")
    with contextlib.redirect_stdout(out):
        status = script.load()(["inspect", "--adapter", "http", "--tenant", "tenant-a", "--operation",
                                "CreateGreeting", "--key-stdin"])
    sys.stdin = sys.__stdin__
    assert status == 0 and "status       completed" in out.getvalue() and "greet-ada-1" not in out.getvalue(), out
    print("retrysafe inspect on moto: completed, by its hash")
