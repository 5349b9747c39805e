"""A GitHub webhook receiver: signature first, one receipt per delivery, 202 fast."""

# --8<-- [start:handler]
from retrysafe.webhook import GitHub, WebhookReceiver

handler = WebhookReceiver(GitHub())            # API Gateway (REST v1 or HTTP API v2) proxy handler
# --8<-- [end:handler]
