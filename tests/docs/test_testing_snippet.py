"""The testing recipes of the docs (examples/snippets/testing_recipes.py), collected and run as a user's suite."""

from examples.snippets.testing_recipes import (  # noqa: F401  (pytest collects what is imported here)
    dynamodb,
    test_a_redelivery_replays,
    test_handler_logic_without_idempotency,
    test_on_a_table_of_the_tests_own,
)
