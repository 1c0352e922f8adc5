"""The cluster's stages of AksGpuPlatform: where it lives (resource group, network), the cluster, its pod security
baseline, and its CPU pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.cluster.node_pools import CpuPoolConfig, SystemPoolConfig
from aks_gpu_platform.config.cluster.section import ClusterConfig
from aks_gpu_platform.config.cluster.security import SecurityConfig
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.inference.models import InferenceConfig
from aks_gpu_platform.config.network.section import NetworkConfig
from aks_gpu_platform.config.platform import Environment, ResourceGroupConfig
from aks_gpu_platform.config.training.section import TrainingConfig
from aks_gpu_platform.config.upgrade.section import UpgradeConfig

from ..network.vnet import Network
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .agent_pools import PoolPlacementArgs
from .aks_cluster import AksCluster
from .azure_policy import PodSecurityPolicy, rdma_model_namespaces, rdma_team_namespaces
from .cpu_node_pool import CpuNodePool
from .resource_group import platform_resource_group


@dataclass(frozen=True)
class Site:
    """Where the cluster lives: its region, resource group and network, the tags every Azure resource carries, and
    whether resources that hold data are protected from deletion."""

    location: str
    resource_group_name: pulumi.Output[str]
    network: Network
    tags: dict[str, str]
    protect: bool


class ClusterMonitoring(TypedDict):
    """What the cluster takes from monitoring: the add-on profiles that send its logs and metrics, and the Log
    Analytics workspace Defender writes to unless `security` names another."""

    addon_profiles: Mapping[str, containerservice.ManagedClusterAddonProfileArgsDict]
    azure_monitor_profile: containerservice.ManagedClusterAzureMonitorProfileArgsDict
    log_analytics_workspace_id: pulumi.Output[str]


def build_site(
    place: Placement,
    environment: Environment,
    location: str,
    resource_group: ResourceGroupConfig,
    network: NetworkConfig,
    extra_tags: Mapping[str, str],
    protect: bool,
) -> Site:
    """The resource group and network, tagged with the environment and `extra_tags` (`tags`); `protect` keeps
    resources that hold data from deletion (prod)."""
    tags = {"environment": environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **extra_tags}
    rg = platform_resource_group(
        place.role("platform-rg"), resource_group, location, tags, protect=protect, opts=place.child("platform-rg")
    )
    net = Network(
        place.role("network"),
        {"resource_group_name": rg, "location": location, "settings": network, "tags": tags},
        place.child("network"),
    )
    return Site(location=location, resource_group_name=rg, network=net, tags=tags, protect=protect)


def build_cluster(
    place: Placement,
    site: Site,
    monitoring: ClusterMonitoring,
    cluster: ClusterConfig,
    system_pool: SystemPoolConfig,
    upgrade: UpgradeConfig,
    security: SecurityConfig,
    *,
    keda_enabled: bool,
    api_server_sources: Sequence[pulumi.Input[str]],
) -> tuple[AksCluster, ClusterHandle]:
    """The cluster (with the KEDA add-on when `autoscaling.kedaEnabled`) and the handle every later stage builds
    on; `api_server_sources` are admitted to the API server beside `cluster.apiServer`'s ranges."""
    defender_workspace = security.defender_workspace_id(monitoring["log_analytics_workspace_id"])
    aks = AksCluster(
        place.role("aks"),
        {
            "resource_group_name": site.resource_group_name,
            "location": site.location,
            "nodes_subnet_id": site.network.nodes_subnet_id,
            "cluster": cluster,
            "system_pool": system_pool,
            "upgrade": upgrade,
            "encryption_at_host": security.encryption_at_host,
            "workload_auto_scaler_profile": {"keda": {"enabled": keda_enabled}},
            "tags": site.tags,
            "protect": site.protect,
            "addon_profiles": {**monitoring["addon_profiles"], **security.addon_profiles()},  # type: ignore[dict-item]
            "azure_monitor_profile": monitoring["azure_monitor_profile"],
            **({"defender_log_analytics_workspace_id": defender_workspace} if defender_workspace else {}),
            **({"extra_authorized_ranges": api_server_sources} if api_server_sources else {}),
        },
        place.child("aks"),
    )
    handle = ClusterHandle(
        resource_group_name=site.resource_group_name,
        location=site.location,
        tags=site.tags,
        cluster=aks.cluster,
        cluster_name=aks.cluster_name,
        cluster_id=aks.cluster_id,
        provider=aks.provider,
        oidc_issuer_url=aks.oidc_issuer_url,
        protect=site.protect,
    )
    return aks, handle


def build_pod_security(
    place: Placement,
    handle: ClusterHandle,
    security: SecurityConfig,
    environment: Environment,
    own_namespaces: Sequence[str],
    training: TrainingConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    inference: InferenceConfig,
) -> None:
    """The Azure Policy pod security baseline when `security.podSecurity.enabled`: it leaves out `own_namespaces`
    (the platform's own pods) and allows IPC_LOCK to teams with InfiniBand quota and to models across nodes."""
    pod_security = security.pod_security
    if not pod_security.enabled:
        return
    PodSecurityPolicy(
        place.role("pod-security"),
        {
            "cluster": handle,
            "effect": pod_security.effect_for(environment),
            "platform_namespaces": own_namespaces,
            "rdma_namespaces": [*rdma_team_namespaces(training, gpu_pools), *rdma_model_namespaces(inference)],
            "extra_excluded_namespaces": pod_security.excluded_namespaces,
        },
        place.child("pod-security"),
    )


def pool_placement(
    handle: ClusterHandle, network: Network, cluster: ClusterConfig, upgrade: UpgradeConfig, security: SecurityConfig
) -> PoolPlacementArgs:
    """What every separately managed pool of the cluster joins with."""
    return {
        "cluster": handle,
        "nodes_subnet_id": network.nodes_subnet_id,
        "kubernetes_version": cluster.kubernetes_version,
        "tracks_versions": upgrade.tracks_versions,
        "encryption_at_host": security.encryption_at_host,
    }


def build_cpu_pool(
    place: Placement, joins: PoolPlacementArgs, cpu_pool: CpuPoolConfig, upgrade: UpgradeConfig
) -> CpuNodePool:
    return CpuNodePool(
        place.role("cpu"), {**joins, "settings": cpu_pool, "upgrade": upgrade.cpu_pool}, place.child("cpu")
    )
