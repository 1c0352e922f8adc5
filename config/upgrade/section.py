"""Upgrade section: tier, support plan, channels, maintenance windows, freezes, pool upgrade settings, PDBs."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import Field, StringConstraints, model_validator
from pydantic.alias_generators import to_snake

from ..base import ConfigModel
from ..catalog.aks_versions import SupportPlan
from ..errors import field_error

Tier = Literal["Free", "Standard", "Premium"]
UpgradeChannel = Literal["none", "patch", "stable", "rapid", "node-image"]
NodeOsChannel = Literal["None", "Unmanaged", "NodeImage", "SecurityPatch"]
Schedule = Literal["weekly", "daily"]
WeekDay = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
UndrainableNodeBehavior = Literal["Cordon", "Schedule"]
# Who moves the cluster's Kubernetes version and node images: AKS's own channels, or an Azure Kubernetes Fleet
# Manager auto-upgrade profile (the cluster is a Fleet member). One owner per upgrade: with both, "either Fleet
# Manager or AKS cluster auto-upgrade performs the update, depending on which one runs first" (Fleet FAQ, "What
# happens if I leave AKS cluster auto-upgrades enabled?", MicrosoftDocs/azure-aks-docs fb060abe6).
UpgradeOwner = Literal["aks", "fleet"]

# Channels that keep the cluster on its LTS minor version (stable and rapid move the minor).
LTS_CHANNELS: frozenset[str] = frozenset({"patch", "none"})
# Node-OS channels for which AKS itself rolls node images and honours aksManagedNodeOSUpgradeSchedule.
MANAGED_NODE_OS_CHANNELS: frozenset[str] = frozenset({"NodeImage", "SecurityPatch"})
# A Fleet member's channels: both off. NodeImage or SecurityPatch would have AKS roll node images beside Fleet's
# NodeImage profile; Unmanaged patches through the OS, which Fleet does not support ("There are currently no plans
# for Fleet Manager to support this option", Fleet FAQ, "What AKS update channels does Fleet Manager support?").
FLEET_MEMBER_CHANNELS: dict[str, str] = {"autoUpgradeChannel": "none", "nodeOsUpgradeChannel": "None"}

Clock = Annotated[str, StringConstraints(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")]
UtcOffset = Annotated[str, StringConstraints(pattern=r"^[+-](0[0-9]|1[0-3]):(00|30|45)$|^[+-]14:00$")]
NodeCount = Annotated[
    str,
    StringConstraints(pattern=r"^(0|[1-9][0-9]{0,2})%?$"),
    Field(description="A node count ('1') or a percentage of the pool ('33%')"),
]
DnsLabel = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")]
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


class MaintenanceWindowConfig(ConfigModel):
    """When AKS may start an upgrade: a weekly or daily window, local time through utcOffset."""

    schedule: Schedule = Field(
        default="weekly",
        description="weekly (dayOfWeek, intervalWeeks) or daily (intervalDays; AKS takes daily for the node-OS window)",
    )
    day_of_week: WeekDay = Field(default="Sunday", description="Weekly schedules only")
    interval_weeks: int = Field(
        default=1, ge=1, le=4, description="Weekly schedules: every N weeks; AKS's weekly schedule takes 1-4"
    )
    interval_days: int = Field(
        default=1, ge=1, le=7, description="Daily schedules: every N days; AKS's daily schedule takes 1-7"
    )
    start_time: Clock = Field(default="01:00", description="HH:MM local time (utcOffset applies); quote it in YAML")
    duration_hours: int = Field(
        default=6,
        ge=4,
        le=24,
        description="AKS requires maintenance windows of 4 to 24 hours",
    )
    utc_offset: UtcOffset = Field(
        default="+00:00", description="Local time zone, e.g. +09:00 for Korea (-12:00 to +14:00); quote it in YAML"
    )


class FreezeConfig(ConfigModel):
    """Dates on which no upgrade may start, e.g. a training campaign (local dates, utcOffset applies)."""

    start: datetime.date = Field(description="First frozen day, YYYY-MM-DD")
    end: datetime.date = Field(description="Last frozen day, YYYY-MM-DD (not before start)")
    reason: str = Field(
        default="", max_length=200, description="Why upgrades are frozen (documentation only, at most 200 characters)"
    )

    @model_validator(mode="after")
    def _check_order(self) -> FreezeConfig:
        if self.end < self.start:
            raise field_error("end", self.end.isoformat(), f"must not be before start ({self.start.isoformat()})")
        return self


def surge_node_count(max_surge: str, pool_size: int) -> int:
    """Nodes AKS adds at once while upgrading a pool of `pool_size` nodes with this `maxSurge` ("1", "33%").

    A percentage is of the pool's size and "fractional nodes are rounded up" (AgentPoolUpgradeSettings.maxSurge,
    AKS REST API reference, read 2026-12-02).
    """
    if max_surge.endswith("%"):
        return math.ceil(pool_size * int(max_surge[:-1]) / 100)
    return int(max_surge)


def _is_zero(count: str | None) -> bool:
    return count is not None and count.rstrip("%") == "0"


class PoolUpgradeConfig(ConfigModel):
    """How AKS rolls one pool: surge new nodes first (maxSurge), or take nodes down first (maxUnavailable)."""

    default_surge: ClassVar[str] = "33%"
    default_unavailable: ClassVar[str | None] = None
    allows_unavailable: ClassVar[bool] = True

    max_surge: NodeCount | None = Field(default=None, description="Extra nodes created during an upgrade")
    max_unavailable: NodeCount | None = Field(
        default=None, description="Nodes taken down at once instead of surging (needs maxSurge 0)"
    )
    drain_timeout_in_minutes: int = Field(
        default=30, ge=1, le=1440, description="Per-node eviction wait before the upgrade fails; AKS allows 1-1440 min"
    )
    node_soak_duration_in_minutes: int = Field(
        default=0, ge=0, le=30, description="Wait after each node's upgrade before the next; AKS allows 0-30 min"
    )
    undrainable_node_behavior: UndrainableNodeBehavior = Field(
        default="Schedule",
        description="Schedule: a node that cannot drain in time goes back into service un-upgraded and the upgrade "
        "fails; Cordon: it is quarantined and a surge node replaces it (needs maxSurge of 1 or more)",
    )

    @model_validator(mode="after")
    def _check_surge_or_unavailable(self) -> PoolUpgradeConfig:
        if not self.allows_unavailable and self.max_unavailable is not None:
            raise field_error("maxUnavailable", self.max_unavailable, "not allowed on the system pool; use maxSurge")
        if self.max_unavailable is not None and not _is_zero(self.max_unavailable):
            if self.max_surge is not None and not _is_zero(self.max_surge):
                raise field_error(
                    "maxUnavailable",
                    self.max_unavailable,
                    f"set either maxSurge ({self.max_surge}) or maxUnavailable (with maxSurge 0), not both",
                )
        elif _is_zero(self.max_surge):
            raise field_error("maxUnavailable", self.max_unavailable, "maxSurge 0 needs maxUnavailable of at least 1")
        for key, value in (("maxSurge", self.max_surge), ("maxUnavailable", self.max_unavailable)):
            if value is not None and value.endswith("%") and int(value[:-1]) > 100:
                raise field_error(key, value, "a percentage must be at most 100%")
        surge, unavailable = self.surge_and_unavailable
        if self.undrainable_node_behavior == "Cordon" and _is_zero(surge):
            # AKS replaces each blocked node with a surge node it keeps, and tolerates maxBlockedNodes
            # of them, which defaults to maxSurge (the API version pinned here cannot set it).
            raise field_error(
                "undrainableNodeBehavior",
                "Cordon",
                "Cordon needs surge nodes (AKS keeps one per blocked node, up to maxBlockedNodes = maxSurge), "
                f"but this pool rolls with maxSurge 0 / maxUnavailable {unavailable}: use Schedule, or set "
                "maxSurge to 1 or more (spare quota for one more node) and drop maxUnavailable",
            )
        return self

    def surge_nodes(self, pool_size: int) -> int:
        """Extra nodes (and node-subnet addresses) an upgrade of a pool of `pool_size` nodes adds at once."""
        surge, _ = self.surge_and_unavailable
        return surge_node_count(surge, pool_size)

    @property
    def surge_and_unavailable(self) -> tuple[str, str | None]:
        """The (maxSurge, maxUnavailable) pair sent to AKS; maxUnavailable None when surging."""
        if self.max_unavailable is not None and not _is_zero(self.max_unavailable):
            return "0", self.max_unavailable
        if self.max_surge is not None:
            return self.max_surge, None
        return self.default_surge, self.default_unavailable


class SystemPoolUpgradeConfig(PoolUpgradeConfig):
    """The system pool surges: AKS does not allow maxUnavailable there."""

    allows_unavailable: ClassVar[bool] = False


class GpuPoolUpgradeConfig(PoolUpgradeConfig):
    """GPU pools take one node down at a time (no spare GPU quota needed) unless a surge is set explicitly.

    Without a surge there is no node to stand in for a blocked one, so the default is Schedule: a GPU
    node whose job outlives the drain timeout keeps running it and the upgrade is retried later.
    Cordon (quarantine) is for pools whose config affords maxSurge 1 or more.
    """

    default_surge: ClassVar[str] = "0"
    default_unavailable: ClassVar[str | None] = "1"

    drain_timeout_in_minutes: int = Field(
        default=90,
        ge=1,
        le=1440,
        description="Long enough for training jobs to checkpoint; AKS allows 1-1440 min",
    )


class DisruptionBudgetConfig(ConfigModel):
    """A policy/v1 PodDisruptionBudget for a workload: at least minAvailable of its replicas stay up."""

    name: DnsLabel = Field(description="PodDisruptionBudget name (a DNS label)")
    namespace: DnsLabel = Field(default="default", description="Namespace of the workload")
    selector: dict[str, str] = Field(min_length=1, description="matchLabels of the workload's pods")
    min_available: int = Field(ge=1, description="Pods that must stay up during a voluntary disruption")
    replicas: int = Field(ge=2, description="The workload's replica count (a PDB on one replica blocks drains)")

    @model_validator(mode="after")
    def _check_satisfiable(self) -> DisruptionBudgetConfig:
        for key, value in self.selector.items():
            if not LABEL_KEY.match(key) or not LABEL_VALUE.match(value):
                raise field_error("selector", {key: value}, "keys and values must be valid Kubernetes labels")
        if self.min_available >= self.replicas:
            raise field_error(
                "minAvailable",
                self.min_available,
                f"must be below replicas ({self.replicas}); otherwise no pod may be evicted and every drain blocks",
            )
        return self


class UpgradeConfig(ConfigModel):
    """How the cluster and its nodes stay current without breaking running GPU work."""

    owner: UpgradeOwner = Field(
        default="aks",
        description="Who moves the Kubernetes version and node images: aks (the two channels below) or fleet (an "
        "Azure Kubernetes Fleet Manager auto-upgrade profile; both AKS channels off, the windows kept, versions never "
        "re-sent); a fleet stack sets fleet on its members",
    )
    tier: Tier = Field(
        default="Standard", description="AKS pricing tier: Free (no SLA), Standard (SLA), Premium (SLA + LTS)"
    )
    support_plan: SupportPlan = Field(
        default="KubernetesOfficial",
        description="KubernetesOfficial (about a year per minor) or AKSLongTermSupport (a further year; Premium only)",
    )
    auto_upgrade_channel: UpgradeChannel = Field(
        default="patch", description="How AKS moves the Kubernetes version: none, patch, stable, rapid or node-image"
    )
    node_os_upgrade_channel: NodeOsChannel = Field(
        default="NodeImage", description="How node OS updates arrive: None, Unmanaged, NodeImage or SecurityPatch"
    )
    auto_upgrade_window: MaintenanceWindowConfig = Field(
        default_factory=MaintenanceWindowConfig, description="aksManagedAutoUpgradeSchedule"
    )
    node_os_upgrade_window: MaintenanceWindowConfig = Field(
        default_factory=lambda: MaintenanceWindowConfig(day_of_week="Saturday"),
        description="aksManagedNodeOSUpgradeSchedule",
    )
    freezes: list[FreezeConfig] = Field(
        default_factory=list[FreezeConfig], description="notAllowedDates of both windows, e.g. training campaigns"
    )
    system_pool: SystemPoolUpgradeConfig = Field(
        default_factory=SystemPoolUpgradeConfig, description="How the system pool rolls (surge only)"
    )
    cpu_pool: PoolUpgradeConfig = Field(default_factory=PoolUpgradeConfig, description="How the CPU pool rolls")
    gpu_pools: GpuPoolUpgradeConfig = Field(default_factory=GpuPoolUpgradeConfig, description="Every GPU pool")
    disruption_budgets: list[DisruptionBudgetConfig] = Field(
        default_factory=list[DisruptionBudgetConfig], description="PodDisruptionBudgets for users' workloads"
    )

    @model_validator(mode="before")
    @classmethod
    def _fleet_turns_channels_off(cls, data: Any) -> Any:
        # With owner fleet the channels default to off; a channel written on is refused below, not overridden.
        values = dict(cast(Mapping[str, Any], data)) if isinstance(data, Mapping) else {}
        if values.get("owner") != "fleet":
            return cast(Any, data)
        for key, off in FLEET_MEMBER_CHANNELS.items():
            if key not in values and to_snake(key) not in values:
                values[key] = off
        return values

    @model_validator(mode="after")
    def _check_fleet_owner(self) -> UpgradeConfig:
        if self.owner != "fleet":
            return self
        given = {"autoUpgradeChannel": self.auto_upgrade_channel, "nodeOsUpgradeChannel": self.node_os_upgrade_channel}
        for key, off in FLEET_MEMBER_CHANNELS.items():
            if given[key] != off:
                raise field_error(
                    key,
                    given[key],
                    f"must be {off} when owner is fleet: Fleet's auto-upgrade profiles drive this cluster, and an AKS "
                    "channel left on upgrades it outside the Fleet's stages, whichever runs first",
                )
        return self

    @model_validator(mode="after")
    def _check_lts(self) -> UpgradeConfig:
        if self.support_plan == "AKSLongTermSupport" and self.tier != "Premium":
            raise field_error("tier", self.tier, "AKSLongTermSupport requires tier Premium")
        if self.support_plan == "AKSLongTermSupport" and self.auto_upgrade_channel not in LTS_CHANNELS:
            raise field_error(
                "autoUpgradeChannel",
                self.auto_upgrade_channel,
                "AKSLongTermSupport pairs with the patch channel (or none); other channels leave the LTS minor",
            )
        return self

    @model_validator(mode="after")
    def _check_budgets_unique(self) -> UpgradeConfig:
        seen: set[tuple[str, str]] = set()
        for i, budget in enumerate(self.disruption_budgets):
            key = (budget.namespace, budget.name)
            if key in seen:
                raise field_error(f"disruptionBudgets[{i}].name", budget.name, "must be unique within its namespace")
            seen.add(key)
        return self

    @property
    def kubernetes_upgraded_by(self) -> UpgradeOwner | None:
        """Who moves the Kubernetes version: an AKS channel, Fleet, or nobody (upgrades by hand)."""
        if self.owner == "fleet":
            return "fleet"
        return "aks" if self.auto_upgrade_channel != "none" else None

    @property
    def node_image_upgraded_by(self) -> UpgradeOwner | None:
        """Who rolls node images: AKS's node-OS channel, Fleet's NodeImage profile, or nobody."""
        if self.owner == "fleet":
            return "fleet"
        return "aks" if self.node_os_upgrade_channel in MANAGED_NODE_OS_CHANNELS else None

    @property
    def tracks_versions(self) -> bool:
        """True when something other than this program moves the Kubernetes version (an AKS channel or Fleet), so the
        program must not re-send its pinned minor: that would be a downgrade."""
        return self.kubernetes_upgraded_by is not None

    @property
    def manages_node_os(self) -> bool:
        """True when node images are rolled for this cluster (by AKS or Fleet), inside the node-OS window."""
        return self.node_image_upgraded_by is not None
