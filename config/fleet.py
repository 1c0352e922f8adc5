"""A fleet of GPU platforms in one stack: a CPU-only MultiKueue manager cluster and member platforms per region.

The stack's usual platform keys (`cluster`, `upgrade`, `training`, `monitoring`, ...) are the settings every
member shares; `fleet.members[].platform` overrides them per member (region, resource group, network, cluster
name, GPU pools). Each member is then validated as a whole `PlatformConfig`, so a member's quotas are checked
against its own pools exactly as a single-cluster stack's are. `training` is shared and may not be overridden:
MultiKueue needs the same team namespaces and LocalQueues on every member.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from .aks_versions import CATALOG_CHECKED_ON, why_not_creatable
from .base import TEXT_SETTINGS_MODEL, ConfigModel
from .cluster import ClusterConfig
from .errors import ConfigError, field_error, problems_from
from .gpu import GpuPoolConfig
from .loader import running_under_engine
from .node_pools import CpuPoolConfig, SystemPoolConfig
from .placeholders import refuse_placeholders
from .platform import VERSION_DATE_CONTEXT, PlatformConfig, ResourceGroupConfig
from .regions import region
from .training import TrainingConfig
from .types import Cidr
from .upgrade import UpgradeConfig

# Fleet member, update group and stage names: the Fleet REST spec's pattern (fleets.json, 2024-05-02-preview).
FLEET_CHILD_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Settings a member may not override: the mirrored queues (MultiKueue) and the environment every member shares.
SHARED_ONLY = ("training", "environment")


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Objects merge key by key; lists and scalars of the override replace the base's."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)  # type: ignore[arg-type]
        else:
            merged[key] = value
    return merged


class FleetMemberConfig(ConfigModel):
    """One member platform: its name and what it overrides of the shared platform settings."""

    name: str = Field(
        min_length=1,
        max_length=50,
        pattern=FLEET_CHILD_NAME,
        description="Member name: the Fleet member, its update group and its MultiKueueCluster (lowercase, '-')",
    )
    platform: dict[str, Any] = Field(
        default_factory=dict,
        description="Platform settings of this member over the stack's top-level ones (location, resourceGroup, "
        "network, cluster.name/dnsPrefix, gpuPools, storage ...); validated as a whole platform. Empty: the "
        "member is the platform the top-level keys describe",
    )

    @field_validator("platform")
    @classmethod
    def _check_shared_only(cls, platform: dict[str, Any]) -> dict[str, Any]:
        for key in SHARED_ONLY:
            if key in platform:
                raise field_error(
                    key,
                    platform[key],
                    "shared by every member (MultiKueue mirrors the teams' queues on each); set it at the stack's "
                    "top level, not per member",
                )
        return platform


class FleetManagerConfig(ConfigModel):
    """The CPU-only cluster MultiKueue runs on: teams submit here, jobs run on the members."""

    location: str = Field(description="Azure region of the manager cluster (and of the Fleet resource)")
    resource_group: ResourceGroupConfig = Field(description="Resource group of the manager cluster and the Fleet")
    address_space: Cidr = Field(description="Address space of the manager's VNet; must not overlap any member's")
    nodes_subnet: Cidr = Field(description="Node subnet of the manager, inside addressSpace")
    cluster: dict[str, Any] = Field(
        description="Cluster settings over the shared `cluster` section (at least name and dnsPrefix)"
    )
    system_pool: dict[str, Any] = Field(
        default_factory=dict[str, Any], description="System pool settings over the shared `systemPool`"
    )
    cpu_pool: dict[str, Any] = Field(default_factory=dict[str, Any], description="CPU pool over the shared `cpuPool`")

    @model_validator(mode="after")
    def _check_subnet(self) -> FleetManagerConfig:
        if not ipaddress.IPv4Network(self.nodes_subnet).subnet_of(ipaddress.IPv4Network(self.address_space)):
            raise field_error("nodesSubnet", self.nodes_subnet, f"must lie inside addressSpace {self.address_space}")
        if region(self.location) is None:
            raise field_error("location", self.location, "must be an Azure region of the catalog (config/regions.py)")
        return self


class UpdateStrategyConfig(ConfigModel):
    """Fleet-wide staged upgrades: the canary members first, then the rest after a wait."""

    canary_members: list[str] = Field(
        min_length=1, description="Members upgraded in the first stage (their own update groups, in parallel)"
    )
    wait_after_canary_hours: int = Field(
        default=24, ge=0, le=596, description="Hours between the canary stage and the rest (afterStageWaitInSeconds)"
    )
    kubernetes_channel: Literal["Stable", "Rapid"] = Field(
        default="Stable", description="Fleet auto-upgrade channel for Kubernetes versions (control plane and nodes)"
    )
    node_image_selection: Literal["Latest", "Consistent"] = Field(
        default="Consistent",
        description="Node image auto-upgrades: Consistent takes the newest image every member's region has",
    )


class MultiKueueConfig(ConfigModel):
    """How the manager dispatches admitted jobs to the members."""

    dispatcher: Literal["AllAtOnce", "Incremental"] = Field(
        default="AllAtOnce",
        description="AllAtOnce copies a workload to every member at once (first to admit wins); Incremental "
        "nominates members in list order, more every 5 minutes",
    )
    credential_generation: int = Field(
        default=1,
        ge=1,
        description="Raise it to rotate the manager's per-member service-account tokens (the old ones are revoked)",
    )


class FleetConfig(ConfigModel):
    """The `fleet` section: the Fleet Manager, the MultiKueue manager cluster and the member platforms."""

    name: str = Field(
        min_length=1, max_length=63, pattern=FLEET_CHILD_NAME, description="Azure Kubernetes Fleet Manager name"
    )
    manager: FleetManagerConfig = Field(description="The CPU-only manager cluster")
    members: list[FleetMemberConfig] = Field(min_length=1, description="Member platforms, one per region")
    updates: UpdateStrategyConfig = Field(description="Staged Kubernetes and node-image upgrades across members")
    multi_kueue: MultiKueueConfig = Field(
        default_factory=MultiKueueConfig, description="MultiKueue dispatch and credentials"
    )

    @model_validator(mode="after")
    def _check_members(self) -> FleetConfig:
        seen: set[str] = set()
        for i, member in enumerate(self.members):
            if member.name in seen:
                raise field_error(f"members[{i}].name", member.name, "member names must be unique")
            seen.add(member.name)
        for i, name in enumerate(self.updates.canary_members):
            if name not in seen:
                raise field_error(f"updates.canaryMembers[{i}]", name, f"must name a member: {sorted(seen)}")
        if set(self.updates.canary_members) == seen:
            raise field_error(
                "updates.canaryMembers",
                self.updates.canary_members,
                "must leave at least one member for the second stage",
            )
        return self


class ManagerPlatform(ConfigModel):
    """The manager cluster's settings after merging: validated like a platform's."""

    cluster: ClusterConfig
    system_pool: SystemPoolConfig
    cpu_pool: CpuPoolConfig
    upgrade: UpgradeConfig


class FleetPlan:
    """The validated fleet: its own section, the manager's merged settings and each member's whole platform."""

    def __init__(self, fleet: FleetConfig, manager: ManagerPlatform, members: dict[str, PlatformConfig]) -> None:
        self.fleet = fleet
        self.manager = manager
        self.members = members

    @property
    def training(self) -> PlatformConfig:
        """Any member: they share `training` (SHARED_ONLY)."""
        return next(iter(self.members.values()))


def _validate(model: type[ConfigModel], values: Mapping[str, Any], prefix: str, on: datetime.date) -> Any:
    try:
        return model.model_validate(values, context={VERSION_DATE_CONTEXT: on, TEXT_SETTINGS_MODEL: model})
    except ValidationError as err:
        raise ConfigError(problems_from(err, prefix=prefix, model=model), source="fleet stack config") from None


def _networks(cfg: PlatformConfig) -> list[ipaddress.IPv4Network]:
    if cfg.network.address_space is not None:
        return [ipaddress.IPv4Network(cfg.network.address_space)]
    return [cfg.network.nodes_cidr, cfg.network.lustre_cidr]


def load_fleet(settings: Mapping[str, Any], on: datetime.date = CATALOG_CHECKED_ON) -> FleetPlan:
    """Validate the fleet stack: every member as a platform, then the rules across members."""
    shared = {k: v for k, v in settings.items() if k != "fleet"}
    fleet: FleetConfig = _validate(FleetConfig, settings.get("fleet") or {}, "fleet", on)
    members: dict[str, PlatformConfig] = {}
    for i, member in enumerate(fleet.members):
        members[member.name] = _validate(
            PlatformConfig, _merge(shared, member.platform), f"fleet.members[{i}].platform", on
        )
    m = fleet.manager
    manager_values = {
        "cluster": _merge(shared.get("cluster") or {}, m.cluster),
        "systemPool": _merge(shared.get("systemPool") or {}, m.system_pool),
        "cpuPool": _merge(shared.get("cpuPool") or {}, m.cpu_pool),
        "upgrade": shared.get("upgrade") or {},
    }
    manager: ManagerPlatform = _validate(ManagerPlatform, manager_values, "fleet.manager", on)
    problems = _fleet_problems(fleet, manager, members, on)
    if problems:
        raise ConfigError(problems, source="fleet stack config")
    return FleetPlan(fleet, manager, members)


def _fleet_problems(
    fleet: FleetConfig, manager: ManagerPlatform, members: dict[str, PlatformConfig], on: datetime.date
) -> list[str]:
    problems: list[str] = []
    version = why_not_creatable(manager.cluster.kubernetes_version, manager.upgrade.support_plan, on)
    if version is not None:
        problems.append(f"fleet.manager.cluster.kubernetesVersion: got {manager.cluster.kubernetes_version}; {version}")
    # Members peer with nothing by default, but MultiKueue, Lustre clients and any later peering need unique ranges.
    ranges = [("fleet.manager.addressSpace", ipaddress.IPv4Network(fleet.manager.address_space))]
    regions: dict[str, str] = {}
    clusters: dict[str, str] = {manager.cluster.name: "fleet.manager.cluster.name"}
    for i, member in enumerate(fleet.members):
        cfg, path = members[member.name], f"fleet.members[{i}].platform"
        ranges += [(f"{path}.network", net) for net in _networks(cfg)]
        if cfg.location in regions:
            problems.append(
                f"{path}.location: got {cfg.location!r}; each member has its own region (its own GPU quota and "
                f"capacity); {regions[cfg.location]} is already there"
            )
        regions.setdefault(cfg.location, member.name)
        if cfg.cluster.name in clusters:
            problems.append(f"{path}.cluster.name: got {cfg.cluster.name!r}; {clusters[cfg.cluster.name]} has it")
        clusters.setdefault(cfg.cluster.name, f"{path}.cluster.name")
        if not cfg.training.enabled or not cfg.training.teams:
            problems.append(f"training.enabled: got {cfg.training.enabled}; a fleet dispatches team jobs: enable it")
    for a in range(len(ranges)):
        for b in range(a + 1, len(ranges)):
            (where_a, net_a), (where_b, net_b) = ranges[a], ranges[b]
            if net_a.overlaps(net_b):
                problems.append(
                    f"{where_b}: got {net_b}; overlaps {where_a} ({net_a}): fleet networks must not overlap"
                )
    problems += _flavor_problems(fleet, members)
    return problems


def _flavor_problems(fleet: FleetConfig, members: dict[str, PlatformConfig]) -> list[str]:
    # A flavor is named after its pool; the manager has one flavor per name, so a name means one GPU model everywhere.
    first: dict[str, tuple[str, str]] = {}
    problems: list[str] = []
    for i, member in enumerate(fleet.members):
        for j, pool in enumerate(members[member.name].gpu_pools):
            seen = first.setdefault(pool.name, (member.name, pool.vm_size))
            if seen[1] != pool.vm_size:
                problems.append(
                    f"fleet.members[{i}].platform.gpuPools[{j}].vmSize: got {pool.vm_size!r}; pool {pool.name!r} is "
                    f"{seen[1]} on member {seen[0]}: a pool name is one ResourceFlavor fleet-wide, so one VM size"
                )
    return problems


def manager_training(plan: FleetPlan) -> TrainingConfig:
    """The teams as the manager meters them: each GPU quota summed over the members (Kueue's advice: the
    manager's quota equals the workers' total), GPUs only, and no ProvisioningRequest check (members run it)."""
    shared = plan.training.training
    scale = len(plan.members)

    def times(value: int | None) -> int | None:
        return None if value is None else value * scale

    teams = [
        team.model_copy(
            update={
                "quotas": [
                    q.model_copy(
                        update={
                            "gpus": q.gpus * scale,
                            "cpu": None,
                            "memory": None,
                            "borrowing_limit_gpus": times(q.borrowing_limit_gpus),
                            "lending_limit_gpus": times(q.lending_limit_gpus),
                        }
                    )
                    for q in team.quotas
                ]
            }
        )
        for team in shared.teams
    ]
    admission = shared.admission.model_copy(update={"provisioning_request": False})
    return shared.model_copy(update={"teams": teams, "admission": admission})


def fleet_gpu_pools(plan: FleetPlan) -> list[GpuPoolConfig]:
    """One pool per name across the members (same VM size by `_flavor_problems`): the manager's flavors."""
    pools: dict[str, GpuPoolConfig] = {}
    for cfg in plan.members.values():
        for pool in cfg.gpu_pools:
            pools.setdefault(pool.name, pool)
    return list(pools.values())


def is_fleet_stack(settings: Mapping[str, Any]) -> bool:
    """A stack with a `fleet` section builds a fleet; any other builds one platform (Pulumi.yaml defaults `fleet` to
    {}, which the CLI hands to every stack that leaves it out)."""
    return bool(settings.get("fleet"))


def load_fleet_deployment(settings: Mapping[str, Any]) -> FleetPlan:
    """The fleet as the program deploys it: validated, and, under the engine, free of placeholders in every member."""
    plan = load_fleet(settings)
    if running_under_engine():
        for cfg in plan.members.values():
            refuse_placeholders(cfg)
    return plan
