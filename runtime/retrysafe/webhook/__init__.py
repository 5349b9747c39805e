"""Webhook receipt: signature first, dedupe per source and hook, receipt through the outbox, 202 fast.

``retrysafe.webhook.handler`` is the ready-made Lambda entry point configured
from the environment; build a :class:`WebhookReceiver` for anything else.
"""

from .ordering import put_if_newer, update_if_newer
from .receiver import Receipt, WebhookReceiver, handler, parse_secrets, secret_from_env
from .signatures import GenericHmac, GitHub, Provider, SignatureError, Stripe

__all__ = ["GenericHmac", "GitHub", "Provider", "Receipt", "SignatureError", "Stripe", "WebhookReceiver",
           "handler", "parse_secrets", "put_if_newer", "secret_from_env", "update_if_newer"]
