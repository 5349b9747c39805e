"""Webhook receipt: signature first, dedupe on what is signed, receipt through the outbox, 202 fast.

``retrysafe.webhook.handler`` is the ready-made Lambda entry point configured
from the environment; build a :class:`WebhookReceiver` for anything else, with one
of the providers (:class:`GitHub`, :class:`Stripe`, :class:`StandardWebhooks`,
:class:`GenericHmac`, or your own :class:`Provider`). The worker that consumes the
receipts is an ``@idempotent_sqs`` consumer; the order-aware writes it usually
needs are :func:`retrysafe.put_if_newer` and :func:`retrysafe.update_if_newer`.
"""

from ._receipt import Receipt
from ._receiver import WebhookReceiver, handler, parse_secrets, secret_from_env
from ._signatures import GenericHmac, GitHub, Provider, StandardWebhooks, Stripe, standard_secret

__all__ = ["GenericHmac", "GitHub", "Provider", "Receipt", "StandardWebhooks", "Stripe", "WebhookReceiver", "handler",
           "parse_secrets", "secret_from_env", "standard_secret"]
