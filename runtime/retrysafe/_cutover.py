"""Cut-over from Powertools idempotency: answer the retries of requests the old code completed.

During the cut-over window, a first request (no retrysafe record, not in the record cache)
looks up the record Powertools would have written for the same event, in Powertools' table:

- ``COMPLETED`` and not expired: answered from its stored data (the response Powertools would
  replay), and recorded in retrysafe's table so later retries need no second lookup, where the
  adapter would have stored it (HTTP: not a 5xx) and until Powertools' record expires;
- ``INPROGRESS`` (its in-progress expiry not passed): in flight, :class:`RequestInFlightError`;
- expired, absent, or an in-progress record whose invocation timed out: the request runs.

The key is computed by Powertools' own persistence layer (``DynamoDBPersistenceLayer`` after
``configure(IdempotencyConfig(...), function_name)``, then ``get_record``: the jmespath, the
hash, the payload validation), so the two can never disagree. Powertools' idempotency package is
imported on the first lookup only: a function without a cut-over, or past its window, never
pays its import. The lookup is one consistent ``GetItem`` on Powertools' table, through the
store's client.

The window ends by itself at ``until`` (epoch seconds or an aware datetime): set it to the end
of the deploy that switched to retrysafe plus the longest ``expires_after_seconds`` the old code
used. After it no Powertools record can still be live and no lookup is made.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import names
from ._engine import Adopted, Predecessor
from ._value import Value, set_field
from .errors import ConfigurationError, KeyReuseMismatchError, RequestInFlightError

if TYPE_CHECKING:
    from ._engine import Engine
    from ._store import DynamoStore

#: The hash functions Powertools accepts (``IdempotencyConfig(hash_function=...)``, a ``hashlib`` name).
HASH_FUNCTIONS = frozenset({"md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b", "blake2s",
                            "sha3_224", "sha3_256", "sha3_384", "sha3_512"})


#: The answers of a GetItem on Powertools' table that are a deployment error, not a transient one.
_MISCONFIGURED = {"ResourceNotFoundException": "no such table in this account and region",
                  "AccessDeniedException": "the function may not GetItem on it"}


class PowertoolsCutover(Value):
    """The Powertools idempotency configuration the old code used, and the end of the cut-over window.

    ``function_name``: what Powertools keyed on, ``module.qualname`` of the decorated function
    (``"app.lambda_handler"``, ``"app.record_handler"``); Powertools prefixes it with the Lambda's
    ``AWS_LAMBDA_FUNCTION_NAME``. ``lambda_function_name``: that name, the old function's, when the
    new function has another one (default ``RETRYSAFE_POWERTOOLS_LAMBDA_FUNCTION_NAME``, set by the
    constructs' ``CutoverFromPowertools(function=...)``, else this function's own name).
    ``key_prefix``: Powertools' ``key_prefix=`` when the old code passed one (default
    ``RETRYSAFE_POWERTOOLS_KEY_PREFIX`` when the code passes neither it nor ``lambda_function_name``;
    then ``function_name`` and the Lambda's name are not used and may be left out; ``function_name``
    or ``key_prefix`` is required). ``event_key_jmespath``, ``payload_validation_jmespath``,
    ``hash_function``: the old ``IdempotencyConfig``'s (an event in which it finds no key has no
    Powertools record: it runs). The table's attribute names: the old ``DynamoDBPersistenceLayer``'s
    (its defaults here too). ``table_name``, its name or ARN (default ``RETRYSAFE_POWERTOOLS_TABLE``,
    the ARN the constructs' ``powertools_cutover`` sets), and ``until`` (default
    ``RETRYSAFE_POWERTOOLS_UNTIL``, epoch seconds) are required one way or the other.
    """

    __slots__ = ("data_attr", "event_key_jmespath", "expiry_attr", "function_name", "hash_function",
                 "in_progress_expiry_attr", "key_attr", "key_prefix", "lambda_function_name",
                 "payload_validation_jmespath", "sort_key_attr", "static_pk_value", "status_attr", "table_name",
                 "until", "validation_key_attr")

    data_attr: str
    event_key_jmespath: str
    expiry_attr: str
    function_name: str | None
    hash_function: str
    in_progress_expiry_attr: str
    key_attr: str
    key_prefix: str | None
    lambda_function_name: str | None
    payload_validation_jmespath: str
    sort_key_attr: str | None
    static_pk_value: str | None
    status_attr: str
    table_name: str
    until: float
    validation_key_attr: str

    def __init__(self, *, function_name: str | None = None, event_key_jmespath: str = "", payload_validation_jmespath: str = "",
                 hash_function: str = "md5", key_prefix: str | None = None, table_name: str | None = None,
                 until: float | datetime | None = None, key_attr: str = "id", sort_key_attr: str | None = None,
                 static_pk_value: str | None = None, expiry_attr: str = "expiration",
                 in_progress_expiry_attr: str = "in_progress_expiration", status_attr: str = "status",
                 data_attr: str = "data", validation_key_attr: str = "validation",
                 lambda_function_name: str | None = None) -> None:
        if key_prefix is None and lambda_function_name is None:  # the code says nothing of the keys' prefix
            key_prefix = os.environ.get(names.POWERTOOLS_KEY_PREFIX_ENV) or None
        if lambda_function_name is None:
            lambda_function_name = os.environ.get(names.POWERTOOLS_LAMBDA_FUNCTION_NAME_ENV) or None
        if not function_name and not key_prefix:
            raise ConfigurationError("PowertoolsCutover needs function_name= (module.qualname of the function the "
                                     "old @idempotent decorated) or the old key_prefix=")
        if hash_function not in HASH_FUNCTIONS:
            raise ConfigurationError(f"hash_function={hash_function!r} is not a hashlib name Powertools accepts "
                                     f"({', '.join(sorted(HASH_FUNCTIONS))})")
        table = table_name or os.environ.get(names.POWERTOOLS_TABLE_ENV)
        if not table:
            raise ConfigurationError(f"PowertoolsCutover needs the old table: table_name= or "
                                     f"{names.POWERTOOLS_TABLE_ENV} (the constructs' powertools_cutover sets it)")
        set_field(self, "function_name", function_name)
        set_field(self, "event_key_jmespath", event_key_jmespath)
        set_field(self, "payload_validation_jmespath", payload_validation_jmespath)
        set_field(self, "hash_function", hash_function)
        set_field(self, "key_prefix", key_prefix)
        set_field(self, "lambda_function_name", lambda_function_name)
        set_field(self, "table_name", table)
        set_field(self, "until", _until(until))
        set_field(self, "key_attr", key_attr)
        set_field(self, "sort_key_attr", sort_key_attr)
        set_field(self, "static_pk_value", static_pk_value)
        set_field(self, "expiry_attr", expiry_attr)
        set_field(self, "in_progress_expiry_attr", in_progress_expiry_attr)
        set_field(self, "status_attr", status_attr)
        set_field(self, "data_attr", data_attr)
        set_field(self, "validation_key_attr", validation_key_attr)


def _until(until: float | datetime | None) -> float:
    if isinstance(until, datetime):
        if until.tzinfo is None:
            raise ConfigurationError("PowertoolsCutover(until=...) needs an aware datetime (tzinfo=UTC)")
        return until.timestamp()
    if until is not None:
        return float(until)
    raw = os.environ.get(names.POWERTOOLS_UNTIL_ENV)
    if not raw:
        raise ConfigurationError(f"PowertoolsCutover needs the end of the cut-over window: until= or "
                                 f"{names.POWERTOOLS_UNTIL_ENV} (epoch seconds; the constructs set it)")
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"{names.POWERTOOLS_UNTIL_ENV}={raw!r} is not epoch seconds") from None


class Cutover:
    """One adapter's cut-over: Powertools' persistence layer, configured once, on the store's client.

    ``convert`` turns the response Powertools stored (its JSON, decoded as Powertools decodes it)
    into the adapter's stored result: what the adapter's own replay answers with. ``stores``: whether
    the adapter would store that result (HTTP: not a 5xx); ``None``, it would store any.
    """

    def __init__(self, options: PowertoolsCutover, store: DynamoStore, convert: Callable[[Any], Any],
                 clock: Callable[[], float], stores: Callable[[Any], bool] | None = None) -> None:
        self.options = options
        self.store = store
        self.convert = convert
        self.stores = stores
        self.clock = clock
        self._layer: Any = None

    def open(self) -> bool:
        """True while the window is open (a lookup is worth making)."""
        return self.clock() < self.options.until

    def predecessor(self, data: Any) -> Predecessor | None:
        """The engine's lookup for one event's payload ``data`` (what Powertools hashed); ``None`` past the window."""
        if not self.open():
            return None
        return lambda: self.look_up(data)

    def look_up(self, data: Any) -> Adopted | None:
        """Powertools' record for ``data``: :class:`Adopted` (completed), ``None`` (run), or in flight / mismatch."""
        from aws_lambda_powertools.utilities.idempotency.base import _prepare_data
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyItemNotFoundError,
            IdempotencyValidationError,
        )

        layer = self._persistence_layer()
        try:
            with warnings.catch_warnings():  # "No idempotency key value found": nothing to find, it runs
                warnings.simplefilter("ignore", UserWarning)
                record = layer.get_record(data=_prepare_data(data))
        except IdempotencyItemNotFoundError:
            return None
        except IdempotencyValidationError:
            raise KeyReuseMismatchError("this idempotency key was already used with a different request "
                                        "(Powertools' payload validation of the record the old code wrote)") from None
        except Exception as error:
            response = getattr(error, "response", None)
            if response is None and not _is_botocore(error):
                raise
            code = response.get("Error", {}).get("Code", "") if isinstance(response, dict) else ""
            if code in _MISCONFIGURED:
                raise ConfigurationError(
                    f"Powertools' table {self.options.table_name!r}: {_MISCONFIGURED[code]} (table_name= or "
                    f"{names.POWERTOOLS_TABLE_ENV}; IdempotentFunction(powertools_cutover=...) grants GetItem on it)"
                ) from error
            raise self.store._translate(error) from error  # throttling, 5xx: retriable, as the store's own calls
        if record is None:  # no key in the event: Powertools would have run it unprotected
            return None
        status = record.status  # Powertools' own reading: EXPIRED once its expiry has passed
        if status == "COMPLETED":
            result = self.convert(record.response_json_as_dict())
            expiry = record.expiry_timestamp  # a Decimal, as boto3 deserializes numbers
            return Adopted(result, store=self.stores is None or self.stores(result),
                           expires_at=int(expiry) if expiry is not None else None)
        if status == "INPROGRESS":
            now_ms = self.clock() * 1000
            stored = record.in_progress_expiry_timestamp  # a Decimal, as boto3 deserializes numbers
            ends_ms = float(stored) if stored is not None else None
            if ends_ms is not None and ends_ms < now_ms:  # its invocation timed out: Powertools would run again
                return None
            raise RequestInFlightError(max(1, math.ceil((ends_ms - now_ms) / 1000)) if ends_ms is not None else 1)
        return None

    def _persistence_layer(self) -> Any:
        if self._layer is None:
            from aws_lambda_powertools.utilities.idempotency import (
                DynamoDBPersistenceLayer,
                IdempotencyConfig,
            )

            o = self.options
            layer = DynamoDBPersistenceLayer(
                table_name=o.table_name, key_attr=o.key_attr, static_pk_value=o.static_pk_value,
                sort_key_attr=o.sort_key_attr, expiry_attr=o.expiry_attr,
                in_progress_expiry_attr=o.in_progress_expiry_attr, status_attr=o.status_attr,
                data_attr=o.data_attr, validation_key_attr=o.validation_key_attr, boto3_client=self.store.client)
            config = IdempotencyConfig(event_key_jmespath=o.event_key_jmespath,
                                       payload_validation_jmespath=o.payload_validation_jmespath,
                                       hash_function=o.hash_function, use_local_cache=False)
            # Powertools' own prefix is f"{AWS_LAMBDA_FUNCTION_NAME}.{function_name}": the old name in its place
            renamed = f"{o.lambda_function_name}.{o.function_name}" if o.lambda_function_name else None
            layer.configure(config, function_name=o.function_name, key_prefix=o.key_prefix or renamed)
            self._layer = layer
        return self._layer


def _is_botocore(error: Exception) -> bool:
    from botocore.exceptions import BotoCoreError

    return isinstance(error, BotoCoreError)


def cutover(options: PowertoolsCutover | None, engine: Engine, convert: Callable[[Any], Any],
            stores: Callable[[Any], bool] | None = None) -> Cutover | None:
    """An adapter's :class:`Cutover` on its engine's store and clock, or ``None`` when it has none."""
    return Cutover(options, engine.store, convert, engine.clock, stores) if options is not None else None

