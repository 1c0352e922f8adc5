"""The resource group of a team's ClusterQueue: the resources it meters and each flavor's quota of them.

A team has one group, so every vendor's GPU resource is covered by every flavor: Kueue (v1beta2, v0.19.2) wants
each covered resource listed on each flavor of the group, and a pool of the other vendor lists it at zero.
"""

from collections.abc import Mapping
from typing import Any

from aks_gpu_platform.config.gpu.scheduling import GPU_RESOURCE
from aks_gpu_platform.config.training.section import TeamConfig, TeamQuotaConfig


def team_gpu_resources(team: TeamConfig, gpu_resources: Mapping[str, str]) -> list[str]:
    """The GPU resources the team's pools advertise (`nvidia.com/gpu`, `amd.com/gpu`), in first-quota order."""
    return list(dict.fromkeys(gpu_resources.get(q.pool, GPU_RESOURCE) for q in team.quotas))


def covered_resources(team: TeamConfig, gpu_resources: Mapping[str, str]) -> list[str]:
    """The team's metered resources: one quota group, so every vendor's GPU resource is covered by every flavor."""
    return [r for r in team.covered_resources if r != GPU_RESOURCE] + team_gpu_resources(team, gpu_resources)


def _quota_entry(resource: str, quota: TeamQuotaConfig, pool_gpu: str, gpu_names: set[str]) -> dict[str, Any]:
    """One covered resource's quota on the flavor of `quota.pool`, whose nodes advertise `pool_gpu`."""
    if resource == pool_gpu:
        entry: dict[str, Any] = {"name": resource, "nominalQuota": quota.gpus}
        if quota.borrowing_limit_gpus is not None:
            entry["borrowingLimit"] = quota.borrowing_limit_gpus
        if quota.lending_limit_gpus is not None:
            entry["lendingLimit"] = quota.lending_limit_gpus
        return entry
    if resource in gpu_names:
        # The other vendor's GPUs: this pool has none (Kueue wants every covered resource per flavor).
        return {"name": resource, "nominalQuota": 0}
    return {"name": resource, "nominalQuota": quota.cpu if resource == "cpu" else quota.memory}


def quota_flavors(team: TeamConfig, gpu_resources: Mapping[str, str]) -> list[dict[str, Any]]:
    """One flavor per quota, each listing every covered resource."""
    covered = covered_resources(team, gpu_resources)
    gpu_names = set(team_gpu_resources(team, gpu_resources))
    return [
        {
            "name": quota.pool,
            "resources": [
                _quota_entry(resource, quota, gpu_resources.get(quota.pool, GPU_RESOURCE), gpu_names)
                for resource in covered
            ],
        }
        for quota in team.quotas
    ]


def quota_group(team: TeamConfig, gpu_resources: Mapping[str, str]) -> dict[str, Any]:
    """The resource group when only what the team's quotas name is metered."""
    return {
        "coveredResources": covered_resources(team, gpu_resources),
        "flavors": quota_flavors(team, gpu_resources),
    }


def metered_quota_group(
    team: TeamConfig, gpu_resources: Mapping[str, str], cpu_flavor: str, cpu: str, memory: str
) -> dict[str, Any]:
    """The resource group when CPU and memory are metered: the CPU flavor first (no GPUs), then the GPU flavors.

    `team`'s quotas name CPU and memory on every GPU pool; `cpu` and `memory` are the CPU flavor's quota for a team
    that sets no `cpuJobs`.
    """
    gpus = team_gpu_resources(team, gpu_resources)
    cpu_jobs = team.cpu_jobs
    cpu_entries = {
        "name": cpu_flavor,
        "resources": [
            {"name": "cpu", "nominalQuota": cpu_jobs.cpu if cpu_jobs else cpu},
            {"name": "memory", "nominalQuota": cpu_jobs.memory if cpu_jobs else memory},
            *({"name": gpu, "nominalQuota": 0} for gpu in gpus),
        ],
    }
    return {
        "coveredResources": ["cpu", "memory", *gpus],
        "flavors": [cpu_entries, *quota_flavors(team, gpu_resources)],
    }
