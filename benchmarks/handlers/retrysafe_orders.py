"""The create-order handler under retrysafe, as deployed: the store and its client come from the environment."""

from benchmarks.workload import retrysafe_handler

handler = retrysafe_handler("atomic", None)
