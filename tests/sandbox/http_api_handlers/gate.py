"""A Lambda REQUEST authorizer (HTTP API, simple responses) for the sandbox test: ``X-Api-Key: ok-<tenant>``."""

from __future__ import annotations

from typing import Any


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Authorize keys starting with ``ok-``; the rest of the key is the tenant."""
    [key] = event["identitySource"]
    return {"isAuthorized": key.startswith("ok-"), "context": {"tenantId": key[3:], "route": event["routeArn"]}}
