"""The synthesized cloud assembly (``cdk.out``): stacks, resources, and CloudFormation intrinsics.

Reads ``manifest.json`` and each stack's ``*.template.json``; never imports aws_cdk.
:class:`Intrinsics` resolves ``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``,
``Fn::Select`` and ``Fn::Split`` against what the sandbox provisioned.

The sandbox runs each function's ``$LATEST``: published versions and aliases (SnapStart's,
for one) are folded into their function when a template is read (:func:`fold_versions`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REGION = "eu-west-1"
ACCOUNT = "123456789012"  # moto's default account
STACK_TYPE = "aws:cloudformation:stack"
ASSETS_TYPE = "cdk:asset-manifest"
#: Resources that name a function's published code; the sandbox has only the function's ``$LATEST``.
VERSION_TYPES = frozenset({"AWS::Lambda::Version", "AWS::Lambda::Alias"})


@dataclass(frozen=True)
class Resource:
    """One template resource."""

    logical_id: str
    type: str
    properties: dict[str, Any]
    metadata: dict[str, Any]

    @property
    def path(self) -> str:
        """The construct path (``aws:cdk:path``), else the logical id."""
        return str(self.metadata.get("aws:cdk:path", self.logical_id))


@dataclass
class Stack:
    """A synthesized stack: its template's resources and the assembly directory holding its assets."""

    name: str
    directory: Path
    resources: dict[str, Resource]

    def of_type(self, *types: str) -> Iterator[Resource]:
        """Resources of the given types, in template order."""
        return (r for r in self.resources.values() if r.type in types)

    assets: dict[str, str] = field(default_factory=dict)

    def asset_dir(self, resource: Resource) -> Path | None:
        """The local directory of the resource's file asset, if any.

        From the ``aws:asset:path`` metadata (CLI synthesis), else from the asset manifest entry
        whose hash names the object the resource deploys (``Code.S3Key`` / ``Content.S3Key``).
        """
        asset = resource.metadata.get("aws:asset:path")
        if asset:
            return self.directory / str(asset)
        code = resource.properties.get("Code") or resource.properties.get("Content") or {}
        key = code.get("S3Key") if isinstance(code, dict) else None
        source = self.assets.get(str(key).split(".", 1)[0]) if isinstance(key, str) else None
        return self.directory / source if source else None


def load_stacks(assembly_dir: Path | str) -> list[Stack]:
    """Every stack of the assembly, in manifest order."""
    directory = Path(assembly_dir)
    manifest = json.loads((directory / "manifest.json").read_text())
    artifacts = manifest.get("artifacts", {})
    stacks = []
    for name, artifact in artifacts.items():
        if artifact.get("type") != STACK_TYPE:
            continue
        template = json.loads((directory / artifact["properties"]["templateFile"]).read_text())
        resources = fold_versions({lid: Resource(lid, r["Type"], r.get("Properties", {}), r.get("Metadata", {}))
                                   for lid, r in template.get("Resources", {}).items()})
        assets: dict[str, str] = {}
        for dependency in artifact.get("dependencies", []):
            if artifacts.get(dependency, {}).get("type") == ASSETS_TYPE:
                files = json.loads((directory / artifacts[dependency]["properties"]["file"]).read_text())
                assets |= {h: f["source"]["path"] for h, f in files.get("files", {}).items()
                           if f["source"].get("packaging") == "zip"}
        stacks.append(Stack(artifact.get("displayName", name), directory, resources, assets))
    return stacks


def fold_versions(resources: dict[str, Resource]) -> dict[str, Resource]:
    """``resources`` without versions and aliases: a reference to one becomes its function's ARN.

    Lambda accepts an unqualified function ARN wherever a version's or an alias's ARN goes
    (integration URIs, mappings, state machine tasks, rule targets, permissions, IAM resources),
    so the stack runs as if SnapStart were off.
    """
    folded = {lid: str(r.properties["FunctionName"]["Ref"]) for lid, r in resources.items()
              if r.type in VERSION_TYPES and isinstance(r.properties.get("FunctionName"), dict)
              and "Ref" in r.properties["FunctionName"]}
    if not folded:
        return resources

    def fold(value: Any) -> Any:
        if isinstance(value, list):
            return [fold(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1 and isinstance(value.get("Ref"), str) and value["Ref"] in folded:
            return {"Fn::GetAtt": [folded[value["Ref"]], "Arn"]}
        return {k: fold(v) for k, v in value.items()}

    return {lid: replace(r, properties=fold(r.properties)) for lid, r in resources.items() if lid not in folded}


def function_name(reference: str) -> str:
    """The function a ``FunctionName`` names: a name, a partial or a full ARN, with or without a qualifier."""
    return reference.rsplit(":function:", 1)[-1].split(":", 1)[0]


@dataclass
class Intrinsics:
    """Resolves intrinsic functions to provisioned values.

    ``refs`` maps a logical id to what ``Ref`` returns; ``attributes`` maps ``(logical id, name)``
    to what ``Fn::GetAtt`` returns. An unknown reference raises ``KeyError`` naming it.
    """

    stack_name: str
    refs: dict[str, Any] = field(default_factory=dict)
    attributes: dict[tuple[str, str], Any] = field(default_factory=dict)
    unemulated: set[str] = field(default_factory=set)

    def pseudo(self) -> Mapping[str, str]:
        """The pseudo parameters (``AWS::Region`` ...) of the sandbox."""
        return {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
                "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": self.stack_name,
                "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{self.stack_name}/sandbox",
                "AWS::NoValue": ""}

    def ref(self, name: str) -> Any:
        """``Ref``: a pseudo parameter or a provisioned resource."""
        pseudo = self.pseudo()
        if name in pseudo:
            return pseudo[name]
        if name in self.unemulated:
            return f"sandbox-unemulated:{name}"
        if name not in self.refs:
            raise KeyError(f"Ref {name}: not provisioned by the sandbox")
        return self.refs[name]

    def get_att(self, logical_id: str, attribute: str) -> Any:
        """``Fn::GetAtt``."""
        if logical_id in self.unemulated:
            return f"sandbox-unemulated:{logical_id}.{attribute}"
        if (logical_id, attribute) not in self.attributes:
            raise KeyError(f"Fn::GetAtt {logical_id}.{attribute}: not provisioned by the sandbox")
        return self.attributes[(logical_id, attribute)]

    def resolve(self, value: Any) -> Any:
        """``value`` with every supported intrinsic replaced by its provisioned value."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(logical_id, attribute)
            if key == "Fn::Join":
                separator, parts = arg
                return str(separator).join(str(p) for p in self.resolve(parts))
            if key == "Fn::Sub":
                return self._sub(arg)
            if key == "Fn::Select":
                index, items = self.resolve(arg)
                return items[int(index)]
            if key == "Fn::Split":
                separator, text = self.resolve(arg)
                return str(text).split(separator)
        return {k: self.resolve(v) for k, v in value.items()}

    def _sub(self, arg: Any) -> str:
        text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return str(self.get_att(logical_id, attribute))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)
