"""AKS-managed GPU pools (`gpuStack.mode: aksManaged`).

The pool. `gpuProfile.nvidia.managementMode: Managed` makes AKS install the driver, the NVIDIA device plugin and
DCGM with its exporter, and run GPU health checks (MicrosoftDocs/azure-aks-docs articles/aks/aks-managed-gpu-nodes.md,
doc date 2026-07-02). pulumi-azure-native 3.29 pins the AgentPool API at 2025-09-01 and none of its
containerservice types has `nvidia` (`GPUProfileArgs` has `driver` only), and azure-native v3 dropped the versioned
submodules. A local SDK (`pulumi package add azure-native containerservice <version>`) needs the Pulumi CLI and
commits generated code. So these pools are the same AgentPool created through the generic ARM resource at an API
version that has the field:
- 2026-08-01 (stable): first stable version with `gpuProfile.nvidia.managementMode` (azure-mgmt-containerservice
  41.8.0 changelog, 2026-10-19: "Model GPUProfile added property nvidia"); it has no `migStrategy`.
- 2026-08-02-preview, for MIG pools only: `nvidia.migStrategy` exists in preview versions alone (41.9.0b1,
  2026-10-23). The platform uses the Single strategy, so MIG slices stay `nvidia.com/gpu` as in the other modes.
  That spec (Azure/azure-rest-api-specs aks/preview/2026-08-02-preview/managedClusters.json, MigStrategy and
  NvidiaGPUProfile, commit 0227e50) takes the Single partition from `nvidia.migProfiles`, exactly one element, and
  makes `migProfiles` mutually exclusive with the top-level `gpuInstanceProfile`; its example
  AgentPoolsCreate_SingleMIG.json sends `migProfiles` alone.
The body carries the same name hashing, labels, taints, zones, OS and upgrade settings as `gpu_node_pool.py`.

Fixed size: "Cluster autoscaler isn't supported on managed GPU node pools during preview" (same page), so the pool
is created with `enableAutoScaling: false` and `count = maxCount`; config requires minCount = maxCount.

Metrics: components/monitoring/aks_exporter.py scrapes the exporter AKS runs on these nodes.
"""

from collections.abc import Mapping
from enum import Enum
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.resources as resources

from aks_gpu_platform.config.gpu.scheduling import gpu_pool_node_labels
from aks_gpu_platform.config.gpu.section import GpuPoolConfig

from ..cluster.agent_pools import VERSION_TRACKED_FIELDS, hashed_pool_name
from ..monitoring.aks_exporter import (  # the names this module had
    AMA_NAMESPACE as AMA_NAMESPACE,
)
from ..monitoring.aks_exporter import (
    AMA_SETTINGS_CONFIGMAP as AMA_SETTINGS_CONFIGMAP,
)
from ..monitoring.aks_exporter import (
    ANCHOR_LABELS as ANCHOR_LABELS,
)
from ..monitoring.aks_exporter import (
    ANCHOR_NAME as ANCHOR_NAME,
)
from ..monitoring.aks_exporter import (
    MANAGED_EXPORTER_NODE_LABEL as MANAGED_EXPORTER_NODE_LABEL,
)
from ..monitoring.aks_exporter import (
    MANAGED_EXPORTER_PORT as MANAGED_EXPORTER_PORT,
)
from ..monitoring.aks_exporter import (
    PAUSE_IMAGE as PAUSE_IMAGE,
)
from ..monitoring.aks_exporter import (
    managed_exporter_anchor as managed_exporter_anchor,
)
from ..shared.context import ClusterHandle
from .node_pool import immutable_fields, node_taints

MANAGED_GPU_API_VERSION = "2026-08-01"
MANAGED_MIG_API_VERSION = "2026-08-02-preview"


def mig_strategy(pool: GpuPoolConfig) -> str | None:
    """`Single` on MIG pools (slices stay `nvidia.com/gpu`, as the quotas and the device plugin mode expect)."""
    return "Single" if pool.mig_profile is not None else None


def managed_api_version(pool: GpuPoolConfig) -> str:
    return MANAGED_MIG_API_VERSION if pool.mig_profile is not None else MANAGED_GPU_API_VERSION


def managed_gpu_profile(pool: GpuPoolConfig) -> dict[str, Any]:
    """`gpuProfile`: AKS's driver plus the full managed stack (Managed is set explicitly: the API default is
    Unmanaged, driver only)."""
    nvidia: dict[str, Any] = {"managementMode": "Managed"}
    strategy = mig_strategy(pool)
    if strategy is not None:
        nvidia.update({"migStrategy": strategy, "migProfiles": [pool.mig_profile]})
    return {"driver": "Install", "nvidia": nvidia}


def managed_pool_name(pool: GpuPoolConfig, encryption_at_host: bool = False) -> str:
    """Configured name + 4 hex chars of the immutable fields, management mode included: moving a pool between
    modes makes a new pool (AKS has no in-place move to or from managed GPU)."""
    immutable = {
        **immutable_fields(pool, "devicePlugin", encryption_at_host),
        "gpuManagementMode": "Managed",
        "migStrategy": mig_strategy(pool),
    }
    return hashed_pool_name(pool.name, immutable)


_UPGRADE_KEYS = {
    "max_surge": "maxSurge",
    "max_unavailable": "maxUnavailable",
    "drain_timeout_in_minutes": "drainTimeoutInMinutes",
    "node_soak_duration_in_minutes": "nodeSoakDurationInMinutes",
    "undrainable_node_behavior": "undrainableNodeBehavior",
}


def arm_upgrade_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's upgrade-settings dict in the ARM body's spelling."""
    return {_UPGRADE_KEYS[key]: (value.value if isinstance(value, Enum) else value) for key, value in settings.items()}


def managed_pool_properties(
    pool: GpuPoolConfig,
    nodes_subnet_id: pulumi.Input[str],
    kubernetes_version: pulumi.Input[str],
    encryption_at_host: bool,
    upgrade_settings: Mapping[str, Any] | None,
    tags: Mapping[str, str],
    extra_node_labels: Mapping[str, str],
) -> dict[str, Any]:
    """The agentPools body (ARM property names, as the AgentPool resource sends them)."""
    spot = pool.priority == "Spot"
    properties: dict[str, Any] = {
        "mode": "User",
        "type": "VirtualMachineScaleSets",
        "vmSize": pool.vm_size,
        "availabilityZones": list(pool.zones),
        # Fixed size during the preview: no autoscaler, so the node count is the config's.
        "enableAutoScaling": False,
        "count": pool.max_count,
        "osType": "Linux",
        "osSKU": pool.os_sku,
        "osDiskSizeGB": pool.os_disk_size_gb,
        "osDiskType": pool.os_disk_type,
        "enableEncryptionAtHost": encryption_at_host,
        "maxPods": pool.max_pods,
        "nodeLabels": {**pool.labels, **gpu_pool_node_labels(pool.name, pool.sku.gpu_model), **extra_node_labels},
        "nodeTaints": node_taints(pool),
        "gpuProfile": managed_gpu_profile(pool),
        "vnetSubnetID": nodes_subnet_id,
        "orchestratorVersion": kubernetes_version,
        "tags": dict(tags),
    }
    if spot:
        properties.update(
            {
                "scaleSetPriority": "Spot",
                "scaleSetEvictionPolicy": pool.spot_settings.eviction_policy,
                "spotMaxPrice": pool.spot_settings.max_price,
            }
        )
    if upgrade_settings:
        properties["upgradeSettings"] = arm_upgrade_settings(upgrade_settings)
    return properties


class ManagedGpuNodePoolArgs(TypedDict):
    pool: GpuPoolConfig
    """The pool's validated config (`gpuPools[i]`)."""
    cluster: ClusterHandle
    """The cluster the pool joins."""
    nodes_subnet_id: pulumi.Input[str]
    """Subnet of the nodes."""
    kubernetes_version: pulumi.Input[str]
    """Orchestrator version at creation."""
    tracks_versions: bool
    """True when an auto-upgrade channel moves versions (the pool then ignores its version)."""
    upgrade_settings: NotRequired[Mapping[str, Any]]
    """Surge / drain settings for node upgrades (the SDK's AgentPoolUpgradeSettings dict)."""
    encryption_at_host: NotRequired[bool]
    """`security.encryptionAtHost`."""
    extra_node_labels: NotRequired[Mapping[str, str]]
    """Labels other components need on GPU nodes from boot (e.g. remediation's `nvidia.com/gpu.present`)."""


class ManagedGpuNodePool(pulumi.ComponentResource):
    """One fixed-size GPU pool whose GPU software AKS installs and manages."""

    pool_name: pulumi.Output[str]
    """Azure name of the pool (changes when an immutable field changes)."""
    agent_pool: pulumi.CustomResource
    """The agentPools resource, for depends_on of workloads that need GPU nodes."""

    def __init__(self, name: str, args: ManagedGpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:ManagedGpuNodePool", name, None, opts)
        pool, handle = args["pool"], args["cluster"]
        encrypted = args.get("encryption_at_host", False)
        azure_name = managed_pool_name(pool, encrypted)
        ignored = [f"properties.{field}" for field in VERSION_TRACKED_FIELDS] if args["tracks_versions"] else []
        self.agent_pool = resources.Resource(
            f"{name}-pool",
            resource_group_name=handle.resource_group_name,
            resource_provider_namespace="Microsoft.ContainerService",
            parent_resource_path=pulumi.Output.concat("managedClusters/", handle.cluster_name),
            resource_type="agentPools",
            resource_name_=azure_name,
            api_version=managed_api_version(pool),
            properties=managed_pool_properties(
                pool,
                args["nodes_subnet_id"],
                args["kubernetes_version"],
                encrypted,
                args.get("upgrade_settings"),
                handle.tags,
                args.get("extra_node_labels", {}),
            ),
            # Auto-upgrade moves the version; re-sending the pinned one would be a downgrade. azure-native asks
            # for delete-before-replace on a resource whose name inputs change (as for the AgentPool, see
            # agent_pools.autoscaled_pool_options); the hashed name differs on every replacement, so the new pool
            # is created before the old one is drained and deleted.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[handle.cluster], ignore_changes=ignored, delete_before_replace=False
            ),
        )
        self.pool_name = pulumi.Output.from_input(azure_name)
        self.register_outputs({"pool_name": self.pool_name})
