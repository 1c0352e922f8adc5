"""GPU node pools: tainted `sku=gpu:NoSchedule`, labelled `pool=gpu`, autoscaled from zero.

Replacement instead of rejected updates: Azure cannot change a pool's VM size, zones, OS
disk, max pods, OS SKU, GPU driver mode, MIG profile, Spot priority, taints or encryption at
host in place. The
Azure pool name is the configured name plus a 4-character hash of exactly those fields, so a
change to any of them renames the pool, and Pulumi replaces it create-before-delete: the new
pool exists (and can scale up) before the old one is drained and deleted, so there is no
capacity gap. Changes Azure does apply in place (autoscale bounds, labels, Spot max price,
tags, upgrade settings) keep the name and update the pool.
"""

from collections.abc import Mapping
from typing import Any, NotRequired

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.catalog.gpu_sizes import MIG_PARTED_CONFIGS
from aks_gpu_platform.config.errors import ConfigError
from aks_gpu_platform.config.gpu.scheduling import (
    gpu_pool_node_labels,
    gpu_pool_taints,
    scale_from_zero_tags,
    sharing_node_labels,
    vendor_node_labels,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackMode
from aks_gpu_platform.config.training.section import gpus_per_node

from ..cluster.agent_pools import (
    PoolPlacementArgs,
    autoscaled_pool_args,
    autoscaled_pool_options,
    hashed_pool_name,
    immutable_pool_fields,
    placement_args,
)


class GpuNodePoolArgs(PoolPlacementArgs):
    settings: GpuPoolConfig
    """One entry of the `gpuPools` config section."""
    stack_mode: GpuStackMode
    """`gpuStack.mode`: devicePlugin keeps the AKS driver, gpuOperator skips it (driver None)."""
    extra_node_labels: NotRequired[Mapping[str, str]]
    """Labels other components need on GPU nodes from boot (e.g. remediation's `nvidia.com/gpu.present`)."""


# The GPU Operator's MIG manager applies the configuration this node label names. A MIG-capable
# node without it gets `all-disabled` from the operator (chart default migManager.config.default),
# which would undo the pool's migProfile: NVIDIA/gpu-operator v26.7.0
# controllers/nodelabeling_controller.go.
MIG_CONFIG_LABEL_KEY = "nvidia.com/mig.config"


def mig_config_labels(pool: GpuPoolConfig, mode: GpuStackMode) -> dict[str, str]:
    """Under the GPU Operator, the mig-parted configuration that partitions like the pool's migProfile."""
    if mode != "gpuOperator" or pool.mig_profile is None:
        return {}
    return {MIG_CONFIG_LABEL_KEY: MIG_PARTED_CONFIGS[pool.sku.gpu_model][pool.mig_profile]}


def gpu_driver(mode: GpuStackMode, vendor: str = "nvidia") -> containerservice.GPUDriver:
    """AKS installs the NVIDIA driver unless the GPU Operator brings its own; AMD pools must say None (AKS installs
    no AMD driver and requires the field: azure-aks-docs articles/aks/use-amd-gpus.md)."""
    if vendor == "amd" or mode == "gpuOperator":
        return containerservice.GPUDriver.NONE
    return containerservice.GPUDriver.INSTALL


def node_taints(pool: GpuPoolConfig) -> list[str]:
    """The GPU taint, the pool's extra taints and, on Spot pools, the taint AKS adds anyway."""
    return gpu_pool_taints(pool)


def immutable_fields(pool: GpuPoolConfig, mode: GpuStackMode, encryption_at_host: bool = False) -> dict[str, Any]:
    """The pool settings Azure cannot update in place, GPU driver, MIG, priority and taints included."""
    return {
        **immutable_pool_fields(pool, encryption_at_host),
        "gpuDriver": gpu_driver(mode, pool.vendor).value,
        "migProfile": pool.mig_profile,
        "priority": pool.priority,
        "evictionPolicy": pool.spot_settings.eviction_policy if pool.priority == "Spot" else None,
        "taints": node_taints(pool),
    }


def azure_pool_name(pool: GpuPoolConfig, mode: GpuStackMode, encryption_at_host: bool = False) -> str:
    """Configured name + 4 hex chars of the immutable fields (at most 12 characters)."""
    return hashed_pool_name(pool.name, immutable_fields(pool, mode, encryption_at_host))


class GpuNodePool(pulumi.ComponentResource):
    """One autoscaled GPU user pool; the autoscaler owns its node count."""

    pool_name: pulumi.Output[str]
    """Azure name of the pool (changes when an immutable field changes)."""
    agent_pool: containerservice.AgentPool
    """The AgentPool, for depends_on of workloads that need GPU nodes."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        if args["stack_mode"] == "aksManaged":
            # AKS runs its device plugin only on ManagedGpuNodePool pools, and that mode installs no other one.
            raise ConfigError(
                [
                    "stack_mode: got 'aksManaged'; AKS-managed GPU pools are ManagedGpuNodePool "
                    "(docs/gpu-operations.md): use devicePlugin or gpuOperator here"
                ],
                source="GpuNodePool args",
            )
        super().__init__("aks-gpu-platform:index:GpuNodePool", name, None, opts)
        pool = args["settings"]
        mode = args["stack_mode"]
        spot = pool.priority == "Spot"
        encrypted = args.get("encryption_at_host", False)
        pool_args: dict[str, Any] = {
            **autoscaled_pool_args(pool, encrypted),
            "agent_pool_name": azure_pool_name(pool, mode, encrypted),
        }
        placement = placement_args(args)
        # AKS copies pool tags to the scale set, where the cluster autoscaler reads what a node at zero offers.
        placement["tags"] = {**placement["tags"], **scale_from_zero_tags(pool, gpus_per_node(pool))}
        self.agent_pool = containerservice.AgentPool(
            f"{name}-pool",
            **placement,
            **pool_args,
            mode=containerservice.AgentPoolMode.USER,
            node_labels={
                **pool.labels,
                **gpu_pool_node_labels(pool.name, pool.sku.gpu_model),
                **vendor_node_labels(pool),
                **mig_config_labels(pool, mode),
                **sharing_node_labels(pool, mode),
                **args.get("extra_node_labels", {}),
            },
            node_taints=node_taints(pool),
            gpu_profile={"driver": gpu_driver(mode, pool.vendor)},
            gpu_instance_profile=pool.mig_profile,
            scale_set_priority=containerservice.ScaleSetPriority.SPOT if spot else None,
            scale_set_eviction_policy=pool.spot_settings.eviction_policy if spot else None,
            spot_max_price=pool.spot_settings.max_price if spot else None,
            # count is owned by the autoscaler (and the version by auto-upgrade): ignored to prevent drift.
            opts=autoscaled_pool_options(self, args["tracks_versions"]),
        )
        self.pool_name = self.agent_pool.name
        self.register_outputs({"pool_name": self.pool_name})
