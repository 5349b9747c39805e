"""The create-order handler under Powertools, as deployed: one module-level client, shared with the persistence layer."""

from benchmarks.workload import powertools_handler, user_client

handler = powertools_handler(user_client())
