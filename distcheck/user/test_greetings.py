"""A user's test suite: the retrysafe pytest plugin's failure drills against the user's handler."""

from collections.abc import Callable
from typing import Any

import pytest
from handlers.greetings import handler
from retrysafe.testing import Drills


def greeting(variant: int) -> dict[str, Any]:
    return {"name": f"ada-{variant}"}


@pytest.mark.usefixtures("retrysafe_table")      # the plugin's moto table; RETRYSAFE_TABLE names it
@pytest.mark.parametrize("drill", ["response_lost", "race", "key_reuse", "redelivery", "late_replay"])
def test_create_greeting_survives(drill: str, retrysafe_drills: Callable[..., Drills]) -> None:
    getattr(retrysafe_drills(handler, greeting), drill)()
