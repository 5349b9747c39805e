"""Webhook receipt: signature first, dedupe on what is signed, receipt through the outbox, 202 fast.

``retrysafe.webhook.handler`` is the ready-made Lambda entry point configured
from the environment; build a :class:`WebhookReceiver` for anything else. The
order-aware writes a webhook worker usually needs (:func:`put_if_newer`,
:func:`update_if_newer`) live in :mod:`retrysafe._ordering` and are re-exported here.
"""

from ..errors import PayloadTooLargeError, SignatureError
from .._ordering import put_if_newer, update_if_newer
from ._receipt import Receipt
from ._receiver import WebhookReceiver, handler, parse_secrets, secret_from_env
from ._signatures import GenericHmac, GitHub, Provider, StandardWebhooks, Stripe, standard_secret

__all__ = ["GenericHmac", "GitHub", "PayloadTooLargeError", "Provider", "Receipt", "SignatureError",
           "StandardWebhooks", "Stripe", "WebhookReceiver", "handler", "parse_secrets", "put_if_newer",
           "secret_from_env", "standard_secret", "update_if_newer"]
