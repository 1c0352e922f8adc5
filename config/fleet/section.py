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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from ..base import TEXT_SETTINGS_MODEL, ConfigModel
from ..catalog.aks_versions import CATALOG_CHECKED_ON, why_not_creatable
from ..catalog.regions import region
from ..cluster.node_pools import CpuPoolConfig, SystemPoolConfig
from ..cluster.section import ClusterConfig
from ..errors import ConfigError, field_error, problems_from
from ..gpu.section import GpuPoolConfig
from ..loader import running_under_engine
from ..placeholders import refuse_placeholders
from ..platform import VERSION_DATE_CONTEXT, PlatformConfig, ResourceGroupConfig
from ..training.section import TeamConfig, TeamQuotaConfig, TrainingConfig
from ..types import Cidr
from ..upgrade.section import UpgradeConfig
from .merging import (
    dispatch_without_provisioning,
    fleet_owned_upgrades,
    mapping_of,
    merge_settings,
    own_quotas,
)

# Fleet member, update group and stage names: the Fleet REST spec's pattern (fleets.json, 2024-05-02-preview).
FLEET_CHILD_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Settings a member may not override: the mirrored queues (MultiKueue) and the environment every member shares.
SHARED_ONLY = ("training", "environment")


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
    upgrade: dict[str, Any] = Field(
        default_factory=dict[str, Any],
        description="Upgrade settings over the shared `upgrade` (the manager is no Fleet member: its AKS channels "
        "drive it, default patch and NodeImage, inside the shared windows)",
    )

    @model_validator(mode="after")
    def _check_subnet(self) -> FleetManagerConfig:
        if not ipaddress.IPv4Network(self.nodes_subnet).subnet_of(ipaddress.IPv4Network(self.address_space)):
            raise field_error("nodesSubnet", self.nodes_subnet, f"must lie inside addressSpace {self.address_space}")
        if region(self.location) is None:
            raise field_error(
                "location", self.location, "must be an Azure region of the catalog (config/catalog/regions.py)"
            )
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
        description="How the Kubernetes auto-upgrade runs (kubernetesChannel) pick node images: Consistent takes "
        "the newest image every member's region has, Latest the newest of each region. Fleet's NodeImage channel "
        "always uses Consistent, whatever is set here",
    )


class MultiKueueConfig(ConfigModel):
    """How the manager dispatches admitted jobs to the members."""

    dispatcher: Literal["AllAtOnce", "Incremental"] = Field(
        default="AllAtOnce",
        description="AllAtOnce offers a workload to every member at once and the first to admit it wins (a race); "
        "Incremental offers it to one member at a time in list order, the next after 5 minutes without admission. "
        "Either way only the winner gets the job and scales up GPU nodes",
    )
    credential_generation: int = Field(
        default=1,
        ge=1,
        description="Raise it to revoke every MultiKueue token at once: each member's multikueue-manager service "
        "account is replaced (deleted first), its tokens stop working, and the rotation CronJob's next run (within "
        "10 minutes) issues tokens of the new one",
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
    """The validated fleet: its own section, the manager's merged settings, each member's whole platform, and the
    shared `training` section as written (members keep the quotas on their own pools)."""

    def __init__(
        self,
        fleet: FleetConfig,
        manager: ManagerPlatform,
        members: dict[str, PlatformConfig],
        shared_training: TrainingConfig,
    ) -> None:
        self.fleet = fleet
        self.manager = manager
        self.members = members
        self.shared_training = shared_training

    @property
    def training(self) -> PlatformConfig:
        """Any member: they share `environment`, tags and the teams (SHARED_ONLY)."""
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


QUOTA_PATH = re.compile(r"training\.teams\[(?P<team>[0-9]+)\]\.quotas\[(?P<quota>[0-9]+)\]")


def _original_quota_paths(problems: list[str], kept: dict[int, list[int]]) -> list[str]:
    """Problems of a member's filtered quotas, with each quota's index as the stack file writes it."""

    def original(match: re.Match[str]) -> str:
        team, quota = int(match["team"]), int(match["quota"])
        indexes = kept.get(team, [])
        return f"training.teams[{team}].quotas[{indexes[quota] if quota < len(indexes) else quota}]"

    return [QUOTA_PATH.sub(original, p) for p in problems]


def _member(
    shared: Mapping[str, Any], member: FleetMemberConfig, i: int, on: datetime.date
) -> tuple[PlatformConfig | None, list[str]]:
    path = f"fleet.members[{i}].platform"
    values = merge_settings(shared, member.platform)
    values, owner_problems = fleet_owned_upgrades(values, path, mapping_of(shared.get("upgrade")))
    values, kept, quota_problems = own_quotas(values, path)
    values, dispatch_problems = dispatch_without_provisioning(values)
    problems = owner_problems + quota_problems + dispatch_problems
    if problems:
        return None, problems
    try:
        return _validate(PlatformConfig, values, path, on), []
    except ConfigError as err:
        return None, _original_quota_paths(err.problems, kept)


def load_fleet(settings: Mapping[str, Any], on: datetime.date = CATALOG_CHECKED_ON) -> FleetPlan:
    """Validate the fleet stack: every member as a platform, then the rules across members."""
    shared = {k: v for k, v in settings.items() if k != "fleet"}
    fleet: FleetConfig = _validate(FleetConfig, settings.get("fleet") or {}, "fleet", on)
    shared_training: TrainingConfig = _validate(TrainingConfig, shared.get("training") or {}, "training", on)
    members: dict[str, PlatformConfig] = {}
    problems: list[str] = []
    for i, member in enumerate(fleet.members):
        cfg, found = _member(shared, member, i, on)
        problems += found
        if cfg is not None:
            members[member.name] = cfg
    manager_values, manager_problems = _manager_settings(shared, fleet.manager)
    problems += manager_problems
    if problems:
        raise ConfigError(problems, source="fleet stack config")
    manager: ManagerPlatform = _validate(ManagerPlatform, manager_values, "fleet.manager", on)
    problems = _fleet_problems(fleet, manager, members, shared_training, on)
    if problems:
        raise ConfigError(problems, source="fleet stack config")
    return FleetPlan(fleet, manager, members, shared_training)


def _manager_settings(shared: Mapping[str, Any], manager: FleetManagerConfig) -> tuple[dict[str, Any], list[str]]:
    """The manager's cluster, pools and upgrade over the shared ones; its own AKS channels upgrade it."""
    upgrade = merge_settings(
        {k: v for k, v in mapping_of(shared.get("upgrade")).items() if k != "owner"}, manager.upgrade
    )
    problems: list[str] = []
    if upgrade.get("owner", "aks") != "aks":
        problems.append(
            f"fleet.manager.upgrade.owner: got {upgrade['owner']!r}; the manager is no Fleet member: its own "
            "AKS channels upgrade it"
        )
    values = {
        "cluster": merge_settings(shared.get("cluster") or {}, manager.cluster),
        "systemPool": merge_settings(shared.get("systemPool") or {}, manager.system_pool),
        "cpuPool": merge_settings(shared.get("cpuPool") or {}, manager.cpu_pool),
        "upgrade": upgrade | {"owner": "aks"},
    }
    return values, problems


def _fleet_problems(
    fleet: FleetConfig,
    manager: ManagerPlatform,
    members: dict[str, PlatformConfig],
    shared_training: TrainingConfig,
    on: datetime.date,
) -> list[str]:
    """The rules across the fleet's clusters, every problem at once."""
    problems: list[str] = []
    version = why_not_creatable(manager.cluster.kubernetes_version, manager.upgrade.support_plan, on)
    if version is not None:
        problems.append(f"fleet.manager.cluster.kubernetesVersion: got {manager.cluster.kubernetes_version}; {version}")
    problems += _member_problems(fleet, manager, members)
    problems += _overlap_problems(fleet, members)
    problems += _flavor_problems(fleet, members)
    problems += _quota_pool_problems(members, shared_training)
    return problems


def _member_problems(fleet: FleetConfig, manager: ManagerPlatform, members: dict[str, PlatformConfig]) -> list[str]:
    """Each member in its own region, under its own cluster name, with teams to run, reachable by the manager."""
    problems: list[str] = []
    regions: dict[str, str] = {}
    clusters: dict[str, str] = {manager.cluster.name: "fleet.manager.cluster.name"}
    for i, member in enumerate(fleet.members):
        cfg, path = members[member.name], f"fleet.members[{i}].platform"
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
        if cfg.cluster.api_server.private_cluster:
            problems.append(
                f"{path}.cluster.apiServer.privateCluster: got True; the manager reaches a member's API server from "
                "its static egress address through the member's authorized ranges; a private member would need VNet "
                "peering and its private DNS zone linked to the manager, which this fleet does not build: keep members "
                "public with authorizedIpRanges"
            )
    return problems


def _overlap_problems(fleet: FleetConfig, members: dict[str, PlatformConfig]) -> list[str]:
    # Members peer with nothing by default, but MultiKueue, Lustre clients and any later peering need unique ranges.
    ranges = [("fleet.manager.addressSpace", ipaddress.IPv4Network(fleet.manager.address_space))]
    for i, member in enumerate(fleet.members):
        ranges += [(f"fleet.members[{i}].platform.network", net) for net in _networks(members[member.name])]
    problems: list[str] = []
    for a in range(len(ranges)):
        for b in range(a + 1, len(ranges)):
            (where_a, net_a), (where_b, net_b) = ranges[a], ranges[b]
            if net_a.overlaps(net_b):
                problems.append(
                    f"{where_b}: got {net_b}; overlaps {where_a} ({net_a}): fleet networks must not overlap"
                )
    return problems


def _quota_pool_problems(members: dict[str, PlatformConfig], shared_training: TrainingConfig) -> list[str]:
    pools = {p.name for cfg in members.values() for p in cfg.gpu_pools}
    problems: list[str] = []
    for i, team in enumerate(shared_training.teams):
        for j, quota in enumerate(team.quotas):
            if quota.pool not in pools:
                problems.append(
                    f"training.teams[{i}].quotas[{j}].pool: got {quota.pool!r}; must name a GPU pool of at least one "
                    f"member: {sorted(pools)}"
                )
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


def members_with_pool(plan: FleetPlan, pool: str) -> list[str]:
    """Members that have a GPU pool of this name (its quota on the manager is theirs together)."""
    return [m for m, cfg in plan.members.items() if any(p.name == pool for p in cfg.gpu_pools)]


def manager_training(plan: FleetPlan) -> TrainingConfig:
    """The teams as the manager meters them: each GPU quota summed over the members that have the pool (Kueue's
    advice: the manager's quota equals the workers' total), GPUs only, and no ProvisioningRequest check (members
    scale up, once they have won the job)."""
    shared = plan.shared_training

    def times(value: int | None, scale: int) -> int | None:
        return None if value is None else value * scale

    teams: list[TeamConfig] = []
    for team in shared.teams:
        quotas: list[TeamQuotaConfig] = []
        for q in team.quotas:
            scale = len(members_with_pool(plan, q.pool))
            update = {
                "gpus": q.gpus * scale,
                "cpu": None,
                "memory": None,
                "borrowing_limit_gpus": times(q.borrowing_limit_gpus, scale),
                "lending_limit_gpus": times(q.lending_limit_gpus, scale),
            }
            quotas.append(q.model_copy(update=update))
        teams.append(team.model_copy(update={"quotas": quotas}))
    admission = shared.admission.model_copy(update={"provisioning_request": False})
    return shared.model_copy(update={"teams": teams, "admission": admission})


@dataclass(frozen=True)
class LargestJob:
    """The most GPUs one job of a team can get: one member's share of one pool, borrowing included."""

    gpus: int
    member: str
    pool: str


def largest_job(plan: FleetPlan, team_name: str) -> LargestJob:
    """What one member can admit for the team at most: per pool, its nominal quota plus what the cohort lends it
    (other teams' lendable quota on the pool, within the team's borrowing limit). A job larger than this fits the
    manager's summed quota but no member, and would hold that quota forever (no dispatch timeout at Kueue v0.19.2)."""
    best = LargestJob(0, "", "")
    for member, cfg in plan.members.items():
        teams = {t.name: t for t in cfg.training.teams}
        team = teams[team_name]
        for quota in team.quotas:
            lendable = 0
            if team.cohort is not None:
                for other in cfg.training.teams:
                    if other.name == team_name or other.cohort != team.cohort:
                        continue
                    for q in other.quotas:
                        if q.pool == quota.pool:
                            lendable += q.gpus if q.lending_limit_gpus is None else q.lending_limit_gpus
            if quota.borrowing_limit_gpus is not None:
                lendable = min(lendable, quota.borrowing_limit_gpus)
            if quota.gpus + lendable > best.gpus:
                best = LargestJob(quota.gpus + lendable, member, quota.pool)
    return best


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
