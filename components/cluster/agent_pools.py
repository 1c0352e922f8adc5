"""What every separately managed, autoscaled AgentPool shares."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.cluster.node_pools import AutoscaledPoolConfig
from aks_gpu_platform.config.upgrade.section import PoolUpgradeConfig

from ..shared.context import ClusterHandle
from ..shared.scan_exceptions import arm_scan_exception

arm_scan_exception(
    "azure-native:containerservice:AgentPool",
    "CKV_AZURE_227",
    "security.encryptionAtHost is off in this stack (dev: it needs the EncryptionAtHost feature registered on the "
    "subscription first); prod turns it on for every pool",
    when=lambda inputs: not inputs.get("enableEncryptionAtHost"),
)

# The cluster autoscaler owns the node count; re-sending `count` makes Azure reject the update.
AUTOSCALED_POOL_IGNORED_FIELDS = ["count"]
# Azure moves the pool's version when an auto-upgrade channel is on; re-sending it is a downgrade.
VERSION_TRACKED_FIELDS = ["orchestratorVersion"]


def immutable_pool_fields(pool: AutoscaledPoolConfig, encryption_at_host: bool) -> dict[str, Any]:
    """Settings Azure sets only when a pool is created (host encryption among them)."""
    return {
        "vmSize": pool.vm_size,
        "zones": sorted(pool.zones),
        "osSku": pool.os_sku,
        "osDiskSizeGb": pool.os_disk_size_gb,
        "osDiskType": pool.os_disk_type,
        "maxPods": pool.max_pods,
        # Only when on: pools created before the switch existed keep their names.
        **({"encryptionAtHost": True} if encryption_at_host else {}),
    }


def hashed_pool_name(name: str, immutable: Mapping[str, Any]) -> str:
    """`name` + 4 hex chars of the immutable fields: a change makes a new pool (created before the old
    one is deleted) instead of an update Azure rejects."""
    digest = hashlib.sha256(json.dumps(immutable, sort_keys=True).encode()).hexdigest()
    return f"{name}{digest[:4]}"


def autoscaled_pool_args(pool: AutoscaledPoolConfig, encryption_at_host: bool) -> dict[str, Any]:
    """AgentPool arguments shared by every pool (autoscaling, zones, OS, disk, host encryption)."""
    return {
        "agent_pool_name": pool.name,
        "vm_size": pool.vm_size,
        "availability_zones": list(pool.zones),
        "enable_auto_scaling": True,
        "min_count": pool.min_count,
        "max_count": pool.max_count,
        "count": pool.min_count,
        "os_type": containerservice.OSType.LINUX,
        "os_sku": pool.os_sku,
        "os_disk_size_gb": pool.os_disk_size_gb,
        "os_disk_type": pool.os_disk_type,
        "enable_encryption_at_host": encryption_at_host,
        "max_pods": pool.max_pods,
        "type": containerservice.AgentPoolType.VIRTUAL_MACHINE_SCALE_SETS,
    }


def autoscaled_pool_options(
    parent: pulumi.Resource, tracks_versions: bool, extra_ignored: list[str] | None = None
) -> pulumi.ResourceOptions:
    ignored = (
        AUTOSCALED_POOL_IGNORED_FIELDS + (VERSION_TRACKED_FIELDS if tracks_versions else []) + (extra_ignored or [])
    )
    # azure-native asks for delete-before-replace on every replacement of an explicitly named resource
    # (provider/pkg/provider/provider.go, Diff); a hashed pool name differs whenever a replacement is due,
    # so the new pool can exist first and the old one is drained and deleted after: no capacity gap.
    return pulumi.ResourceOptions(parent=parent, ignore_changes=ignored, delete_before_replace=False)


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


class PoolPlacementArgs(TypedDict):
    """Where a separately managed pool joins: shared by the CPU and GPU pools."""

    cluster: ClusterHandle
    """The cluster the pool joins (resource group, name, tags)."""
    nodes_subnet_id: pulumi.Input[str]
    """Subnet of the nodes."""
    kubernetes_version: pulumi.Input[str]
    """Orchestrator version at creation."""
    tracks_versions: bool
    """True when an auto-upgrade channel moves versions (the pool then ignores its version)."""
    upgrade: NotRequired[PoolUpgradeConfig]
    """Surge / drain settings for node upgrades (AKS defaults when absent)."""
    encryption_at_host: NotRequired[bool]
    """`security.encryptionAtHost`: encrypt temp disks and disk caches on the VM host."""


def placement_args(args: PoolPlacementArgs) -> dict[str, Any]:
    """The AgentPool arguments that say where the pool joins and how it upgrades."""
    handle = args["cluster"]
    upgrade = args.get("upgrade")
    return {
        "resource_group_name": handle.resource_group_name,
        "resource_name_": handle.cluster_name,
        "vnet_subnet_id": args["nodes_subnet_id"],
        "orchestrator_version": args["kubernetes_version"],
        "upgrade_settings": pool_upgrade_settings(upgrade) if upgrade is not None else None,
        "tags": dict(handle.tags),
    }
