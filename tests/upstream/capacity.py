"""Capacity on a stack: can a job's pod set be placed beside what the stack keeps up on its pool?

Kueue admits on quota (tests/training/test_example_training_job.py `admit`, Kueue v0.19.2 flavor assignment); the
cluster autoscaler adds nodes up to the pool's maxCount, judging each from the pool's template node
(tests/upstream/autoscaler_template.py, cluster-autoscaler-1.36.1); the best-effort-atomic ProvisioningRequest asks
for every node of the pod set at once, so a pod set that cannot all fit in the pool at maxCount is never
provisioned. What the stack keeps up on a pool is every workload with a GPU request and a floor of
replicas: a Deployment's `replicas`, or the `minReplicaCount` of the KEDA ScaledObject that owns it
(KEDA v2 scaledobject_types.go: minReplicaCount defaults to 0). Warm-standby nodes are part of maxCount and
hold no pods, so they take nothing from a job.

Packing is first-fit over nodes of the template's allocatable (cpu, memory and GPUs; the autoscaler's
template has allocatable = capacity, so DaemonSet overhead is not subtracted: the check errs on the side of
fitting for cpu and memory, never for GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from aks_gpu_platform.testing import Recording, kubernetes_object
from tests.upstream.autoscaler_template import GPU_RESOURCE, template_node
from tests.upstream.kube_scheduler import pod_fits_node
from tests.upstream.scheduling import AGENT_POOL, pod_requests

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@dataclass(frozen=True)
class Pinned:
    """Pods of one workload the stack keeps running whatever the load."""

    source: str
    spec: Mapping[str, Any]
    replicas: int


def pinned_gpu_workloads(recording: Recording) -> list[Pinned]:
    scaled = {
        (o["metadata"].get("namespace"), o["spec"]["scaleTargetRef"]["name"]): int(o["spec"].get("minReplicaCount", 0))
        for o in map(kubernetes_object, recording.of_type(SCALED_OBJECT))
    }
    found: list[Pinned] = []
    for deployment in map(kubernetes_object, recording.of_type(DEPLOYMENT)):
        spec = deployment["spec"]["template"]["spec"]
        if not pod_requests(spec).get(GPU_RESOURCE):
            continue
        key = (deployment["metadata"].get("namespace"), deployment["metadata"]["name"])
        replicas = scaled[key] if key in scaled else int(deployment["spec"].get("replicas", 1))
        if replicas:
            found.append(Pinned(f"{key[0]}/{key[1]}", spec, replicas))
    return found


@dataclass
class Pool:
    name: str
    labels: Mapping[str, str]
    taints: tuple[str, ...]
    allocatable: Mapping[str, Fraction]
    max_count: int
    nodes: list[dict[str, Fraction]]
    """What is already placed on each node that exists."""

    def place(self, spec: Mapping[str, Any]) -> bool:
        """Put one pod on the first node with room, adding a node while under maxCount; False if none has room."""
        if not pod_fits_node(spec, self.labels, self.taints):
            return False
        need = pod_requests(spec)
        for used in self.nodes:
            if all(used.get(r, Fraction(0)) + q <= self.allocatable.get(r, Fraction(0)) for r, q in need.items()):
                for r, q in need.items():
                    used[r] = used.get(r, Fraction(0)) + q
                return True
        if len(self.nodes) < self.max_count and all(q <= self.allocatable.get(r, Fraction(0)) for r, q in need.items()):
            self.nodes.append(dict(need))
            return True
        return False


def gpu_pools(recording: Recording) -> dict[str, Pool]:
    """Every GPU pool by its configured name (the `gpu-pool` label Kueue's flavors select), empty."""
    pools: dict[str, Pool] = {}
    for resource in recording.of_type(AGENT_POOL):
        node = template_node(resource.inputs)
        if node.allocatable.get(GPU_RESOURCE) and "gpu-pool" in node.labels:
            max_count = int(resource.inputs.get("maxCount") or resource.inputs.get("count") or 0)
            pools[node.labels["gpu-pool"]] = Pool(node.pool, node.labels, node.taints, node.allocatable, max_count, [])
    return pools


def placement_problems(recording: Recording, flavor: str, pod: Mapping[str, Any], count: int) -> list[str]:
    """Why `count` pods of `pod` (already given the flavor's labels and tolerations) cannot all be placed on the
    flavor's pool beside the stack's pinned GPU workloads; empty when they can."""
    pools = gpu_pools(recording)
    cpu_pools = {**pools}
    for resource in recording.of_type(AGENT_POOL):  # the CPU pool's flavor selects `pool: <its name>`
        node = template_node(resource.inputs)
        if not node.allocatable.get(GPU_RESOURCE) and node.labels.get("pool") == flavor:
            max_count = int(resource.inputs.get("maxCount") or resource.inputs.get("count") or 0)
            cpu_pools[flavor] = Pool(node.pool, node.labels, node.taints, node.allocatable, max_count, [])
    problems: list[str] = []
    for pinned in pinned_gpu_workloads(recording):
        for _ in range(pinned.replicas):
            if not any(p.place(pinned.spec) for p in pools.values()):
                problems.append(f"{pinned.source}: a pinned replica fits no GPU pool")
    pool = cpu_pools[flavor]
    taken = sum(int(n.get(GPU_RESOURCE, 0)) for n in pool.nodes)
    placed = sum(pool.place(pod) for _ in range(count))
    if placed < count:
        problems.append(
            f"pool {flavor} (maxCount {pool.max_count}, {pool.allocatable.get(GPU_RESOURCE, 0)} GPU(s) per node) holds "
            f"{placed} of the job's {count} pods: the stack keeps {taken} GPU(s) there"
        )
    return problems


CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def nominal_gpus(recording: Recording) -> dict[str, int]:
    """Flavor (pool) -> the GPUs every team's ClusterQueue guarantees there (nominal quota, summed)."""
    found: dict[str, int] = {}
    for queue in map(kubernetes_object, recording.of_type(CLUSTER_QUEUE)):
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                gpus = sum(int(r["nominalQuota"]) for r in flavor["resources"] if r["name"] == GPU_RESOURCE)
                found[flavor["name"]] = found.get(flavor["name"], 0) + gpus
    return found


def quotas_a_pinned_pod_may_take(recording: Recording) -> list[str]:
    """Pools whose team quotas a kept-up pod may eat into: the scheduler and the autoscaler may put every pinned
    replica on any pool its pod spec selects, so a pool's GPUs must hold its nominal quotas plus all of them."""
    problems: list[str] = []
    pinned = pinned_gpu_workloads(recording)
    for name, pool in gpu_pools(recording).items():
        nominal = nominal_gpus(recording).get(name, 0)
        if not nominal:
            continue
        landing = [p for p in pinned if pod_fits_node(p.spec, pool.labels, pool.taints)]
        may_take = sum(p.replicas * int(pod_requests(p.spec).get(GPU_RESOURCE, 0)) for p in landing)
        capacity = pool.max_count * int(pool.allocatable[GPU_RESOURCE])
        if nominal + may_take > capacity:
            sources = ", ".join(p.source for p in landing)
            problems.append(
                f"pool {name} holds {capacity} GPUs; teams are guaranteed {nominal} and {sources} may keep "
                f"{may_take} up there"
            )
    return problems
