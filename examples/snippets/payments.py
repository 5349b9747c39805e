"""A stand-in for a payment provider's client, as the snippets use it: like Stripe, it dedupes
charges on the caller's idempotency key, and it counts the charges it really made."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Charge:
    """A charge at the provider."""

    id: str
    amount: int


class Provider:
    """One charge per idempotency key; the same key answers with the first charge."""

    def __init__(self) -> None:
        self.charges: dict[str, Charge] = {}

    def charge(self, *, amount: int, idempotency_key: str) -> Charge:
        """Charge ``amount`` once per ``idempotency_key``."""
        if idempotency_key not in self.charges:
            charge_id = "ch_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:16]
            self.charges[idempotency_key] = Charge(charge_id, amount)
        return self.charges[idempotency_key]

    def charge_count(self) -> int:
        """How many distinct charges were made (the effect the drills count)."""
        return len(self.charges)


payments = Provider()


class CardProvider:
    """Two-step card payments (authorize, then capture), each deduplicated on the caller's key."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self.calls: dict[str, dict[str, Any]] = {}

    def authorize(self, *, key: str, amount: int) -> dict[str, Any]:
        """Authorize ``amount`` once per ``key``; amounts above the limit are declined."""
        status = "authorized" if amount <= self.limit else "declined"
        return self.calls.setdefault(key, {"authorizationId": "au_" + _digest(key), "status": status})

    def capture(self, *, key: str, authorization_id: str) -> dict[str, Any]:
        """Capture an authorization once per ``key``."""
        return self.calls.setdefault(key, {"chargeId": "ch_" + _digest(key), "authorization": authorization_id})

    def call_count(self) -> int:
        """How many distinct provider calls were made."""
        return len(self.calls)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


provider = CardProvider()
