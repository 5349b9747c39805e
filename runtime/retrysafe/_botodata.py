"""The store's own botocore client, created without parsing botocore's data for every other service.

Creating a DynamoDB client from a fresh botocore session costs about 73 ms of CPU (awscrt absent, as
in Lambda), most of it botocore's data rather than the client: the session's legacy endpoint resolver
parses ``endpoints.json`` (1.25 MB, every service of every partition: 25-37 ms) and the loader lists
every service directory of its data (``list_available_services``, 11-17 ms, twice: for ``service-2``
and ``endpoint-rule-set-1``) only to check that the name it is given exists. The store needs one
service. Its session therefore loads its data through a botocore :class:`~botocore.loaders.Loader`
(a subclass, registered as the session's ``data_loader`` component) that differs in two things:

- ``endpoints.json`` comes from ``_botocore_data/`` next to this module: botocore's file with every
  partition's metadata and only DynamoDB's entries (14 KB). That copy counts as built-in data
  (``is_builtin_path``), as the file it was cut from does, and that matters: botocore takes the
  endpoint of an ``endpoints.json`` that is not built-in as a custom endpoint URL instead of resolving
  DynamoDB's endpoint rules (FIPS and dual-stack would then fail). Its format has not changed since
  botocore 1.23, and with endpoint rules it only names regions and signing scopes.
- ``list_available_services`` answers DynamoDB alone, without the scan: the session creates no
  client of another service.

Everything else is the installed botocore's own data, so the model, the endpoint rules and the
partitions always match the botocore that reads them. The search order stays botocore's: the paths
of ``AWS_DATA_PATH`` (or ``data_path`` in the config file), then ``~/.aws/models``, then the copy,
then botocore's data, so a model or ``endpoints.json`` of your own still wins as it would. The
credential and token providers (an assumed role's STS client, SSO's) come from a second, stock
session, so the clients they create load botocore's full data. Clients you pass to the store are
never touched.

``python -m retrysafe._botodata`` regenerates the copy from the installed botocore (deterministic;
the test suite fails when the committed copy differs from what the installed botocore gives).
"""

from __future__ import annotations

import os
from typing import Any

#: The folder of the trimmed ``endpoints.json`` the store's session loads.
DATA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_botocore_data")
#: The one service the store's session creates clients for.
SERVICE = "dynamodb"
#: The session components that may create clients of other services (STS, SSO...): a stock session's.
_BORROWED = ("credential_provider", "token_provider")


def dynamodb_client(region_name: str | None, config: Any) -> Any:
    """A botocore DynamoDB client the same as ``Session().create_client("dynamodb", ...)`` gives,
    created without botocore's data for other services (see the module's documentation)."""
    import botocore.session

    session = botocore.session.Session()
    session.register_component("data_loader", _loader(session.get_config_variable("data_path")))
    stock = botocore.session.Session()
    for name in _BORROWED:
        session.register_component(name, stock.get_component(name))
    return session.create_client(SERVICE, region_name=region_name, config=config)


def _loader(search_path_string: str | None) -> Any:
    """botocore's ``create_loader(search_path_string)``, with the trimmed ``endpoints.json`` before
    botocore's data and no scan of every service directory."""
    from botocore.loaders import Loader

    class DynamoLoader(Loader):  # type: ignore[misc]  # botocore is untyped
        def list_available_services(self, type_name: str) -> list[str]:
            # botocore lists every service directory of every search path (11-17 ms per type name) to
            # check a name; this loader's session asks for DynamoDB only.
            return [SERVICE]

        def is_builtin_path(self, path: str) -> bool:
            # The copy is botocore's file, cut: built-in, so DynamoDB's endpoint rules stay in charge.
            return bool(super().is_builtin_path(path)) or os.path.expanduser(path).startswith(DATA_PATH)

    paths = [os.path.expanduser(os.path.expandvars(path))
             for path in (search_path_string.split(os.pathsep) if search_path_string else [])]
    return DynamoLoader(extra_search_paths=[*paths, Loader.CUSTOMER_DATA_PATH, DATA_PATH, Loader.BUILTIN_DATA_PATH],
                        include_default_search_paths=False)


def generate(target: str) -> list[str]:
    """Write the trimmed ``endpoints.json`` of the installed botocore into ``target`` (emptied first);
    the files written (relative paths). The output depends only on botocore's data."""
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
    return written


if __name__ == "__main__":
    for each in generate(DATA_PATH):
        print(each)
