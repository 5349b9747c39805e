"""Lambda SnapStart for :class:`IdempotentFunction`: what it needs, checked at synthesis, and what it publishes.

With ``snap_start=True`` the function gets ``SnapStart: {ApplyOn: PublishedVersions}``, a
version published on every change of its configuration, code or layers, and the alias
``live`` pointing to it. SnapStart only applies to published versions, so everything
that invokes the function (API Gateway integrations, SQS and stream mappings, Step Functions
tasks, schedules, invoke grants) must go through the alias: the constructs use
``IdempotentFunction.invoke_target``, which is the alias then.

Superseded versions are deleted when a deployment replaces them (removal policy ``DESTROY``
instead of CDK's ``RETAIN``): each published SnapStart version of a Python function is billed
for its cached snapshot for as long as it exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Annotations, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_

from constructs import Construct

#: The alias every integration invokes when SnapStart is on.
_ALIAS_NAME = "live"
#: SnapStart snapshots no function with more ephemeral storage (``/tmp``) than this.
_MAX_EPHEMERAL_MIB = 512
#: The warning CDK adds to every SnapStart function (the construct publishes the version itself).
_PUBLISH_WARNING = "@aws-cdk/aws-lambda:snapStartRequirePublish"
#: ``function_props`` the construct sets itself when SnapStart is on.
_OWNED = ("snap_start",)


def check(scope: Construct, runtime: lambda_.Runtime, function_props: Mapping[str, Any] | None) -> None:
    """Refuse, with the fix, a function that Lambda cannot snapshot (``ValueError`` at synthesis).

    Checked on the effective props (``runtime`` and ``function_props``): a runtime without
    SnapStart (Python before 3.12, container images, OS-only runtimes), EFS, more than 512 MiB of
    ephemeral storage, provisioned concurrency, tenant isolation, and ``snap_start`` in
    ``function_props`` (the construct's own ``snap_start=True`` also publishes the alias).
    """
    given = dict(function_props or {})
    where = f"{scope.node.path}: snap_start=True"
    owned = [name for name in _OWNED if name in given]
    if owned:
        raise ValueError(f"{scope.node.path}: function_props cannot set {', '.join(owned)}; pass snap_start=True "
                         "to IdempotentFunction instead (it also publishes the version and the alias the "
                         "integrations invoke).")
    if not runtime.supports_snap_start:
        raise ValueError(f"{where}, but runtime {runtime.name} has no SnapStart (Python needs 3.12 or later; "
                         "container images and OS-only runtimes have none). Fix: use runtime="
                         "lambda_.Runtime.PYTHON_3_14 (the default), or omit snap_start.")
    if given.get("filesystem") is not None:
        raise ValueError(f"{where}, but the function mounts EFS (filesystem=...), which SnapStart does not "
                         "support. Fix: drop the file system or omit snap_start.")
    storage = given.get("ephemeral_storage_size")
    if storage is not None and storage.to_mebibytes() > _MAX_EPHEMERAL_MIB:
        raise ValueError(f"{where}, but ephemeral_storage_size is {storage.to_mebibytes():g} MiB; SnapStart "
                         f"supports at most {_MAX_EPHEMERAL_MIB} MiB. Fix: lower it or omit snap_start.")
    options = given.get("current_version_options")
    if options is not None and options.provisioned_concurrent_executions:
        raise ValueError(f"{where}, but current_version_options asks for provisioned concurrency, which Lambda "
                         "does not combine with SnapStart. Fix: choose one (provisioned concurrency keeps "
                         "environments initialized; SnapStart restores them from a snapshot).")
    if given.get("tenancy_config") is not None:
        raise ValueError(f"{where}, but the function uses tenant isolation (tenancy_config=...), which SnapStart "
                         "does not support. Fix: drop tenancy_config or omit snap_start.")


def function_props(description: str) -> dict[str, Any]:
    """The ``lambda_.Function`` props of a SnapStart function (applied before the caller's ``function_props``)."""
    return {"snap_start": lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS,
            "current_version_options": lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY,
                                                              description=description)}


def layers_fingerprint(scope: Construct, layers: Sequence[lambda_.ILayerVersion]) -> str:
    """What identifies the layers' contents: a new retrysafe layer must publish a new version.

    CDK mixes the layers into the version's hash only under the ``@aws-cdk/aws-lambda:recognizeLayerVersion``
    feature flag; without it, an upgraded layer would leave the alias on a version bound to the old one.
    """
    stack = Stack.of(scope)
    parts = []
    for layer in layers:
        resource = layer.node.default_child
        content = resource.content if isinstance(resource, lambda_.CfnLayerVersion) else layer.layer_version_arn
        parts.append(stack.resolve(content))
    return json.dumps(parts, sort_keys=True)


def publish(scope: Construct, function: lambda_.Function, layers: Sequence[lambda_.ILayerVersion]) -> lambda_.Alias:
    """The alias ``live`` on the function's current version (published when anything changes)."""
    function.invalidate_version_based_on(layers_fingerprint(scope, layers))
    Annotations.of(function).acknowledge_warning(_PUBLISH_WARNING,
                                                 f"the construct publishes versions and the alias {_ALIAS_NAME!r}")
    return lambda_.Alias(scope, "Alias", alias_name=_ALIAS_NAME, version=function.current_version,
                         description=f"{scope.node.path}: the SnapStart version every integration invokes")
