"""What a DynamoDB client sends, region by region: the store's client against a stock botocore client.

Shared by ``tests/runtime/test_botodata.py`` (the installed botocore) and ``make botocore-oldest``
(``python -m tests.runtime.endpoints``, in a virtualenv with the oldest botocore the runtime allows).
There the trimmed ``endpoints.json`` shipped in the package (cut from the newest botocore the release was
tested with) meets an older botocore's model and endpoint rules: every request must still go to the
same URL with the same signing scope as a stock client's, or fail with the same error. Only the legacy
``client.meta.endpoint_url`` may show the newer file's hostname (reported, not a failure: requests go
where the endpoint rules send them).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import botocore
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError
from botocore.loaders import Loader

BOTOCORE_DATA = Path(Loader.BUILTIN_DATA_PATH)
VARIANTS = {
    "plain": {},
    "fips": {"use_fips_endpoint": True},
    "dualstack": {"use_dualstack_endpoint": True},
    "fips+dualstack": {"use_fips_endpoint": True, "use_dualstack_endpoint": True},
}
#: What the client resolved when created, as opposed to what its requests carry.
RESOLVED = ("endpoint_url", "region", "partition")


class _Sent(Exception):
    """Raised by a ``before-send`` hook: the request was signed and is not sent."""

    def __init__(self, request: Any) -> None:
        super().__init__("not sent")
        self.request = request


def regions() -> Iterator[tuple[str, str]]:
    """(partition, region) for every region the installed botocore's partitions, endpoints and DynamoDB's
    entries name."""
    partitions = json.loads((BOTOCORE_DATA / "partitions.json").read_text())["partitions"]
    endpoints = {p["partition"]: p for p in json.loads((BOTOCORE_DATA / "endpoints.json").read_text())["partitions"]}
    for partition in partitions:
        legacy = endpoints.get(partition["id"], {})
        names = set(partition["regions"]) | set(legacy.get("regions", {}))
        names |= set(legacy.get("services", {}).get("dynamodb", {}).get("endpoints", {}))
        for name in sorted(names):
            yield partition["id"], name


def outcome(create: Callable[[], Any]) -> dict[str, Any]:
    """What a client resolved and what it would send for one ``GetItem`` and one ``TransactWriteItems``
    (URL, host, credential scope), or the error it raised."""
    def capture(request: Any, **_: Any) -> None:
        raise _Sent(request)

    try:
        client = create()
    except BotoCoreError as error:  # a configuration botocore refuses: the same refusal
        return {"error": (type(error).__name__, str(error))}
    client.meta.events.register("before-send.dynamodb", capture)
    seen: dict[str, Any] = {"endpoint_url": client.meta.endpoint_url, "region": client.meta.region_name,
                            "partition": client.meta.partition}
    calls = {"get": partial(client.get_item, TableName="t", Key={"pk": {"S": "k"}}),
             "transact": partial(client.transact_write_items,
                                 TransactItems=[{"Put": {"TableName": "t", "Item": {"pk": {"S": "k"}}}}])}
    for name, call in calls.items():
        try:
            call()
        except _Sent as sent:
            authorization = sent.request.headers["Authorization"].decode()
            scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/")
            seen[name] = (sent.request.url, sent.request.headers.get("host"), (scope[2], scope[3], scope[4]))
        except BotoCoreError as error:  # an endpoint botocore refuses: the same refusal
            seen[name] = ("error", type(error).__name__, str(error))
    return seen


def compare(config: Any) -> tuple[int, list[Any], list[Any]]:
    """Every region and variant: (cases, request differences, resolved-only differences) between the
    store's client (:func:`retrysafe._botodata.dynamodb_client`) and a stock one, both with ``config``
    merged with the variant."""
    from retrysafe._botodata import dynamodb_client

    stock_session = botocore.session.Session()
    cases, requests, resolved = 0, [], []
    for variant, settings in VARIANTS.items():
        merged = config.merge(Config(**settings))
        for partition, region in regions():
            stock = outcome(partial(stock_session.create_client, "dynamodb", region_name=region, config=merged))
            ours = outcome(partial(dynamodb_client, region, merged))
            cases += 1
            if {k: v for k, v in ours.items() if k not in RESOLVED} != \
                    {k: v for k, v in stock.items() if k not in RESOLVED}:
                requests.append((partition, region, variant, ours, stock))
            elif ours != stock:
                resolved.append((partition, region, variant, {k: (ours.get(k), stock.get(k)) for k in RESOLVED}))
    return cases, requests, resolved


def main() -> int:
    """``python -m tests.runtime.endpoints``: compare with the installed botocore; 1 on a request difference."""
    for name in list(os.environ):
        if name.startswith(("AWS_ENDPOINT_URL", "AWS_USE_", "AWS_DATA_PATH", "AWS_PROFILE")):
            del os.environ[name]
    os.environ.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="secret",
                      AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    from retrysafe._store import client_config

    cases, requests, resolved = compare(client_config())
    for row in requests:
        print("request differs:", *row)
    for row in resolved:
        print("client.meta differs (requests identical):", *row)
    print(f"botocore {botocore.__version__}: {cases} region and endpoint variants, {len(requests)} whose requests "
          f"differ from a stock client's, {len(resolved)} whose client.meta alone differs")
    return 1 if requests or cases < 100 else 0


if __name__ == "__main__":
    sys.exit(main())
