"""Upgrade policy: maintenance windows with freeze dates, per-pool upgrade settings, PodDisruptionBudgets.

The tier, support plan and channels themselves are set on the ManagedCluster by AksCluster from
the same `upgrade` section; this component adds what hangs off the cluster.
"""

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_kubernetes as k8s

from config.errors import ConfigError
from config.loader import validate_section
from config.upgrade import FreezeConfig, MaintenanceWindowConfig, PoolUpgradeConfig, UpgradeConfig

from .disruption_budget import pod_disruption_budget

AUTO_UPGRADE_SCHEDULE = "aksManagedAutoUpgradeSchedule"
NODE_OS_UPGRADE_SCHEDULE = "aksManagedNodeOSUpgradeSchedule"


def pool_upgrade_settings(pool: PoolUpgradeConfig) -> containerservice.AgentPoolUpgradeSettingsArgsDict:
    """The AgentPool `upgradeSettings` for one pool's upgrade config (system, CPU or GPU).

    No `maxBlockedNodes`: AgentPoolUpgradeSettings of the API version pulumi-azure-native 3.29 uses
    (2025-09-01) has no such field, so AKS applies its default, maxSurge. The config therefore accepts
    Cordon only on pools that surge.
    """
    surge, unavailable = pool.surge_and_unavailable
    settings: containerservice.AgentPoolUpgradeSettingsArgsDict = {
        "max_surge": surge,
        "drain_timeout_in_minutes": pool.drain_timeout_in_minutes,
        "node_soak_duration_in_minutes": pool.node_soak_duration_in_minutes,
        "undrainable_node_behavior": containerservice.UndrainableNodeBehavior(pool.undrainable_node_behavior),
    }
    if unavailable is not None:
        settings["max_unavailable"] = unavailable
    return settings


def system_pool_upgrade_settings(upgrade: Mapping[str, Any]) -> containerservice.AgentPoolUpgradeSettingsArgsDict:
    """Upgrade settings of the system pool from the `upgrade` section (surge only)."""
    return pool_upgrade_settings(validate_section(UpgradeConfig, upgrade, source="upgrade settings").system_pool)


def cpu_pool_upgrade_settings(upgrade: Mapping[str, Any]) -> containerservice.AgentPoolUpgradeSettingsArgsDict:
    """Upgrade settings of the CPU user pool from the `upgrade` section."""
    return pool_upgrade_settings(validate_section(UpgradeConfig, upgrade, source="upgrade settings").cpu_pool)


def gpu_pool_upgrade_settings(upgrade: Mapping[str, Any]) -> containerservice.AgentPoolUpgradeSettingsArgsDict:
    """Upgrade settings of every GPU pool: by default maxSurge 0 + maxUnavailable 1, long drain, Schedule."""
    return pool_upgrade_settings(validate_section(UpgradeConfig, upgrade, source="upgrade settings").gpu_pools)


def maintenance_window(
    window: MaintenanceWindowConfig, freezes: list[FreezeConfig]
) -> containerservice.MaintenanceWindowArgsDict:
    """An AKS maintenance window; freezes become notAllowedDates."""
    schedule: containerservice.ScheduleArgsDict = (
        {
            "weekly": {
                "day_of_week": containerservice.WeekDay(window.day_of_week),
                "interval_weeks": window.interval_weeks,
            }
        }
        if window.schedule == "weekly"
        else {"daily": {"interval_days": window.interval_days}}
    )
    result: containerservice.MaintenanceWindowArgsDict = {
        "schedule": schedule,
        "start_time": window.start_time,
        "duration_hours": window.duration_hours,
        "utc_offset": window.utc_offset,
    }
    if freezes:
        result["not_allowed_dates"] = [{"start": f.start.isoformat(), "end": f.end.isoformat()} for f in freezes]
    return result


class UpgradePolicyArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    cluster_name: pulumi.Input[str]
    """AKS cluster the maintenance configurations belong to."""
    settings: Mapping[str, Any]
    """The `upgrade` config section (camelCase keys, as in the stack YAML)."""
    provider: NotRequired[k8s.Provider]
    """Kubernetes provider of the cluster (AksCluster.provider); needed when disruptionBudgets is not empty."""
    cluster: NotRequired[containerservice.ManagedCluster]
    """The ManagedCluster (AksCluster.cluster); in-cluster objects are deleted with it."""
    platform_budgets: NotRequired[list[Mapping[str, Any]]]
    """PodDisruptionBudgets for the platform's own multi-replica workloads (same shape as disruptionBudgets)."""


class UpgradePolicy(pulumi.ComponentResource):
    """When AKS may upgrade (windows, freezes) and what an upgrade may disrupt (PDBs)."""

    maintenance_configuration_names: list[str]
    """Names of the maintenance configurations created (one per active channel)."""
    disruption_budget_names: list[str]
    """namespace/name of every PodDisruptionBudget created."""

    def __init__(self, name: str, args: UpgradePolicyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:UpgradePolicy", name, None, opts)
        cfg = validate_section(UpgradeConfig, args["settings"], source="UpgradePolicy settings")
        windows: list[tuple[str, str, MaintenanceWindowConfig]] = []
        if cfg.tracks_versions:
            windows.append(("auto-upgrade-window", AUTO_UPGRADE_SCHEDULE, cfg.auto_upgrade_window))
        if cfg.manages_node_os:
            windows.append(("node-os-window", NODE_OS_UPGRADE_SCHEDULE, cfg.node_os_upgrade_window))
        for role, config_name, window in windows:
            containerservice.MaintenanceConfiguration(
                f"{name}-{role}",
                resource_group_name=args["resource_group_name"],
                resource_name_=args["cluster_name"],
                config_name=config_name,
                maintenance_window=maintenance_window(window, cfg.freezes),
                # A child of the cluster in Azure: deleting the cluster deletes it, no separate delete call.
                opts=pulumi.ResourceOptions(parent=self, deleted_with=args.get("cluster")),
            )
        self.maintenance_configuration_names = [config_name for _, config_name, _ in windows]

        budgets = [*args.get("platform_budgets", []), *(b.as_settings() for b in cfg.disruption_budgets)]
        self.disruption_budget_names = []
        if budgets:
            if "provider" not in args or "cluster" not in args:
                raise ConfigError(
                    ["provider, cluster: required when PodDisruptionBudgets are configured"],
                    source="UpgradePolicy args",
                )
            for budget in budgets:
                pdb_name = f"{budget.get('namespace', 'default')}/{budget['name']}"
                pod_disruption_budget(
                    f"{name}-pdb-{pdb_name.replace('/', '-')}", budget, args["provider"], args["cluster"], parent=self
                )
                self.disruption_budget_names.append(pdb_name)

        self.register_outputs(
            {
                "maintenance_configuration_names": self.maintenance_configuration_names,
                "disruption_budget_names": self.disruption_budget_names,
            }
        )
