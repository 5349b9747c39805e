"""The create-order handler under retrysafe, as deployed, on the fast transport: the benchmark sets
``RETRYSAFE_TRANSPORT=crt`` in this side's environment (the store and its transport come from the environment)."""

from benchmarks.workload import retrysafe_handler

handler = retrysafe_handler("atomic", None)
