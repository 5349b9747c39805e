"""One SigV4-signed request to the sandbox's API, twice with one key: ``python request.py URL TENANT SECRET``."""

import json
import sys
import urllib.request

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

url, tenant, secret = sys.argv[1], sys.argv[2], sys.argv[3]
answers = []
for _ in range(2):
    request = AWSRequest(method="POST", url=f"{url.rstrip('/')}/greetings", data=b'{"name": "ada"}',
                         headers={"Content-Type": "application/json", "Idempotency-Key": "greet-ada-1"})
    SigV4Auth(Credentials(tenant, secret), "execute-api", "eu-west-1").add_auth(request)
    with urllib.request.urlopen(urllib.request.Request(url=request.url, data=request.body, method="POST",
                                                       headers=dict(request.headers)), timeout=60) as reply:
        answers.append((reply.status, reply.headers.get("Idempotent-Replayed"), json.loads(reply.read())))
assert answers[0][0] == 201 and answers[1] == (201, "true", answers[0][2]), answers
print(f"sandbox: POST /greetings 201, then replayed: {answers[0][2]}")
