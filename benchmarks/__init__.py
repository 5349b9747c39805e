"""retrysafe vs Powertools idempotency benchmarks (``make bench``)."""
