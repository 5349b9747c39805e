"""Real-shaped events of the sources ``@idempotent`` serves: AWS's documented examples, read back through
Powertools' event source data classes in the tests."""

from __future__ import annotations

import copy
import json
from typing import Any

#: AWS's example EventBridge event (EventBridge user guide, "Amazon EventBridge events"), with a business detail.
EVENTBRIDGE: dict[str, Any] = {
    "version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": "OrderPlaced",
    "source": "com.example.orders", "account": "111122223333", "time": "2017-12-22T18:43:48Z",
    "region": "us-west-1", "resources": [], "detail": {"order_id": "o-42", "amount": 12.5},
}

#: AWS's example SNS event for Lambda (Lambda developer guide, "Using Lambda with Amazon SNS").
SNS: dict[str, Any] = {"Records": [{
    "EventVersion": "1.0", "EventSource": "aws:sns",
    "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:sns-lambda:21be56ed-a058-49f5-8c98-aedd2564c486",
    "Sns": {
        "SignatureVersion": "1", "Timestamp": "2019-01-02T12:45:07.000Z",
        "Signature": "tcc6faL2yUC6dgZdmrwh1Y4cGa/ebXEkAi6RibDsvpi+tE/1+82j...65r==",
        "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-ac565b8b1a6c5d002d285f9598aa1d9b.pem",
        "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e", "Message": json.dumps({"order_id": "o-42"}),
        "MessageAttributes": {"Test": {"Type": "String", "Value": "TestString"}}, "Type": "Notification",
        "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe&amp;SubscriptionArn=arn:aws:sns:us-east-1:123456789012:test-lambda:21be56ed-a058-49f5-8c98-aedd2564c486",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:sns-lambda", "Subject": "TestInvoke",
    },
}]}

#: AWS's example S3 notification for Lambda (Lambda developer guide, "Using Lambda with Amazon S3").
S3: dict[str, Any] = {"Records": [{
    "eventVersion": "2.0", "eventSource": "aws:s3", "awsRegion": "us-east-1", "eventTime": "1970-01-01T00:00:00.000Z",
    "eventName": "ObjectCreated:Put", "userIdentity": {"principalId": "EXAMPLE"},
    "requestParameters": {"sourceIPAddress": "127.0.0.1"},
    "responseElements": {"x-amz-request-id": "EXAMPLE123456789",
                         "x-amz-id-2": "EXAMPLE123/5678abcdefghijklambdaisawesome/mnopqrstuvwxyzABCDEFGH"},
    "s3": {"s3SchemaVersion": "1.0", "configurationId": "testConfigRule",
           "bucket": {"name": "amzn-s3-demo-bucket", "ownerIdentity": {"principalId": "EXAMPLE"},
                      "arn": "arn:aws:s3:::amzn-s3-demo-bucket"},
           "object": {"key": "test/key", "size": 1024, "eTag": "0123456789abcdef0123456789abcdef",
                      "sequencer": "0A1B2C3D4E5F678901"}},
}]}


def event(template: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of ``template`` with top-level ``changes``."""
    made = copy.deepcopy(template)
    made.update(changes)
    return made
