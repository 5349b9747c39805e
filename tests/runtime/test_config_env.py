"""Numbers from the environment: one reader (``env_int``/``env_float``) behind every setting that takes one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from retrysafe import names
from retrysafe._config import Retention, env_float, env_int
from retrysafe._limits import max_message_bytes
from retrysafe.errors import ConfigurationError
from retrysafe.outbox.sweeper import sweep_after_seconds


def test_unset_or_empty_gives_the_default() -> None:
    assert env_int({}, "N", 7) == 7
    assert env_int({"N": ""}, "N", 7) == 7
    assert env_float({"N": ""}, "N", 1.5) == 1.5
    assert env_float({}, "N", None) is None


def test_a_value_is_parsed() -> None:
    assert env_int({"N": "42"}, "N", 7) == 42
    assert env_float({"N": "2.5"}, "N", None) == 2.5


@pytest.mark.parametrize(("read", "message"), [
    (lambda: env_int({"N": "4.5"}, "N", 1), "N='4.5' is not a whole number of seconds"),
    (lambda: env_int({"N": "x"}, "N", 1, unit="bytes"), "N='x' is not a whole number of bytes"),
    (lambda: env_float({"N": "soon"}, "N", None), "N='soon' is not a number of seconds"),
])
def test_a_bad_value_is_a_configuration_error_naming_the_variable(read: Callable[[], Any], message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        read()
    assert str(raised.value) == message


#: Every reader of a numeric setting, with a value that is not a number.
READERS: list[tuple[str, Callable[[Mapping[str, str]], object]]] = [
    (names.HORIZON_ENV, lambda env: Retention.from_env(env)),
    (names.LEASE_ENV, lambda env: Retention.from_env(env)),
    (names.SWEEP_AFTER_ENV, sweep_after_seconds),
    (names.OUTBOX_MAX_MESSAGE_ENV, max_message_bytes),
]


@pytest.mark.parametrize(("name", "read"), READERS)
def test_each_setting_refuses_a_non_number_the_same_way(name: str, read: Callable[[Mapping[str, str]], object]) -> None:
    with pytest.raises(ConfigurationError, match=rf"^{name}='later' is not a (whole )?number of (seconds|bytes)$"):
        read({name: "later"})


def test_range_checks_stay_with_each_setting() -> None:
    with pytest.raises(ConfigurationError, match="must not be negative"):
        sweep_after_seconds({names.SWEEP_AFTER_ENV: "-1"})
    with pytest.raises(ConfigurationError, match="must be 1024"):
        max_message_bytes({names.OUTBOX_MAX_MESSAGE_ENV: "10"})
    assert max_message_bytes({}) == 256 * 1024
    assert sweep_after_seconds({}) == 900
