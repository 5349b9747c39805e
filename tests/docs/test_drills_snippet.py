"""The drills snippet of the docs (examples/snippets/drills_suite.py), collected and run as a user's suite."""

from examples.snippets.drills_suite import (  # noqa: F401  (pytest collects what is imported here)
    orders_table,
    test_charge_card_survives_everything,
    test_create_order_survives,
    test_retry_after_a_lost_response,
)
