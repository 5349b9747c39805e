"""An order saga on Step Functions whose every task is idempotent (see ``handlers.tasks``)."""
