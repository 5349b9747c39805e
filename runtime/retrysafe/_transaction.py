"""The transaction a handler fills: its own DynamoDB writes and its outbox events.

Nothing is sent while the handler runs. When it returns, the engine commits
these actions, the completed record and the events in ONE ``TransactWriteItems``
(the dedup decision is made inside the same transaction as the business
mutation). Values are plain Python (``str``, ``int``, ``float``, ``Decimal``,
``bytes``, ``bool``, ``None``, lists, dicts, sets). The one exception is a
recovery point (:meth:`Transaction.step`, claim-first mode only), which commits
the writes buffered so far together with its checkpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from ._codec import serialize_item
from ._events import OutboxEvent, event_id
from ._keys import Scope
from ._limits import check_fits
from ._tagged import decode_text, encode_text
from .errors import ConfigurationError

#: Saves all checkpoints of a claim (the first argument names the new one) together with the actions
#: buffered since the previous step (one ``TransactWriteItems`` conditioned on the claim's owner token);
#: given by the engine in claim-first mode.
CheckpointWriter = Callable[[str, dict[str, Any], list[dict[str, Any]]], None]


class Transaction:
    """Buffered writes and events of one idempotent execution.

    Handlers receive it as their extra argument. ``table=None`` in any method
    means the idempotency table itself (single-table designs). ``instance`` names
    this instance of the intent in its event ids (the engine gives a new one to
    each atomic attempt and to each new claim, and a claim's own to a takeover of it).
    ``clock`` stamps the events with their commit time (the engine's clock).
    """

    def __init__(self, scope: Scope, table_name: str, expires_at: int, checkpoints: Mapping[str, Any] | None = None,
                 checkpoint_writer: CheckpointWriter | None = None, instance: str = "",
                 clock: Callable[[], float] = time.time):
        self.scope = scope
        self.instance = instance
        self._clock = clock
        self._table = table_name
        self._expires_at = expires_at
        self._actions: list[dict[str, Any]] = []
        self._events: list[OutboxEvent] = []
        self._appended = 0
        self._write_checkpoints = checkpoint_writer
        self.checkpoints: dict[str, Any] = dict(checkpoints or {})

    # -- identity ---------------------------------------------------------
    @property
    def key(self) -> str:
        """The client's idempotency key (do not log it)."""
        return self.scope.key

    @property
    def subscriber(self) -> str:
        """The consumer this intent's record belongs to (the adapter's ``subscriber=``, else the deployed function)."""
        return self.scope.subscriber

    @property
    def tenant(self) -> str:
        """The authenticated caller this intent belongs to (``""`` for consumers of events, messages and streams)."""
        return self.scope.tenant

    @property
    def operation(self) -> str:
        """The operation name."""
        return self.scope.operation

    def derive_key(self, purpose: str) -> str:
        """A downstream idempotency key stable across retries and takeovers (see :meth:`Scope.derive_key`)."""
        return self.scope.derive_key(purpose)

    # -- writes -----------------------------------------------------------
    def put(self, item: Mapping[str, Any], *, table: str | None = None, condition: str | None = None,
            names: Mapping[str, str] | None = None, values: Mapping[str, Any] | None = None) -> None:
        """Put ``item`` (optionally conditioned) when the transaction commits."""
        body: dict[str, Any] = {"TableName": table or self._table, "Item": serialize_item(item)}
        self._add("Put", body, condition, names, values)

    def update(self, key: Mapping[str, Any], update_expression: str, *, table: str | None = None,
               condition: str | None = None, names: Mapping[str, str] | None = None,
               values: Mapping[str, Any] | None = None) -> None:
        """Apply ``update_expression`` to the item at ``key`` when the transaction commits."""
        body: dict[str, Any] = {"TableName": table or self._table, "Key": serialize_item(key), "UpdateExpression": update_expression}
        self._add("Update", body, condition, names, values)

    def delete(self, key: Mapping[str, Any], *, table: str | None = None, condition: str | None = None,
               names: Mapping[str, str] | None = None, values: Mapping[str, Any] | None = None) -> None:
        """Delete the item at ``key`` when the transaction commits."""
        self._add("Delete", {"TableName": table or self._table, "Key": serialize_item(key)}, condition, names, values)

    def condition_check(self, key: Mapping[str, Any], condition: str, *, table: str | None = None,
                        names: Mapping[str, str] | None = None, values: Mapping[str, Any] | None = None) -> None:
        """Require ``condition`` on the item at ``key``; the whole transaction fails otherwise."""
        self._add("ConditionCheck", {"TableName": table or self._table, "Key": serialize_item(key)}, condition, names, values)

    def append_event(self, event_type: str, payload: Any, *, aggregate_type: str, aggregate_id: str,
                     sequence: int | None = None, occurred_at: datetime | None = None,
                     once_per_key: bool = False, claim_check: Mapping[str, Any] | None = None) -> str:
        """Append an outbox event; returns its id.

        Which ids are stable: the committed event's id never changes (consumers
        dedupe on it, and a replay answers with what was committed). In
        claim-first mode a retry or takeover of the same intent runs with the
        claim's instance and gets the same ids again. In atomic mode every
        attempt that runs the handler gets new ids: only the attempt whose
        transaction commits makes its ids real, so never send an id outside
        the transaction before it commits (return it, or append it).

        Pass the aggregate's new version as ``sequence`` so consumers can order
        and guard per aggregate. An event that cannot fit one message of the
        configured target (``RETRYSAFE_OUTBOX_TARGET``; the strictest target
        when unset) raises :class:`~retrysafe.errors.EventTooLargeError` here,
        before anything is committed. A new intent with the same key after the
        record expired gets new ids, so its events are not mistaken for
        duplicates. ``once_per_key=True`` derives the id from the key alone, for
        an event that is itself the effect to have once per key (a webhook
        receipt): a late replay after expiry then fails with
        ``BusinessConditionFailedError`` (409 ``state-conflict``) while the
        earlier event is still in the outbox, and a consumer drops it as a
        duplicate after that. ``occurred_at`` (default: now) is data carried in
        the envelope; the sweeper goes by the moment the event is committed.
        ``claim_check``: the pointer :meth:`retrysafe._claimcheck.ClaimCheck.put` returned for content
        stored in S3 (write it before the transaction commits); ``payload`` must then be an object,
        and ``@idempotent_sqs`` consumers receive the object's bytes as its ``body`` (with
        ``body_encoding``), verified (see :mod:`retrysafe._claimcheck`).
        """
        if claim_check is not None and not isinstance(payload, Mapping):
            raise ConfigurationError("an event with a claim check needs an object payload (its body is added to it)")
        if occurred_at is None:
            occurred_at = datetime.now(UTC)
        eid = event_id(self.scope.record_id, self._appended, "" if once_per_key else self.instance)
        event = OutboxEvent(
            event_id=eid, event_type=event_type, aggregate_type=aggregate_type, aggregate_id=str(aggregate_id),
            payload=payload, occurred_at=occurred_at, sequence=sequence, claim_check=claim_check,
        )
        check_fits(event)
        self._appended += 1
        self._events.append(event)
        return eid

    # -- recovery points ------------------------------------------------------
    def step(self, name: str, call: Callable[[], Any]) -> Any:
        """Run ``call`` (a foreign call) once for this intent, across retries and takeovers.

        On the first run the call's result is saved as checkpoint ``name`` (JSON, or the
        types results may hold: ``Decimal``, ``datetime``, ``set``, ``bytes``...; anything
        else raises :class:`~retrysafe.errors.UnstorableResultError` and parks the claim),
        committed atomically with the writes and events buffered since the previous
        step and conditioned on this invocation's claim (:class:`FencingError` if it
        was taken over). When a retry reaches a step that already completed, the
        stored result is returned without calling, and the writes and events
        buffered since the previous step are dropped: they committed with it. Code
        between steps must therefore be deterministic, and ``call`` should send
        a downstream key from :meth:`derive_key`. Returns the result as it is
        stored and read back (a dataclass comes back as a dict), the same on every run.
        Needs claim-first mode.
        """
        if self._write_checkpoints is None:
            raise ConfigurationError("Transaction.step needs claim-first mode (Mode.CLAIM_FIRST)")
        if name in self.checkpoints:
            self._actions.clear()
            self._events.clear()
            return self.checkpoints[name]
        value = decode_text(encode_text(call()))  # what a retry will read back, also on this run
        self._write_checkpoints(name, {**self.checkpoints, name: value}, self.actions())
        self._actions.clear()
        self._events.clear()
        self.checkpoints[name] = value
        return value

    def _add(self, kind: str, body: dict[str, Any], condition: str | None,
             names: Mapping[str, str] | None, values: Mapping[str, Any] | None) -> None:
        if condition is not None:
            body["ConditionExpression"] = condition
            body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        if names:
            body["ExpressionAttributeNames"] = dict(names)
        if values:
            body["ExpressionAttributeValues"] = serialize_item(values)
        self._actions.append({kind: body})

    # -- what the engine sends ---------------------------------------------
    @property
    def events(self) -> list[OutboxEvent]:
        """Events appended so far, in order."""
        return list(self._events)

    @property
    def business_action_count(self) -> int:
        """Number of the handler's own actions (events excluded)."""
        return len(self._actions)

    def actions(self) -> list[dict[str, Any]]:
        """The handler's actions followed by one ``Put`` per outbox event, in TransactItems form.

        Called by the engine as it commits: the events are stamped with that moment (the clock the
        transaction was given, the engine's), which the outbox sweeper goes by.
        """
        committed_at = self._clock()
        events = [
            {"Put": {"TableName": self._table, "Item": e.to_item(self._expires_at, committed_at=committed_at),
                     "ConditionExpression": "attribute_not_exists(pk)"}}
            for e in self._events
        ]
        return self._actions + events
