"""A fake payment provider that behaves like Stripe's idempotent requests, so double charges are visible.

Every request carries an idempotency key. The provider keeps its own ledger, a
DynamoDB table (``provider-ledger``, partition key ``pk`` = the idempotency
key): the first request with a key writes its response with a conditional put;
a repeat gets that stored response back (no second effect), and a repeat with
other parameters is refused. ``calls`` counts the requests received, the ledger
counts the effects.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from typing import Any

LEDGER_ENV = "PROVIDER_LEDGER_TABLE"
#: Authorizations above this amount (in cents) are declined.
DECLINE_ABOVE = 100_000


class ProviderKeyReuseError(Exception):
    """The idempotency key was already used with other parameters (Stripe answers 400)."""


class FakePaymentProvider:
    """Authorize, capture and refund against a ledger of idempotency keys."""

    def __init__(self, table: str | None = None, *, client: Any = None) -> None:
        self.table = table or os.environ.get(LEDGER_ENV, "provider-ledger")
        self._client = client
        self.calls: dict[str, int] = {}

    @property
    def client(self) -> Any:
        """The DynamoDB client (created on first use)."""
        if self._client is None:
            import boto3

            self._client = boto3.client("dynamodb")
        return self._client

    def authorize(self, *, key: str, amount: int, currency: str = "EUR") -> dict[str, Any]:
        """Hold ``amount``; declined above :data:`DECLINE_ABOVE` (a decline is a result, stored too)."""
        status = "declined" if amount > DECLINE_ABOVE else "authorized"
        return self._once("authorize", key, {"amount": amount, "currency": currency},
                          {"authorizationId": f"auth_{uuid.uuid4().hex[:16]}", "status": status, "amount": amount})

    def capture(self, *, key: str, authorization_id: str, amount: int) -> dict[str, Any]:
        """Charge a held authorization."""
        return self._once("capture", key, {"authorizationId": authorization_id, "amount": amount},
                          {"chargeId": f"ch_{uuid.uuid4().hex[:16]}", "amount": amount})

    def refund(self, *, key: str, charge_id: str, amount: int) -> dict[str, Any]:
        """Give a charge back."""
        return self._once("refund", key, {"chargeId": charge_id, "amount": amount},
                          {"refundId": f"re_{uuid.uuid4().hex[:16]}", "chargeId": charge_id, "amount": amount})

    def effects(self, operation: str) -> list[dict[str, Any]]:
        """The ledger's entries for ``operation``: what actually happened, once per key."""
        items = self.client.scan(TableName=self.table, FilterExpression="#op = :op",
                                 ExpressionAttributeNames={"#op": "op"},
                                 ExpressionAttributeValues={":op": {"S": operation}})["Items"]
        return [json.loads(item["response"]["S"]) for item in items]

    def _once(self, operation: str, key: str, request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        digest = hashlib.sha256(json.dumps([operation, request], sort_keys=True).encode()).hexdigest()
        from botocore.exceptions import ClientError

        try:
            self.client.put_item(
                TableName=self.table, ConditionExpression="attribute_not_exists(pk)",
                Item={"pk": {"S": key}, "op": {"S": operation}, "request": {"S": digest},
                      "response": {"S": json.dumps(response)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            stored = error.response["Item"]
            if stored["request"]["S"] != digest:
                raise ProviderKeyReuseError(f"idempotency key reused with other {operation} parameters") from None
            replayed: dict[str, Any] = json.loads(stored["response"]["S"])
            return replayed
        return response
