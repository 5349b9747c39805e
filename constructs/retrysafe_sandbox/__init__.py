"""Run a synthesized retrysafe app locally: ``python -m retrysafe_sandbox`` (``make demo`` / ``make sandbox``).

Reads the cloud assembly in ``cdk.out`` (never aws_cdk), provisions its tables, queues, buses,
rules and secrets on an embedded AWS (moto's server on 127.0.0.1), serves its APIs over real
HTTP on 127.0.0.1, and runs its functions from their code assets as Lambda would, fed by
emulated SQS and DynamoDB Streams event source mappings.
"""

from .ledger import Ledger
from .runner import Options, Sandbox

__all__ = ["Ledger", "Options", "Sandbox"]
