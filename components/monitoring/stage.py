"""The monitoring stages of AksGpuPlatform: Log Analytics before the cluster; after it, the registry every image is
pulled through, then (after the GPU software) metrics, alerts and Grafana."""

from __future__ import annotations

import pulumi_kubernetes as k8s

from aks_gpu_platform.config.platform import PlatformConfig

from ..cluster.aks_cluster import AksCluster
from ..cluster.stage import ClusterMonitoring, Site
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .gpu_monitoring import GpuMonitoring
from .log_workspace import LogWorkspace, container_insights_addon, managed_prometheus_profile
from .registry import Registry


def build_logs(cfg: PlatformConfig, place: Placement, site: Site) -> tuple[LogWorkspace, ClusterMonitoring]:
    """Log Analytics (before the cluster: the Container Insights add-on names it) and what the cluster takes from
    monitoring."""
    logs = LogWorkspace(
        place.role("logs"),
        {
            "resource_group_name": site.resource_group_name,
            "location": cfg.location,
            "base_name": cfg.cluster.name,
            "settings": cfg.monitoring.logs,
            "tags": site.tags,
            "protect": cfg.protect_stateful,
        },
        place.child("logs"),
    )
    return logs, {
        "addon_profiles": container_insights_addon(logs.workspace_id),
        "azure_monitor_profile": managed_prometheus_profile(),
        "log_analytics_workspace_id": logs.workspace_id,
    }


def build_registry(
    cfg: PlatformConfig, place: Placement, handle: ClusterHandle, site: Site, aks: AksCluster
) -> Registry:
    """The registry every in-cluster image is pulled through: before anything that runs a pod."""
    return Registry(
        place.role("registry"),
        {
            "cluster": handle,
            "base_name": cfg.cluster.name,
            "settings": cfg.monitoring.registry,
            "kubelet_identity_object_id": aks.kubelet_identity_object_id,
            "private_endpoints_subnet_id": site.network.private_endpoints_subnet_id,
            "vnet_id": site.network.vnet_id,
        },
        place.child("registry"),
    )


def build_monitoring(
    cfg: PlatformConfig,
    place: Placement,
    handle: ClusterHandle,
    acr: Registry,
    logs: LogWorkspace,
    driver_runtime: tuple[k8s.helm.v3.Release, str] | None,
) -> GpuMonitoring:
    operator_release, runtime_class = driver_runtime if driver_runtime is not None else (None, None)
    monitoring = GpuMonitoring(
        place.role("monitoring"),
        {
            "settings": cfg.monitoring,
            "cluster": handle,
            "base_name": cfg.cluster.name,
            "dcgm_from_operator": cfg.gpu_stack.operator_dcgm,
            "log_analytics_workspace_id": logs.workspace_id,
            "dcgm_exporter_repository": acr.dcgm_exporter_repository,
            "gpu_pools": cfg.gpu_pools,
            "grafana_admin_group_object_ids": cfg.cluster.entra_id.admin_group_object_ids,
            "aks_managed_exporter": cfg.gpu_stack.mode == "aksManaged",
            "operator_release": operator_release,
            # The operator's CDI setup leaves runc containerd's default: its RuntimeClass carries the driver.
            "exporter_runtime_class": runtime_class,
            "teams": cfg.training.teams if cfg.training.enabled else [],
        },
        place.child("monitoring"),
    )
    return monitoring
