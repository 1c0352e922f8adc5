"""Upgrade policy: maintenance windows with freeze dates, per-pool upgrade settings, PodDisruptionBudgets.

The tier, support plan and channels themselves are set on the ManagedCluster by AksCluster from
the same `upgrade` section; this component adds what hangs off the cluster.
"""

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.upgrade.section import (
    DisruptionBudgetConfig,
    FreezeConfig,
    MaintenanceWindowConfig,
    UpgradeConfig,
)

from ..shared.context import ClusterHandle
from .disruption_budget import pod_disruption_budget

AUTO_UPGRADE_SCHEDULE = "aksManagedAutoUpgradeSchedule"
NODE_OS_UPGRADE_SCHEDULE = "aksManagedNodeOSUpgradeSchedule"


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
    settings: UpgradeConfig
    """The `upgrade` config section."""
    cluster: ClusterHandle
    """The cluster the maintenance configurations and budgets belong to."""
    platform_budgets: NotRequired[Sequence[DisruptionBudgetConfig]]
    """PodDisruptionBudgets for the platform's own multi-replica workloads."""


class UpgradePolicy(pulumi.ComponentResource):
    """When AKS may upgrade (windows, freezes) and what an upgrade may disrupt (PDBs)."""

    maintenance_configuration_names: list[str]
    """Names of the maintenance configurations created (one per active channel)."""
    disruption_budget_names: list[str]
    """namespace/name of every PodDisruptionBudget created."""

    def __init__(self, name: str, args: UpgradePolicyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:UpgradePolicy", name, None, opts)
        cfg, handle = args["settings"], args["cluster"]
        windows: list[tuple[str, str, MaintenanceWindowConfig]] = []
        if cfg.tracks_versions:
            windows.append(("auto-upgrade-window", AUTO_UPGRADE_SCHEDULE, cfg.auto_upgrade_window))
        if cfg.manages_node_os:
            windows.append(("node-os-window", NODE_OS_UPGRADE_SCHEDULE, cfg.node_os_upgrade_window))
        for role, config_name, window in windows:
            containerservice.MaintenanceConfiguration(
                f"{name}-{role}",
                resource_group_name=handle.resource_group_name,
                resource_name_=handle.cluster_name,
                config_name=config_name,
                maintenance_window=maintenance_window(window, cfg.freezes),
                # A child of the cluster in Azure: deleting the cluster deletes it, no separate delete call.
                opts=pulumi.ResourceOptions(parent=self, deleted_with=handle.cluster),
            )
        self.maintenance_configuration_names = [config_name for _, config_name, _ in windows]

        self.disruption_budget_names = []
        for budget in [*args.get("platform_budgets", []), *cfg.disruption_budgets]:
            pdb_name = f"{budget.namespace}/{budget.name}"
            pod_disruption_budget(
                f"{name}-pdb-{pdb_name.replace('/', '-')}", budget, handle.provider, handle.cluster, parent=self
            )
            self.disruption_budget_names.append(pdb_name)

        self.register_outputs(
            {
                "maintenance_configuration_names": self.maintenance_configuration_names,
                "disruption_budget_names": self.disruption_budget_names,
            }
        )
