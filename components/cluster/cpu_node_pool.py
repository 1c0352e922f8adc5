"""CPU user pool for monitoring, log collection, API servers and preprocessing."""

from typing import Any

import pulumi
import pulumi_azure_native.containerservice as containerservice

from aks_gpu_platform.config.cluster.node_pools import CpuPoolConfig
from aks_gpu_platform.config.gpu.scheduling import cpu_node_selector

from .agent_pools import (
    PoolPlacementArgs,
    autoscaled_pool_args,
    autoscaled_pool_options,
    hashed_pool_name,
    immutable_pool_fields,
    placement_args,
)


class CpuNodePoolArgs(PoolPlacementArgs):
    settings: CpuPoolConfig
    """The `cpuPool` config section."""


class CpuNodePool(pulumi.ComponentResource):
    """An autoscaled user pool labelled `pool=cpu`; the autoscaler owns its node count."""

    pool_name: pulumi.Output[str]
    """Azure name of the pool: `cpuPool.name` + 4 hex chars of the fields Azure sets only at creation."""

    def __init__(self, name: str, args: CpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:CpuNodePool", name, None, opts)
        pool = args["settings"]
        encrypted = args.get("encryption_at_host", False)
        pool_args: dict[str, Any] = {
            **autoscaled_pool_args(pool, encrypted),
            "agent_pool_name": hashed_pool_name(pool.name, immutable_pool_fields(pool, encrypted)),
        }
        agent_pool = containerservice.AgentPool(
            f"{name}-pool",
            **placement_args(args),
            **pool_args,
            mode=containerservice.AgentPoolMode.USER,
            node_labels={**pool.labels, **cpu_node_selector()},
            opts=autoscaled_pool_options(self, args["tracks_versions"]),
        )
        self.pool_name = agent_pool.name
        self.register_outputs({"pool_name": self.pool_name})
