"""The create-order handler under retrysafe on the awscrt prototype client (:mod:`benchmarks.crt_client`),
pointed at the socket variant's endpoint (``AWS_ENDPOINT_URL_DYNAMODB``)."""

import os

from retrysafe import DynamoStore, Engine, RecordCache

from benchmarks.crt_client import CrtDynamoClient
from benchmarks.workload import TABLE, retrysafe_handler

_client = CrtDynamoClient(os.environ["AWS_REGION"], os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
handler = retrysafe_handler("atomic", Engine(DynamoStore(TABLE, client=_client, cache=RecordCache())))
