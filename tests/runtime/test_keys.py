"""retrysafe._keys: the Idempotency-Key header's forms, the scope's record id and derived downstream keys.

The record id and the derived keys are pinned: records in deployed tables and keys already sent to
payment providers are found again only if neither ever changes.
"""

from __future__ import annotations

import re

import pytest
from retrysafe import names
from retrysafe._keys import MAX_KEY_LENGTH, Scope, parse_key
from retrysafe.errors import InvalidKeyError

URL_SAFE_43 = re.compile(r"^[A-Za-z0-9_-]{43}$")


@pytest.mark.parametrize(("raw", "key"), [
    ("order-1", "order-1"),
    ("  order-1 ", "order-1"),                      # surrounding whitespace is not part of the key
    ('"order-1"', "order-1"),                       # the Structured Field string form
    ('"a\\"b\\\\c"', 'a"b\\c'),                     # its escapes
    ("x" * MAX_KEY_LENGTH, "x" * MAX_KEY_LENGTH),
    ("!~", "!~"),                                   # the ends of visible ASCII
])
def test_accepted_keys(raw: str, key: str) -> None:
    assert parse_key(raw, required=True) == key


@pytest.mark.parametrize("raw", [
    "", "   ", '""', "x" * (MAX_KEY_LENGTH + 1), "with space", "caf\u00e9", "tab\there", "nul\x00",
    '"bad\\escape"', '"un"escaped"', '"lone\\"',
])
def test_refused_keys(raw: str) -> None:
    with pytest.raises(InvalidKeyError) as refused:
        parse_key(raw, required=True)
    assert not refused.value.missing


def test_a_missing_key_is_refused_only_where_required() -> None:
    assert parse_key(None, required=False) is None
    with pytest.raises(InvalidKeyError) as refused:
        parse_key(None, required=True)
    assert refused.value.missing


def test_the_record_id_is_pinned_and_hides_the_key() -> None:
    scope = Scope("tenant-a", "CreateOrder", "order-1", adapter=names.HTTP_ADAPTER, subscriber="orders-api")
    assert scope.record_id == "idem#Cvi0MkVu-HCqzB66Af_bYn3l-Jd39_cyM91Q1Y3FHg0"
    assert "order-1" not in scope.record_id and URL_SAFE_43.match(scope.record_id.removeprefix(names.RECORD_PREFIX))


def test_every_part_of_the_scope_counts_and_parts_cannot_pose_as_each_other() -> None:
    http = names.HTTP_ADAPTER
    ids = {Scope(*parts, adapter=adapter).record_id for adapter, *parts in [
        (http, "t", "op", "k"), (http, "t2", "op", "k"), (http, "t", "op2", "k"), (http, "t", "op", "k2"),
        (http, "ab", "c", "k"), (http, "a", "bc", "k"),          # length-prefixed: no delimiter to shift
        (http, "t", "opk", ""), (http, "t", "op", "k\x00"),
        *((adapter, "t", "op", "k") for adapter in names.ADAPTERS if adapter != http),
    ]}
    ids |= {Scope(tenant, "op", "k", adapter=http, subscriber=subscriber).record_id
            for subscriber, tenant in [("s", "t"), ("s2", "t"), ("st", ""), ("", "st")]}
    assert len(ids) == 8 + len(names.ADAPTERS) - 1 + 4
    assert Scope("t", "op", "k", adapter=http).record_id == Scope("t", "op", "k", adapter=http).record_id


def test_a_scope_names_a_known_adapter() -> None:
    from retrysafe.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="unknown adapter"):
        Scope("t", "op", "k", adapter="https")


def test_derived_keys_are_pinned_per_purpose_and_accepted_by_providers() -> None:
    http = names.HTTP_ADAPTER
    scope = Scope("tenant-a", "CreateOrder", "order-1", adapter=http, subscriber="orders-api")
    assert scope.derive_key("charge") == "vnducrl_OrfzYukxbslnV6JHXUtd5J5CARNpmCeIh4k"
    derived = {scope.derive_key(p) for p in ("charge", "refund", "email")}
    derived |= {Scope("tenant-b", "CreateOrder", "order-1", adapter=http).derive_key("charge"),
                Scope("tenant-a", "CreateOrder", "order-2", adapter=http).derive_key("charge"),
                Scope("tenant-a", "CreateOrder", "order-1", adapter=names.SQS_ADAPTER).derive_key("charge"),
                Scope("tenant-a", "CreateOrder", "order-1", adapter=http, subscriber="other").derive_key("charge")}
    assert len(derived) == 7 and all(URL_SAFE_43.match(k) for k in derived)
    assert scope.derive_key("charge") != scope.record_id.removeprefix(names.RECORD_PREFIX)
