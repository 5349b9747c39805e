"""Idempotency keys: parsing, validation, scoping and derived downstream keys.

A key stands for a business intent. It is always scoped by the adapter
(HTTP, SQS, webhook, Step Functions task, any event, plain function, Kinesis, DynamoDB
Streams: :data:`retrysafe.names.ADAPTERS`), tenant and operation, so the same key from two tenants, for two operations, or
reaching two kinds of adapter (an HTTP tenant ``billing`` and an SQS subscriber
``billing``), names independent intents. The DynamoDB partition key is a
hash of the length-prefixed scope, which keeps it short, fixed-size, free of
delimiter-injection collisions and free of raw keys (nothing to leak in logs).
"""

from __future__ import annotations

import base64
import hashlib

from ._value import Value, set_field
from .errors import ConfigurationError, InvalidKeyError
from .names import ADAPTERS, RECORD_PREFIX

MAX_KEY_LENGTH = 255
_ALLOWED = frozenset(chr(c) for c in range(0x21, 0x7F))  # visible ASCII, no spaces or controls


def parse_key(raw: str | None, *, required: bool) -> str | None:
    """Validate an ``Idempotency-Key`` value and return the key.

    Accepts the IETF draft's Structured Field string form (``"abc"``) and the
    bare form (``abc``). Returns ``None`` when the key is absent and not required.
    """
    if raw is None:
        if required:
            raise InvalidKeyError("the Idempotency-Key header is required for this operation", missing=True)
        return None
    value = raw.strip()
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        value = _unquote_sf_string(value[1:-1])
    if not value:
        raise InvalidKeyError("the idempotency key is empty")
    if len(value) > MAX_KEY_LENGTH:
        raise InvalidKeyError(f"the idempotency key is {len(value)} characters long; the limit is {MAX_KEY_LENGTH}")
    if not _ALLOWED.issuperset(value):
        raise InvalidKeyError("the idempotency key may only contain visible ASCII characters (0x21-0x7E)")
    return value


def _unquote_sf_string(inner: str) -> str:
    out: list[str] = []
    escaped = False
    for ch in inner:
        if escaped:
            if ch not in '"\\':
                raise InvalidKeyError("invalid escape in quoted idempotency key")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            raise InvalidKeyError("unescaped quote inside quoted idempotency key")
        else:
            out.append(ch)
    if escaped:
        raise InvalidKeyError("quoted idempotency key ends with a lone backslash")
    return "".join(out)


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(4, "big"))
        h.update(data)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")


class Scope(Value):
    """Through which kind of adapter, which consumer (subscriber), who asked (tenant), for what (operation)
    and which intent (key).

    ``adapter`` is one of :data:`retrysafe.names.ADAPTERS`; each adapter builds its scopes
    in one place with its own, so two adapters sharing a tenant and an operation name never share records.
    ``subscriber`` is the consumer the records belong to (every adapter's ``subscriber=`` option, by
    default the deployed function); ``tenant`` the authenticated caller where there is one (HTTP,
    Step Functions tasks, webhooks), ``""`` for consumers of events, messages and streams.
    """

    __slots__ = ("_record_id", "adapter", "key", "operation", "subscriber", "tenant")

    adapter: str
    key: str
    operation: str
    subscriber: str
    tenant: str
    _record_id: str | None

    def __init__(self, tenant: str, operation: str, key: str, *, adapter: str, subscriber: str = "") -> None:
        if adapter not in ADAPTERS:
            raise ConfigurationError(f"unknown adapter {adapter!r}; one of {', '.join(ADAPTERS)}")
        set_field(self, "adapter", adapter)
        set_field(self, "subscriber", subscriber)
        set_field(self, "tenant", tenant)
        set_field(self, "operation", operation)
        set_field(self, "key", key)
        set_field(self, "_record_id", None)

    @property
    def record_id(self) -> str:
        """The record's partition key: ``idem#`` + a hash of the scope (adapter included) (the raw key never reaches DynamoDB)."""
        record_id = self._record_id
        if record_id is None:
            record_id = RECORD_PREFIX + _digest("scope/v2", self.adapter, self.subscriber, self.tenant, self.operation,
                                                self.key)
            set_field(self, "_record_id", record_id)
        return record_id

    def derive_key(self, purpose: str) -> str:
        """A stable downstream idempotency key for ``purpose`` (e.g. ``"charge"``).

        The same for every retry and every takeover of this intent, different
        for every adapter, subscriber, tenant, operation, key and purpose; 43 URL-safe characters,
        accepted by payment providers' Idempotency-Key headers.
        """
        return _digest("derived/v2", self.adapter, self.subscriber, self.tenant, self.operation, self.key, purpose)
