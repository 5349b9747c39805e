"""The retrysafe pytest plugin (entry point ``pytest11``: ``retrysafe = "retrysafe.testing._plugin"``).

Fixtures:

``retrysafe_table``
    moto (in-process ``mock_aws``) with the idempotency table as the constructs
    deploy it (``pk``, TTL ``exp``, GSI ``outbox-unpublished``, stream);
    ``RETRYSAFE_TABLE`` points at it. Yields the :class:`~retrysafe.DynamoStore`,
    whose client has DynamoDB's semantics (:class:`~retrysafe.testing.DynamoSemantics`
    on ``retrysafe_clock``: atomic calls, transactions, ``ClientRequestToken``).
``retrysafe_clock``
    a controllable :class:`~retrysafe.testing.Clock` the drills give the engine.
``retrysafe_drills``
    ``retrysafe_drills(handler, payload, effects=None)`` -> :class:`~retrysafe.testing.Drills`
    for an ``@idempotent_http``, ``@idempotent_sqs`` or ``@idempotent_task``
    handler or a ``WebhookReceiver``; ``payload(variant)`` builds the request
    content of an intent (variant 0) or of a different request (variant 1).

And one that every test uses without asking (``autouse``): a Lambda context a test registers
(:func:`~retrysafe.register_lambda_context`, or a handler under test that does) is forgotten
when the test ends, so it never sizes the claims of the next test.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .. import names
from .._invocation import Invocation
from .._store import DynamoStore
from ._adapters import EventAdapter, FunctionAdapter, HttpAdapter, SqsAdapter, TaskAdapter, WebhookAdapter
from ._drills import Adapter, Clock, Drills
from ._dynamodb_semantics import DynamoSemantics

DEFAULT_TABLE = "idempotency"


def create_table(client: Any, name: str) -> None:
    """Create the idempotency table layout the retrysafe constructs deploy."""
    client.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": names.PARTITION_KEY, "AttributeType": "S"},
                              {"AttributeName": names.UNPUBLISHED_ATTRIBUTE, "AttributeType": "S"},
                              {"AttributeName": names.COMMITTED_AT_ATTRIBUTE, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": names.PARTITION_KEY, "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[{"IndexName": names.OUTBOX_INDEX,
                                 "KeySchema": [{"AttributeName": names.UNPUBLISHED_ATTRIBUTE, "KeyType": "HASH"},
                                               {"AttributeName": names.COMMITTED_AT_ATTRIBUTE, "KeyType": "RANGE"}],
                                 "Projection": {"ProjectionType": "ALL"}}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    client.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": names.TTL_ATTRIBUTE})


def adapter_for(handler: Any, payload: Callable[[int], Any], **options: Any) -> Adapter:
    """The drill adapter matching a decorated handler."""
    from .._generic import EventIdempotency, FunctionIdempotency

    idempotency = getattr(handler, "idempotency", None)
    if isinstance(idempotency, EventIdempotency):
        return EventAdapter(handler, payload, **options)
    if isinstance(idempotency, FunctionIdempotency):
        return FunctionAdapter(handler, payload, **options)
    if idempotency is not None:
        return HttpAdapter(handler, payload, **options)
    if hasattr(handler, "consumer"):
        return SqsAdapter(handler, payload)
    if hasattr(handler, "task"):
        return TaskAdapter(handler, payload, **options)
    if hasattr(handler, "provider") and hasattr(handler, "engine"):
        return WebhookAdapter(handler, payload, **options)
    raise TypeError(f"{handler!r} is not a retrysafe handler (idempotent, idempotent_function, idempotent_http, "
                    "idempotent_sqs, idempotent_task or WebhookReceiver)")


@pytest.fixture
def retrysafe_table(monkeypatch: pytest.MonkeyPatch, retrysafe_clock: Clock) -> Iterator[DynamoStore]:
    """In-process moto with the idempotency table; ``RETRYSAFE_TABLE`` names it; DynamoDB's semantics on its client.

    The store is the one the adapters take from the environment. In Lambda's execution environment it
    has a record cache, emptied here (the store outlives a test, the table does not); elsewhere it has
    none (:meth:`~retrysafe.DynamoStore.from_env`).
    """
    import boto3
    from moto import mock_aws

    name = os.environ.get(names.TABLE_ENV) or DEFAULT_TABLE
    monkeypatch.setenv(names.TABLE_ENV, name)
    for variable, value in (("AWS_DEFAULT_REGION", "eu-west-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                            ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(variable, os.environ.get(variable) or value)
    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client, name)
        store = DynamoStore.from_env()
        if store.cache is not None:  # the container's store outlives a test: its table starts empty
            store.cache.clear()
        semantics = DynamoSemantics(retrysafe_clock).install(store.client)
        try:
            yield store
        finally:
            semantics.uninstall(store.client)
            if store.cache is not None:
                store.cache.clear()


@pytest.fixture(autouse=True)
def _retrysafe_invocation() -> Iterator[None]:
    """Each test starts with no registered Lambda context, and its registration ends with it."""
    with Invocation(None):
        yield


@pytest.fixture
def retrysafe_clock() -> Clock:
    """A controllable clock starting now."""
    return Clock(time.time())


@pytest.fixture
def retrysafe_drills(retrysafe_clock: Clock) -> Iterator[Callable[..., Drills]]:
    """Factory: ``retrysafe_drills(handler, payload, effects=None, **adapter_options)``."""
    made: list[Drills] = []

    def make(handler: Any, payload: Callable[[int], Any], *, effects: Callable[[], int] | None = None,
             **options: Any) -> Drills:
        drills = Drills(adapter_for(handler, payload, **options), retrysafe_clock, effects=effects)
        made.append(drills)
        return drills

    yield make
    for drills in made:
        drills.close()
