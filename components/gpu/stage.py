"""The GPU stages of AksGpuPlatform: the GPU software on the pools (with its smoke test and image pre-pull), then,
once the registry and monitoring exist, AMD's GPU Operator, GPU health and the opt-in validation checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import pulumi

from aks_gpu_platform.config.gpu.health import GpuHealthConfig
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackConfig
from aks_gpu_platform.config.monitoring.section import MonitoringConfig
from aks_gpu_platform.config.upgrade.section import UpgradeConfig

from ..cluster.agent_pools import PoolPlacementArgs, pool_upgrade_settings
from ..monitoring.registry import Registry
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .aks_managed import ManagedGpuNodePool
from .amd_stack import AmdGpuStack
from .health import GpuHealth, remediation_node_labels
from .image_prepull import ImagePrepull
from .node_pool import GpuNodePool
from .nvidia_stack import GpuStack
from .smoke_test import GpuSmokeTest
from .validation import GpuValidation


class MetricsPipeline(Protocol):
    """What GPU health and AMD's exporter hand their series and alerts to (GpuMonitoring)."""

    @property
    def monitor_workspace_id(self) -> pulumi.Output[str]: ...
    @property
    def action_group_id(self) -> pulumi.Output[str]: ...
    @property
    def scrape_dependencies(self) -> Sequence[pulumi.Resource]: ...


def build_gpu_pools(
    place: Placement,
    joins: PoolPlacementArgs,
    gpu_pools: Sequence[GpuPoolConfig],
    gpu_stack: GpuStackConfig,
    gpu_health: GpuHealthConfig,
    upgrade: UpgradeConfig,
) -> list[GpuNodePool | ManagedGpuNodePool]:
    """One pool per `gpuPools` entry (AKS-managed GPU pools in `gpuStack.mode` aksManaged)."""
    # Labels NVSentinel's node agents select on, set through the pools so scale-from-zero nodes carry them.
    health_labels = remediation_node_labels(gpu_health)
    node_pools: list[GpuNodePool | ManagedGpuNodePool] = [
        ManagedGpuNodePool(  # gpuStack.mode aksManaged: AKS installs and runs the GPU stack on the node
            place.role(f"gpu-{pool.name}"),
            {
                "pool": pool,
                "cluster": joins["cluster"],
                "nodes_subnet_id": joins["nodes_subnet_id"],
                "kubernetes_version": joins["kubernetes_version"],
                "tracks_versions": joins["tracks_versions"],
                "upgrade_settings": pool_upgrade_settings(upgrade.gpu_pools),
                "encryption_at_host": joins.get("encryption_at_host", False),
                "extra_node_labels": health_labels,
            },
            place.child(f"gpu-{pool.name}"),
        )
        if gpu_stack.mode == "aksManaged"
        else GpuNodePool(
            place.role(f"gpu-{pool.name}"),
            {
                **joins,
                "settings": pool,
                "stack_mode": gpu_stack.mode,
                "upgrade": upgrade.gpu_pools,
                "extra_node_labels": health_labels,
            },
            place.child(f"gpu-{pool.name}"),
        )
        for pool in gpu_pools
    ]
    return node_pools


def build_gpu_software(
    place: Placement,
    handle: ClusterHandle,
    node_pools: Sequence[GpuNodePool | ManagedGpuNodePool],
    gpu_stack: GpuStackConfig,
    gpu_pools: Sequence[GpuPoolConfig],
) -> GpuStack:
    """The cluster-wide GPU stack, the smoke test `pulumi up` waits for, and the image pre-pull of the pools."""
    software = GpuStack(
        place.role("gpu-stack"),
        {"settings": gpu_stack, "pools": gpu_pools, "cluster": handle},
        place.child("gpu-stack"),
    )
    if gpu_stack.smoke_test:
        GpuSmokeTest(
            place.role("gpu-smoke-test"),
            {
                "namespace": software.namespace,
                # The Job's name hashes these: a change to the GPU settings reruns the test.
                "fingerprint": {
                    "gpuPools": [p.as_settings() for p in gpu_pools],
                    "gpuStack": gpu_stack.as_settings(),
                },
                "gpu_pools": gpu_pools,
                "depends_on": [*(p.agent_pool for p in node_pools), *software.releases],
                "cluster": handle,
            },
            place.child("gpu-smoke-test"),
        )
    if any(pool.cold_start.pre_pull_images for pool in gpu_pools):
        ImagePrepull(
            place.role("image-prepull"),
            {
                "namespace": software.namespace,
                "gpu_pools": gpu_pools,
                "cluster": handle,
                "depends_on": software.releases,
            },
            place.child("image-prepull"),
        )
    return software


def build_gpu_operations(
    place: Placement,
    handle: ClusterHandle,
    node_pools: Sequence[GpuNodePool | ManagedGpuNodePool],
    software: GpuStack,
    registry: Registry,
    metrics: MetricsPipeline,
    platform_namespaces: Sequence[str],
    gpu_pools: Sequence[GpuPoolConfig],
    gpu_stack: GpuStackConfig,
    gpu_health: GpuHealthConfig,
    monitoring: MonitoringConfig,
    base_name: str,
) -> GpuValidation | None:
    """AMD's GPU Operator where pools are AMD, GPU health (alerts and remediation, which never drains
    `platform_namespaces`), and the validation checks pools opt into (returned, or None)."""
    if any(pool.vendor == "amd" for pool in gpu_pools):
        _build_amd_gpu(place, handle, registry, metrics, gpu_pools, monitoring.dcgm_exporter.scrape_interval_seconds)
    # GPU health alerts (node conditions, DCGM counters) and, when enabled, NVSentinel remediation.
    GpuHealth(
        place.role("gpu-health"),
        {
            "settings": gpu_health,
            "gpu_pools": gpu_pools,
            "stack_mode": gpu_stack.mode,
            "operator_dcgm": gpu_stack.operator_dcgm,
            "cluster": handle,
            "action_group_id": metrics.action_group_id,
            "monitor_workspace_id": metrics.monitor_workspace_id,
            "cluster_id": handle.cluster_id,
            "alerts_enabled": monitoring.alerts.enabled,
            "base_name": base_name,
            "depends_on": software.releases,
            "platform_namespaces": platform_namespaces,
        },
        place.child("gpu-health"),
    )
    if not any(pool.validation.any for pool in gpu_pools):
        return None
    return GpuValidation(
        place.role("gpu-validation"),
        {
            "gpu_pools": gpu_pools,
            "cluster": handle,
            "depends_on": [*(p.agent_pool for p in node_pools), *software.releases],
        },
        place.child("gpu-validation"),
    )


def _build_amd_gpu(
    place: Placement,
    handle: ClusterHandle,
    registry: Registry,
    metrics: MetricsPipeline,
    gpu_pools: Sequence[GpuPoolConfig],
    scrape_interval_seconds: int,
) -> None:
    """AMD's GPU Operator for the AMD pools, its images through the registry, its exporter scraped with the DCGM
    exporter's interval."""
    AmdGpuStack(
        place.role("amd-gpu"),
        {
            "pools": gpu_pools,
            "cluster": handle,
            "registry_name": registry.registry.name,
            "registry_id": registry.registry_id,
            "registry_login_server": registry.login_server,
            "scrape_dependencies": metrics.scrape_dependencies,
            "scrape_interval_seconds": scrape_interval_seconds,
        },
        place.child("amd-gpu"),
    )
