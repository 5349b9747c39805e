"""The store's botocore client from botocore's data with ``endpoints.json`` trimmed to DynamoDB (retrysafe._botodata).

The trimmed file is what the installed botocore gives, byte for byte (a botocore upgrade that changes it fails
here: run ``python -m retrysafe._botodata``). The client it makes is a stock client's: for every region
of every partition botocore knows, plain, FIPS, dual-stack, both, and with an endpoint URL, the same
endpoint, region, partition and signed request (URL, host, credential scope), or the same error.
Everything else keeps botocore's full data: a user's ``AWS_DATA_PATH`` still wins, an assumed role's
STS client is a stock session's, a configured DynamoDB API version is picked as botocore picks it.
"""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.loaders import Loader
from moto import mock_aws
from retrysafe import _botodata as botodata
from retrysafe._store import DynamoStore, client_config

from tests.runtime.endpoints import BOTOCORE_DATA, VARIANTS, outcome, regions


def _files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file()}


REGIONS = list(regions())


def _stock(region: str, config: Any = None, session: Any = None) -> dict[str, Any]:
    """A stock botocore client's outcome (the store's config unless ``config``)."""
    return outcome(partial((session or botocore.session.Session()).create_client, "dynamodb", region_name=region,
                            config=config or client_config()))


def _store(region: str) -> dict[str, Any]:
    """The store's own client's outcome."""
    return outcome(lambda: DynamoStore("t", region_name=region).client)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Static credentials, no profile, no configured endpoint or data path: botocore's defaults."""
    for name in list(os.environ):
        if name.startswith(("AWS_ENDPOINT_URL", "AWS_USE_", "AWS_DATA_PATH", "AWS_PROFILE", "AWS_CONFIG_FILE",
                            "AWS_SHARED_CREDENTIALS_FILE")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    return monkeypatch


def test_the_committed_copy_is_what_the_installed_botocore_gives(tmp_path: Path) -> None:
    written = botodata.generate(str(tmp_path / "data"))
    assert written == sorted(_files(tmp_path / "data"))
    assert _files(Path(botodata.DATA_PATH)) == _files(tmp_path / "data"), \
        "botocore's data changed: run `python -m retrysafe._botodata` and commit runtime/retrysafe/_botocore_data"


def test_the_copy_keeps_every_partition_and_only_dynamodb() -> None:
    stock = json.loads((BOTOCORE_DATA / "endpoints.json").read_text())
    trimmed = json.loads((Path(botodata.DATA_PATH) / "endpoints.json").read_text())
    assert {k: v for k, v in trimmed.items() if k != "partitions"} == \
        {k: v for k, v in stock.items() if k != "partitions"}
    assert [p["partition"] for p in trimmed["partitions"]] == [p["partition"] for p in stock["partitions"]]
    for ours, theirs in zip(trimmed["partitions"], stock["partitions"], strict=True):
        assert {k: v for k, v in ours.items() if k != "services"} == {k: v for k, v in theirs.items() if k != "services"}
        assert ours["services"] == {name: entry for name, entry in theirs["services"].items() if name == "dynamodb"}
    # Nothing else: the model, endpoint rules and partitions are the installed botocore's own.
    assert list(_files(Path(botodata.DATA_PATH))) == ["endpoints.json"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_region_resolves_and_signs_as_a_stock_client(aws_env: pytest.MonkeyPatch, variant: str) -> None:
    assert len({partition for partition, _ in REGIONS}) >= 5 and len(REGIONS) > 40
    stock_session = botocore.session.Session()
    differences, sent = [], 0
    for partition, region in REGIONS:
        config = client_config().merge(Config(**VARIANTS[variant]))
        stock = _stock(region, config, stock_session)
        ours = outcome(partial(botodata.dynamodb_client, region, config))
        if ours != stock:
            differences.append((partition, region, ours, stock))
        sent += ours.get("get", ("error",))[0] != "error"
    assert differences == []
    assert sent >= len(REGIONS) // 2  # most configurations resolve: the comparison is not of two errors


@pytest.mark.parametrize("setting", ["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"])
def test_an_endpoint_url_override_is_honoured_as_by_a_stock_client(aws_env: pytest.MonkeyPatch, setting: str) -> None:
    aws_env.setenv(setting, "http://127.0.0.1:8000")
    for region in ("eu-west-1", "us-gov-west-1", "cn-north-1"):
        stock = _stock(region)
        ours = _store(region)
        assert ours == stock
        assert ours["get"][0].startswith("http://127.0.0.1:8000")


@pytest.mark.parametrize("setting", ["AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"])
def test_the_stores_client_follows_the_environments_endpoint_settings(aws_env: pytest.MonkeyPatch,
                                                                      setting: str) -> None:
    aws_env.setenv(setting, "true")
    for region in ("us-east-1", "us-gov-west-1", "ca-central-1"):
        assert _store(region) == _stock(region)


def test_the_stores_client_loads_the_trimmed_copy(aws_env: pytest.MonkeyPatch) -> None:
    client = DynamoStore("t", region_name="eu-west-1").client
    loader = client._loader  # the data the client was built from (pinned: else this change does nothing)
    assert loader.search_paths[-2:] == [botodata.DATA_PATH, Loader.BUILTIN_DATA_PATH]
    assert loader.list_available_services("service-2") == ["dynamodb"]
    _, endpoints = loader.load_data_with_path("endpoints")
    assert endpoints.startswith(botodata.DATA_PATH) and loader.is_builtin_path(endpoints)
    for name in ("partitions", "sdk-default-configuration", "dynamodb/2012-08-10/service-2",
                 "dynamodb/2012-08-10/endpoint-rule-set-1"):  # the installed botocore's, matching its code
        assert loader.load_data_with_path(name)[1].startswith(Loader.BUILTIN_DATA_PATH), name
    assert client.can_paginate("scan") and client.get_waiter("table_exists").name == "TableExists"
    assert {"ConditionalCheckFailedException", "TransactionCanceledException"} <= \
        {name for name in dir(client.exceptions) if name.endswith("Exception")}


def test_a_users_data_path_comes_first(aws_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A user's own endpoints.json wins over the copy, as it wins over botocore's (and is not built-in data).
    mine = tmp_path / "models"
    mine.mkdir()
    endpoints = json.loads((BOTOCORE_DATA / "endpoints.json").read_text())
    endpoints["partitions"][0]["services"]["dynamodb"]["endpoints"]["eu-west-1"] = {
        "hostname": "dynamodb.example.invalid"}
    (mine / "endpoints.json").write_text(json.dumps(endpoints))
    aws_env.setenv("AWS_DATA_PATH", str(mine))
    assert DynamoStore("t", region_name="eu-west-1").client._loader.search_paths[0] == str(mine)
    ours = _store("eu-west-1")
    assert ours == _stock("eu-west-1")
    assert ours["get"][0] == "https://dynamodb.example.invalid/"


@pytest.mark.parametrize("version", ["2012-08-10", "2011-12-05"])
def test_a_configured_dynamodb_api_version_is_honoured_as_by_a_stock_client(aws_env: pytest.MonkeyPatch,
                                                                           tmp_path: Path, version: str) -> None:
    # botocore has two API version folders for DynamoDB; only 2012-08-10 has a model: the same refusal of the other.
    (tmp_path / "config").write_text(f"[default]\napi_versions =\n    dynamodb = {version}\n")
    stock = _stock("eu-west-1")
    assert _store("eu-west-1") == stock
    assert ("error" in stock) == (version == "2011-12-05")


def test_an_assumed_roles_sts_client_comes_from_a_stock_session(aws_env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The credential provider creates an STS client: the copy has no STS, a stock session's data has.
    (tmp_path / "credentials").write_text("[base]\naws_access_key_id = AKIDBASE\naws_secret_access_key = s\n")
    (tmp_path / "config").write_text("[profile role]\nrole_arn = arn:aws:iam::123456789012:role/r\n"
                                     "source_profile = base\n")
    aws_env.setenv("AWS_PROFILE", "role")
    with mock_aws():
        aws_env.delenv("AWS_ACCESS_KEY_ID")  # mock_aws's own keys: the profile's role must answer
        aws_env.delenv("AWS_SECRET_ACCESS_KEY")
        client = DynamoStore("t", region_name="eu-west-1").client
        assert client.list_tables()["TableNames"] == []  # signed with the role's credentials, from moto's STS
        credentials = client._request_signer._credentials
        assert credentials.method == "assume-role"
        assert credentials.get_frozen_credentials().access_key not in ("AKIDBASE", "AKIDEXAMPLE")
