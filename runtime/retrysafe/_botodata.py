"""The store's own botocore client, created from a copy of botocore's data trimmed to DynamoDB.

Creating a DynamoDB client from a fresh botocore session costs about 73 ms of CPU (awscrt absent, as
in Lambda), most of it botocore's data rather than the client: the session's legacy endpoint resolver
parses ``endpoints.json`` (1.25 MB, every service of every partition: 25-37 ms) and the loader lists
every service directory of its data (``list_available_services``, 11-17 ms, twice: for ``service-2``
and ``endpoint-rule-set-1``). The store needs one service. Its session therefore loads its data
through a botocore :class:`~botocore.loaders.Loader` whose built-in data (``BUILTIN_DATA_PATH``, a
public class attribute) is ``_botocore_data/`` next to this module: every partition's metadata
and DynamoDB's entries of ``endpoints.json``, and botocore's own files (copied byte for byte) for
everything else a DynamoDB client loads. It keeps botocore's search order: the paths of
``AWS_DATA_PATH`` (or ``data_path`` in the config file), then ``~/.aws/models``, then the built-in
data, so a model or ``endpoints.json`` of your own still wins as it would. The copy counts as
built-in data for botocore (``is_builtin_path``), as the data it was copied from does, and that
matters: botocore takes the endpoint of an ``endpoints.json`` that is not built-in as a custom
endpoint URL instead of resolving DynamoDB's endpoint rules (FIPS and dual-stack would then fail).

What is not DynamoDB's stays botocore's: the credential and token providers (an assumed role's STS
client, SSO's) come from a second, stock session, so the clients they create load botocore's full
data. The copy holds every API version folder botocore has for DynamoDB (``api_versions`` may name
one). Clients you pass to the store are never touched.

``python -m retrysafe._botodata`` regenerates the copy from the installed botocore (deterministic;
the test suite fails when the committed copy differs from what the installed botocore gives).
"""

from __future__ import annotations

import os
from typing import Any

#: The trimmed copy of botocore's data the store's session loads.
DATA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_botocore_data")
#: The one service the store's session creates clients for.
SERVICE = "dynamodb"
#: The files of the service's API version directories a client can load: its model, endpoint rules,
#: paginators and waiters (the last two on demand), and any extras botocore merges into them.
#: (``examples-1`` is documentation: no client loads it.)
_CLIENT_FILES = ("service-2", "endpoint-rule-set-1", "paginators-1", "waiters-2")
#: The top-level files a DynamoDB client loads besides ``endpoints.json``: partition metadata and
#: the defaults modes. (``_retry.json`` is only for the legacy retry mode; the store sets standard.)
_TOP_LEVEL_FILES = ("partitions.json", "sdk-default-configuration.json")
#: The session components that may create clients of other services (STS, SSO...): a stock session's.
_BORROWED = ("credential_provider", "token_provider")


def dynamodb_client(region_name: str | None, config: Any) -> Any:
    """A botocore DynamoDB client the same as ``Session().create_client("dynamodb", ...)`` gives,
    created from the trimmed data (see the module's documentation)."""
    import botocore.session

    session = botocore.session.Session()
    session.register_component("data_loader", _loader(session.get_config_variable("data_path")))
    stock = botocore.session.Session()
    for name in _BORROWED:
        session.register_component(name, stock.get_component(name))
    return session.create_client(SERVICE, region_name=region_name, config=config)


def _loader(search_path_string: str | None) -> Any:
    """botocore's ``create_loader(search_path_string)``, with the trimmed copy as the built-in data."""
    from botocore.loaders import Loader

    class TrimmedLoader(Loader):  # type: ignore[misc]  # botocore is untyped
        BUILTIN_DATA_PATH = DATA_PATH

    if search_path_string is None:
        return TrimmedLoader()
    paths = [os.path.expanduser(os.path.expandvars(path)) for path in search_path_string.split(os.pathsep)]
    return TrimmedLoader(extra_search_paths=paths)


def generate(target: str) -> list[str]:
    """Write the trimmed copy of the installed botocore's data into ``target``; the files written
    (relative paths, sorted). The output depends only on botocore's data."""
    import json
    import shutil

    from botocore.loaders import Loader

    source = Loader.BUILTIN_DATA_PATH
    written: list[str] = []
    if os.path.isdir(target):
        shutil.rmtree(target)
    os.makedirs(target)
    with open(os.path.join(source, "endpoints.json"), encoding="utf-8") as raw:
        endpoints = json.load(raw)
    for partition in endpoints["partitions"]:
        partition["services"] = {name: entry for name, entry in partition["services"].items() if name == SERVICE}
    with open(os.path.join(target, "endpoints.json"), "w", encoding="utf-8") as out:
        json.dump(endpoints, out, indent=1, sort_keys=True)
        out.write("\n")
    written.append("endpoints.json")
    for name in _TOP_LEVEL_FILES:
        shutil.copyfile(os.path.join(source, name), os.path.join(target, name))
        written.append(name)
    for version in sorted(os.listdir(os.path.join(source, SERVICE))):  # every API version: api_versions may pick one
        folder = os.path.join(SERVICE, version)
        for name in sorted(os.listdir(os.path.join(source, folder))):
            if name.split(".", 1)[0] in _CLIENT_FILES:
                os.makedirs(os.path.join(target, folder), exist_ok=True)
                shutil.copyfile(os.path.join(source, folder, name), os.path.join(target, folder, name))
                written.append(f"{SERVICE}/{version}/{name}")
    return sorted(written)


if __name__ == "__main__":
    for each in generate(DATA_PATH):
        print(each)
