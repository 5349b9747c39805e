"""Home regions: where each intent's claim and commit are sent when the idempotency table has replicas.

DynamoDB global tables in multi-Region eventual consistency (MREC) evaluate a
condition against the replica of the region that receives the write, resolve
concurrent writes of one item last-writer-wins, and keep a transaction atomic
in its own region only. Two invocations of one intent in two regions could
therefore both win their claim and both commit. Routing every record write of
one tenant to ONE region (its home) puts all of them on one replica again,
where conditions and transactions mean what they mean on a single-region table.

The rule is chosen per :class:`~retrysafe._keys.Scope` from its tenant (the
HTTP tenant, the Step Functions tenant, the webhook provider) or, for consumers of
events, messages and streams, which have no caller, their subscriber, without any DynamoDB call: the store sends the request to the home
region's endpoint directly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ._keys import Scope
from ._value import Value, set_field
from .errors import ConfigurationError
from .names import HOME_REGION_ENV, TENANT_HOME_REGIONS_ENV


class HomeRegions(Value):
    """The home region of each tenant: ``tenants[tenant]`` when listed, else ``default``.

    Give the same mapping to every region's functions (the constructs set it from
    ``IdempotencyTable(home_regions=...)``); changing a tenant's home is a failover
    step (see the multi-region docs), not a routine edit.
    """

    __slots__ = ("default", "tenants")

    default: str
    tenants: Mapping[str, str]

    def __init__(self, default: str, *, tenants: Mapping[str, str] | None = None) -> None:
        if not default:
            raise ConfigurationError("HomeRegions needs a default home region (e.g. 'eu-west-1')")
        empty = sorted(tenant for tenant, region in (tenants or {}).items() if not region)
        if empty:
            raise ConfigurationError(f"HomeRegions: tenants {empty} have an empty home region")
        set_field(self, "default", default)
        set_field(self, "tenants", dict(tenants or {}))

    def region_for(self, scope: Scope) -> str:
        """The region whose replica holds ``scope``'s record writes."""
        return self.tenants.get(scope.tenant or scope.subscriber, self.default)

    @property
    def regions(self) -> frozenset[str]:
        """Every home region this mapping names."""
        return frozenset({self.default, *self.tenants.values()})

    @classmethod
    def from_env(cls) -> HomeRegions | None:
        """The mapping named by ``RETRYSAFE_HOME_REGION`` and ``RETRYSAFE_TENANT_HOME_REGIONS`` (``None`` without
        the first: a single-region table, every write goes to the function's own region)."""
        default = os.environ.get(HOME_REGION_ENV, "").strip()
        raw = os.environ.get(TENANT_HOME_REGIONS_ENV, "").strip()
        if not default:
            if raw:
                raise ConfigurationError(f"{TENANT_HOME_REGIONS_ENV} is set but {HOME_REGION_ENV} is not: set the "
                                         "default home region too")
            return None
        tenants: object = {}
        if raw:
            try:
                tenants = json.loads(raw)
            except ValueError:
                tenants = None
        if not isinstance(tenants, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in tenants.items()):
            raise ConfigurationError(f"{TENANT_HOME_REGIONS_ENV} must be a JSON object of tenant to region names, "
                                     f'e.g. {{"acme": "us-east-1"}}; got {raw!r}')
        return cls(default, tenants=tenants)


__all__ = ["HomeRegions"]
