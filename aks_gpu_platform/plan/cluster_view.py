"""The stack's cluster as the checks read it from a recording: namespaces, bound admission policies, Kueue queues and
flavors, and each node pool's nodes (labels, taints, allocatable) and the node the autoscaler imagines at zero."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aks_gpu_platform.config.catalog.gpu_sizes import gpu_sku
from aks_gpu_platform.config.catalog.vm_sizes import cpu_size
from aks_gpu_platform.config.gpu.scheduling import AUTOSCALER_RESOURCE_TAG_PREFIX
from aks_gpu_platform.testing import Recording, kubernetes_object

from .admission import BoundPolicy, bound_policies
from .manifests import GIB, parse_quantity

AGENT_POOL = "azure-native:containerservice:AgentPool"
GENERIC_RESOURCE = "azure-native:resources:Resource"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
SPOT_LABEL = ("kubernetes.azure.com/scalesetpriority", "spot")
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
DEFAULT_MAX_PODS = 110
# node-resource-reservations.md: kube-reserved CPU (millicores) by the host's cores; between two rows the smaller.
KUBE_RESERVED_CPU_MILLI = ((1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740))
EVICTION_MEMORY = 100 * 2**20
MIB = 2**20


@dataclass(frozen=True)
class Pool:
    """One node pool: the nodes AKS builds and the one the autoscaler imagines when the pool is at zero."""

    name: str
    vm_size: str
    labels: Mapping[str, str]
    taints: tuple[str, ...]
    min_count: int
    max_count: int
    autoscaled: bool
    allocatable: Mapping[str, Fraction]
    template_capacity: Mapping[str, Fraction]
    template_labels: Mapping[str, str]
    system: bool
    config_name: str
    """The pool's name in the stack config, which the plan and the docs use (`name` is its Azure agent pool's)."""

    @property
    def always_has_nodes(self) -> bool:
        return self.min_count > 0


def _kube_reserved_cpu(vcpus: int) -> Fraction:
    milli = next(m for cores, m in reversed(KUBE_RESERVED_CPU_MILLI) if cores <= max(vcpus, 1))
    return Fraction(milli, 1000)


def _tag_resources(tags: Mapping[str, str]) -> dict[str, Fraction]:
    """azure_template.go extractAllocatableResourcesFromScaleSet: `_` and `~2` in the tag's name read as `/`."""
    found: dict[str, Fraction] = {}
    for tag, value in tags.items():
        if tag.startswith(AUTOSCALER_RESOURCE_TAG_PREFIX) and tag != AUTOSCALER_RESOURCE_TAG_PREFIX:
            name = tag[len(AUTOSCALER_RESOURCE_TAG_PREFIX) :].replace("~2", "/").replace("_", "/")
            found[name] = parse_quantity(value, f"tag {tag}")
    return found


def pool_from_inputs(inputs: Mapping[str, Any]) -> Pool | None:
    name = str(inputs.get("agentPoolName") or inputs.get("name"))
    vm_size = str(inputs.get("vmSize"))
    gpu = gpu_sku(vm_size)
    cpu = cpu_size(vm_size)
    if gpu is None and cpu is None:
        return None
    vcpus = gpu.vcpus if gpu else cpu.vcpus if cpu else 0
    memory_gib = gpu.memory_gib if gpu else cpu.memory_gib if cpu else 0
    tags = _tag_resources(inputs.get("tags") or {})
    capacity: dict[str, Fraction] = {"cpu": Fraction(vcpus), "memory": Fraction(memory_gib * GIB), "pods": Fraction(0)}
    max_pods = int(inputs.get("maxPods") or DEFAULT_MAX_PODS)
    capacity["pods"] = Fraction(max_pods)
    if gpu is not None:
        capacity[f"{gpu.vendor}.com/gpu"] = Fraction(gpu.gpus_per_vm)
    capacity.update(tags)  # sharing (time-slicing, MIG) and RDMA resources the pool advertises
    reserved_memory = min(Fraction(20 * MIB * max_pods + 50 * MIB), capacity["memory"] / 4) + EVICTION_MEMORY
    allocatable = {
        **capacity,
        "cpu": capacity["cpu"] - _kube_reserved_cpu(vcpus),
        "memory": capacity["memory"] - reserved_memory,
    }
    labels: dict[str, str] = {
        **(inputs.get("nodeLabels") or {}),
        "kubernetes.azure.com/agentpool": name,
        "agentpool": name,
        "kubernetes.azure.com/mode": str(inputs.get("mode", "User")).lower(),
        "kubernetes.io/os": str(inputs.get("osType", "Linux")).lower(),
        "kubernetes.io/arch": gpu.arch if gpu else "amd64",
        "node.kubernetes.io/instance-type": vm_size,
    }
    template_labels = dict(labels)
    if gpu is not None:
        labels["kubernetes.azure.com/accelerator"] = gpu.vendor
    taints = list(inputs.get("nodeTaints") or [])
    if inputs.get("scaleSetPriority") == "Spot":
        labels[SPOT_LABEL[0]] = SPOT_LABEL[1]
        if SPOT_TAINT not in taints:
            taints.append(SPOT_TAINT)
    count = int(inputs.get("count") or 0)
    autoscaled = bool(inputs.get("enableAutoScaling"))
    return Pool(
        name=name,
        vm_size=vm_size,
        labels=labels,
        taints=tuple(taints),
        min_count=int(inputs.get("minCount") or 0) if autoscaled else count,
        max_count=int(inputs.get("maxCount") or 0) if autoscaled else count,
        autoscaled=autoscaled,
        allocatable=allocatable,
        template_capacity=capacity,
        template_labels=template_labels,
        system=str(inputs.get("mode")) == "System",
        # AgentPools are `<config name>` + 4 hex characters (components/cluster/agent_pools.py); inline ones keep it.
        config_name=str(
            (inputs.get("nodeLabels") or {}).get("gpu-pool") or (name[:-4] if "agentPoolName" in inputs else name)
        ),
    )


@dataclass
class Stack:
    """What the checks read of a stack's recording."""

    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    policies: list[BoundPolicy] = field(default_factory=list)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)
    cluster_queues: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    flavors: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    pools: list[Pool] = field(default_factory=list)


def stack_view(recording: Recording) -> Stack:
    stack = Stack()
    policies: list[Mapping[str, Any]] = []
    bindings: list[Mapping[str, Any]] = []
    for resource in recording.kubernetes_objects():
        obj = kubernetes_object(resource)
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        name = str(meta.get("name"))
        if kind == "Namespace":
            stack.namespaces[name] = {"kubernetes.io/metadata.name": name, **(meta.get("labels") or {})}
        elif kind == "ValidatingAdmissionPolicy":
            policies.append(obj)
        elif kind == "ValidatingAdmissionPolicyBinding":
            bindings.append(obj)
        elif kind == "LocalQueue":
            stack.local_queues[(str(meta.get("namespace")), name)] = str((obj.get("spec") or {}).get("clusterQueue"))
        elif kind == "ClusterQueue":
            stack.cluster_queues[name] = obj
        elif kind == "ResourceFlavor":
            stack.flavors[name] = obj
    stack.policies = bound_policies(policies, bindings)
    inline = [p for c in recording.of_type(MANAGED_CLUSTER) for p in c.inputs.get("agentPoolProfiles") or []]
    separate = [p.inputs for p in recording.of_type(AGENT_POOL)]
    generic = [
        {**(r.inputs.get("properties") or {}), "agentPoolName": r.inputs.get("resourceName")}
        for r in recording.of_type(GENERIC_RESOURCE)
        if r.inputs.get("resourceType") == "agentPools"
    ]
    stack.pools = [p for p in map(pool_from_inputs, [*inline, *separate, *generic]) if p is not None]
    return stack
