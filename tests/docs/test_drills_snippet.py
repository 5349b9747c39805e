"""The drills snippet of the docs (examples/snippets/drills_suite.py), collected and run as a user's suite."""

import pytest

from examples.snippets import drills_suite
from examples.snippets.drills_suite import (  # noqa: F401  (pytest collects what is imported here)
    orders_table,
    test_create_order_survives,
    test_retry_after_a_lost_response,
)

# all() includes the lost-response drill, which a claim-first handler fails on this main: its retried
# claim meets its own claim (issue 11, fixed by the engine work). Not strict, so the fix turns it green.
test_charge_card_survives_everything = pytest.mark.xfail(
    reason="issue 11: a retried claim meets its own claim", strict=False,
)(drills_suite.test_charge_card_survives_everything)
