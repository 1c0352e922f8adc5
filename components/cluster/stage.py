"""The cluster's stages of AksGpuPlatform: where it lives (resource group, network), the cluster with its pod
security baseline, and its CPU pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.platform import PlatformConfig

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
    """Where the cluster lives: its resource group and network."""

    resource_group_name: pulumi.Output[str]
    network: Network
    tags: dict[str, str]


class ClusterMonitoring(TypedDict):
    """What the cluster takes from monitoring: the add-on profiles that send its logs and metrics, and the Log
    Analytics workspace Defender writes to unless `security` names another."""

    addon_profiles: Mapping[str, containerservice.ManagedClusterAddonProfileArgsDict]
    azure_monitor_profile: containerservice.ManagedClusterAzureMonitorProfileArgsDict
    log_analytics_workspace_id: pulumi.Output[str]


def build_site(cfg: PlatformConfig, place: Placement) -> Site:
    tags = {"environment": cfg.environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **cfg.tags}
    rg = platform_resource_group(
        place.role("platform-rg"),
        cfg.resource_group,
        cfg.location,
        tags,
        protect=cfg.protect_stateful,
        opts=place.child("platform-rg"),
    )
    net = Network(
        place.role("network"),
        {"resource_group_name": rg, "location": cfg.location, "settings": cfg.network, "tags": tags},
        place.child("network"),
    )
    return Site(resource_group_name=rg, network=net, tags=tags)


def build_cluster(
    cfg: PlatformConfig,
    place: Placement,
    site: Site,
    monitoring: ClusterMonitoring,
    api_server_sources: Sequence[pulumi.Input[str]],
    own_namespaces: Sequence[str],
) -> tuple[AksCluster, ClusterHandle]:
    """The cluster, the handle every later stage builds on, and the Azure Policy pod security baseline, which
    leaves out `own_namespaces` (the platform's own pods)."""
    defender_workspace = cfg.security.defender_workspace_id(monitoring["log_analytics_workspace_id"])
    aks = AksCluster(
        place.role("aks"),
        {
            "resource_group_name": site.resource_group_name,
            "location": cfg.location,
            "nodes_subnet_id": site.network.nodes_subnet_id,
            "cluster": cfg.cluster,
            "system_pool": cfg.system_pool,
            "upgrade": cfg.upgrade,
            "encryption_at_host": cfg.security.encryption_at_host,
            "workload_auto_scaler_profile": {"keda": {"enabled": cfg.autoscaling.keda_enabled}},
            "tags": site.tags,
            "protect": cfg.protect_stateful,
            "addon_profiles": {**monitoring["addon_profiles"], **cfg.security.addon_profiles()},  # type: ignore[dict-item]
            "azure_monitor_profile": monitoring["azure_monitor_profile"],
            **({"defender_log_analytics_workspace_id": defender_workspace} if defender_workspace else {}),
            **({"extra_authorized_ranges": api_server_sources} if api_server_sources else {}),
        },
        place.child("aks"),
    )
    handle = ClusterHandle(
        resource_group_name=site.resource_group_name,
        location=cfg.location,
        tags=site.tags,
        cluster=aks.cluster,
        cluster_name=aks.cluster_name,
        cluster_id=aks.cluster_id,
        provider=aks.provider,
        oidc_issuer_url=aks.oidc_issuer_url,
        protect=cfg.protect_stateful,
    )
    pod_security = cfg.security.pod_security
    if pod_security.enabled:
        PodSecurityPolicy(
            place.role("pod-security"),
            {
                "cluster": handle,
                "effect": pod_security.effect_for(cfg.environment),
                "platform_namespaces": own_namespaces,
                "rdma_namespaces": [
                    *rdma_team_namespaces(cfg.training, cfg.gpu_pools),
                    *rdma_model_namespaces(cfg.inference),
                ],
                "extra_excluded_namespaces": pod_security.excluded_namespaces,
            },
            place.child("pod-security"),
        )
    return aks, handle


def pool_placement(cfg: PlatformConfig, handle: ClusterHandle, network: Network) -> PoolPlacementArgs:
    """What every separately managed pool of the cluster joins with."""
    return {
        "cluster": handle,
        "nodes_subnet_id": network.nodes_subnet_id,
        "kubernetes_version": cfg.cluster.kubernetes_version,
        "tracks_versions": cfg.upgrade.tracks_versions,
        "encryption_at_host": cfg.security.encryption_at_host,
    }


def build_cpu_pool(cfg: PlatformConfig, place: Placement, joins: PoolPlacementArgs) -> CpuNodePool:
    return CpuNodePool(
        place.role("cpu"), {**joins, "settings": cfg.cpu_pool, "upgrade": cfg.upgrade.cpu_pool}, place.child("cpu")
    )
