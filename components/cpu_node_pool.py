"""CPU user pool for monitoring, log collection, API servers and preprocessing."""

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.loader import validate_section
from aks_gpu_platform.config.node_pools import CpuPoolConfig

from .agent_pools import autoscaled_pool_args, autoscaled_pool_options, hashed_pool_name, immutable_pool_fields
from .gpu_scheduling import cpu_node_selector


class CpuNodePoolArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster."""
    cluster_name: pulumi.Input[str]
    """AKS cluster the pool joins."""
    nodes_subnet_id: pulumi.Input[str]
    """Subnet of the nodes."""
    settings: Mapping[str, Any]
    """The `cpuPool` config section."""
    kubernetes_version: pulumi.Input[str]
    """Orchestrator version at creation."""
    tracks_versions: bool
    """True when an auto-upgrade channel moves versions (the pool then ignores its version)."""
    upgrade_settings: NotRequired[containerservice.AgentPoolUpgradeSettingsArgsDict]
    """Surge settings."""
    encryption_at_host: NotRequired[bool]
    """`security.encryptionAtHost`: encrypt temp disks and disk caches on the VM host (here False unless set)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""


class CpuNodePool(pulumi.ComponentResource):
    """An autoscaled user pool labelled `pool=cpu`; the autoscaler owns its node count."""

    pool_name: pulumi.Output[str]
    """Azure name of the pool: `cpuPool.name` + 4 hex chars of the fields Azure sets only at creation."""

    def __init__(self, name: str, args: CpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:CpuNodePool", name, None, opts)
        pool = validate_section(CpuPoolConfig, args["settings"], source="CpuNodePool settings")
        encrypted = args.get("encryption_at_host", False)
        pool_args: dict[str, Any] = {
            **autoscaled_pool_args(pool, encrypted),
            "agent_pool_name": hashed_pool_name(pool.name, immutable_pool_fields(pool, encrypted)),
        }
        agent_pool = containerservice.AgentPool(
            f"{name}-pool",
            resource_group_name=args["resource_group_name"],
            resource_name_=args["cluster_name"],
            **pool_args,
            mode=containerservice.AgentPoolMode.USER,
            node_labels={**pool.labels, **cpu_node_selector()},
            vnet_subnet_id=args["nodes_subnet_id"],
            orchestrator_version=args["kubernetes_version"],
            upgrade_settings=args.get("upgrade_settings"),
            tags=dict(args.get("tags", {})),
            opts=autoscaled_pool_options(self, args["tracks_versions"]),
        )
        self.pool_name = agent_pool.name
        self.register_outputs({"pool_name": self.pool_name})
