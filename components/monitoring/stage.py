"""The monitoring stages of AksGpuPlatform: Log Analytics before the cluster; after it, the registry every image is
pulled through, then (after the GPU software) metrics, alerts and Grafana."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi_kubernetes as k8s

from aks_gpu_platform.config.cluster.section import ClusterConfig
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackConfig
from aks_gpu_platform.config.monitoring.section import LogsConfig, MonitoringConfig, RegistryConfig
from aks_gpu_platform.config.training.section import TrainingConfig

from ..cluster.aks_cluster import AksCluster
from ..cluster.stage import ClusterMonitoring, Site
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .gpu_monitoring import GpuMonitoring
from .log_workspace import LogWorkspace, container_insights_addon, managed_prometheus_profile
from .registry import Registry


def build_logs(
    place: Placement, site: Site, logs: LogsConfig, base_name: str
) -> tuple[LogWorkspace, ClusterMonitoring]:
    """Log Analytics (before the cluster: the Container Insights add-on names it) and what the cluster takes from
    monitoring; `base_name` (`cluster.name`) names the workspace unless `monitoring.logs` does."""
    workspace = LogWorkspace(
        place.role("logs"),
        {
            "resource_group_name": site.resource_group_name,
            "location": site.location,
            "base_name": base_name,
            "settings": logs,
            "tags": site.tags,
            "protect": site.protect,
        },
        place.child("logs"),
    )
    return workspace, {
        "addon_profiles": container_insights_addon(workspace.workspace_id),
        "azure_monitor_profile": managed_prometheus_profile(),
        "log_analytics_workspace_id": workspace.workspace_id,
    }


def build_registry(
    place: Placement, handle: ClusterHandle, site: Site, aks: AksCluster, registry: RegistryConfig, base_name: str
) -> Registry:
    """The registry every in-cluster image is pulled through: before anything that runs a pod."""
    return Registry(
        place.role("registry"),
        {
            "cluster": handle,
            "base_name": base_name,
            "settings": registry,
            "kubelet_identity_object_id": aks.kubelet_identity_object_id,
            "private_endpoints_subnet_id": site.network.private_endpoints_subnet_id,
            "vnet_id": site.network.vnet_id,
        },
        place.child("registry"),
    )


def build_monitoring(
    place: Placement,
    handle: ClusterHandle,
    acr: Registry,
    logs: LogWorkspace,
    driver_runtime: tuple[k8s.helm.v3.Release, str] | None,
    monitoring: MonitoringConfig,
    cluster: ClusterConfig,
    gpu_stack: GpuStackConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    training: TrainingConfig,
) -> GpuMonitoring:
    """Managed Prometheus, the DCGM exporter, GPU alerts and Grafana (whose admins are `cluster.entraId`'s), with
    a dashboard per team while training is on."""
    operator_release, runtime_class = driver_runtime if driver_runtime is not None else (None, None)
    return GpuMonitoring(
        place.role("monitoring"),
        {
            "settings": monitoring,
            "cluster": handle,
            "base_name": cluster.name,
            "dcgm_from_operator": gpu_stack.operator_dcgm,
            "log_analytics_workspace_id": logs.workspace_id,
            "dcgm_exporter_repository": acr.dcgm_exporter_repository,
            "gpu_pools": gpu_pools,
            "grafana_admin_group_object_ids": cluster.entra_id.admin_group_object_ids,
            "aks_managed_exporter": gpu_stack.mode == "aksManaged",
            "operator_release": operator_release,
            # The operator's CDI setup leaves runc containerd's default: its RuntimeClass carries the driver.
            "exporter_runtime_class": runtime_class,
            "teams": training.teams if training.enabled else [],
        },
        place.child("monitoring"),
    )
