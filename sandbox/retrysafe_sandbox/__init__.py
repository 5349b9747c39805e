"""Run a synthesized CDK app locally: ``python -m retrysafe_sandbox`` (``make demo`` / ``make sandbox``).

Reads the cloud assembly in ``cdk.out`` (never aws_cdk), provisions its tables, queues, buses,
rules, secrets and buckets on an embedded AWS (moto's server on 127.0.0.1), serves its APIs over real
HTTP on 127.0.0.1, and runs its functions from their code assets as Lambda would, fed by
emulated SQS and DynamoDB Streams event source mappings. It knows no app: the scenarios ``demo``
drives are the app's own (:mod:`.scenarios`), named in its ``cdk.json`` (:mod:`.hooks`).

A separate package from ``retrysafe_cdk``, installed with ``pip install 'retrysafe[sandbox]'``
(moto and joserfc): the constructs never need them.
"""

from .ledger import Ledger
from .runner import Options, Sandbox
from .scenarios import Report, Scenario, run_scenarios

__all__ = ["Ledger", "Options", "Report", "Sandbox", "Scenario", "run_scenarios"]
