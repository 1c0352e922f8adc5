"""The GPU scheduling rules, defined once: how GPU nodes are marked and how pods reach them.

Every object that must run on GPU nodes (device plugin, GPU Operator operands, RDMA plugin, DCGM
exporter, Lustre CSI node, smoke test, samples) takes its node selector and tolerations from here,
and its tolerations cover every taint of every configured GPU pool (`gpu_tolerations(pools)`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Type-only: the policy pack imports this module in a virtualenv without pydantic.
    from .section import GpuPoolConfig

GPU_POOL_LABEL_KEY = "pool"
GPU_POOL_LABEL_VALUE = "gpu"
GPU_POOL_NAME_LABEL_KEY = "gpu-pool"
GPU_MODEL_LABEL_KEY = "gpu-model"
GPU_TAINT_KEY = "sku"
GPU_TAINT_VALUE = "gpu"
GPU_TAINT_EFFECT = "NoSchedule"
GPU_TAINT = f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:{GPU_TAINT_EFFECT}"
GPU_RESOURCE = "nvidia.com/gpu"
AMD_GPU_RESOURCE = "amd.com/gpu"
# The extended resource each vendor's device plugin advertises, one per whole GPU: NVIDIA/k8s-device-plugin and
# ROCm/k8s-device-plugin v1.31.0.10 (internal/pkg/plugin/plugin.go GetResourceNamespace "amd.com" + resource "gpu",
# cmd/k8s-device-plugin/main.go), the name AKS's use-amd-gpus.md shows under a node's capacity.
GPU_RESOURCES: dict[str, str] = {"nvidia": GPU_RESOURCE, "amd": AMD_GPU_RESOURCE}
DEVICE_PLUGIN_CONFIG_LABEL_KEY = "nvidia.com/device-plugin.config"
MPS_CAPABLE_LABEL_KEY = "nvidia.com/mps.capable"

CPU_POOL_LABEL_VALUE = "cpu"
# On AMD pools only (NVIDIA pools keep their labels unchanged): what AMD's GPU Operator selects its nodes by. The
# second is the default selector of its chart (ROCm/gpu-operator v1.5.1 helm-charts-k8s/values.yaml), which a Helm
# map merge keeps, normally written by the chart's NFD rule; set through the pool, it holds from boot without NFD.
AMD_VENDOR_LABEL = ("gpu-vendor", "amd")
AMD_NFD_LABEL = ("feature.node.kubernetes.io/amd-gpu", "true")

# The RDMA shared device plugin's resource on InfiniBand nodes (NicClusterPolicy resourcePrefix/resourceName),
# what the NCCL probe and training ranks request. The name part allows [a-zA-Z0-9_]
# (Mellanox/k8s-rdma-shared-dev-plugin pkg/resources/resources_manager.go validResourceName), but the cluster
# autoscaler reads `_` in a resource tag as `/` (see autoscaler_resource_tag): no `_`, or pools at zero never
# advertise it and never scale up.
RDMA_RESOURCE_PREFIX = "rdma"
RDMA_RESOURCE_NAME = "ib"
RDMA_RESOURCE = f"{RDMA_RESOURCE_PREFIX}/{RDMA_RESOURCE_NAME}"
# The plugin's rdmaHcaMax: pods that can share one node's RDMA devices, i.e. what a node advertises.
RDMA_DEVICES_PER_NODE = 63

# kubernetes/autoscaler cluster-autoscaler-1.36.1, cloudprovider/azure/azure_util.go nodeResourcesTagName: at zero
# nodes a scale set's template offers cpu, memory and nvidia.com/gpu from its SKU, plus one extended resource per
# tag with this prefix (azure_template.go extractAllocatableResourcesFromScaleSet). AKS copies AgentPool tags onto
# the pool's scale set (azure-aks-docs articles/aks/use-tags.md, "Add tags to node pools").
AUTOSCALER_RESOURCE_TAG_PREFIX = "k8s.io_cluster-autoscaler_node-template_resources_"

# AKS puts this taint (and the label scalesetpriority=spot) on every Spot pool's nodes, whether or not the
# pool's nodeTaints name it (https://learn.microsoft.com/azure/aks/spot-node-pool, as of 2026-08).
SPOT_TAINT_KEY = "kubernetes.azure.com/scalesetpriority"
SPOT_TAINT = f"{SPOT_TAINT_KEY}=spot:NoSchedule"


def gpu_node_selector() -> dict[str, str]:
    """Selects every GPU node, in any GPU pool (the design notes' `pool: gpu`)."""
    return {GPU_POOL_LABEL_KEY: GPU_POOL_LABEL_VALUE}


def gpu_pool_taints(pool: GpuPoolConfig) -> list[str]:
    """The taints of a GPU pool's nodes: the GPU taint, the pool's extra taints and, on Spot pools, AKS's."""
    return [GPU_TAINT, *pool.taints, *([SPOT_TAINT] if pool.priority == "Spot" else [])]


def toleration_of(taint: str) -> dict[str, str]:
    """The toleration that matches exactly this `key=value:Effect` taint."""
    parsed = parse_taint(taint)
    return {"key": parsed["key"], "operator": "Equal", "value": parsed["value"], "effect": parsed["effect"]}


def gpu_tolerations(pools: Iterable[GpuPoolConfig] = ()) -> list[dict[str, str]]:
    """Tolerates every taint any of `pools` carries: the GPU taint always, Spot's and extra taints where configured.

    Pass every configured GPU pool: a workload that must run on GPU nodes but misses one pool's taint
    never lands there (no `nvidia.com/gpu`, no metrics, no Lustre mount on that pool).
    """
    taints = dict.fromkeys([GPU_TAINT, *(taint for pool in pools for taint in gpu_pool_taints(pool))])
    return [toleration_of(taint) for taint in taints]


def gpu_pod_scheduling(pools: Iterable[GpuPoolConfig] = ()) -> dict[str, Any]:
    """Pod-spec fragment (`nodeSelector` + `tolerations`) that puts a pod on any node of the GPU pools."""
    return {"nodeSelector": gpu_node_selector(), "tolerations": gpu_tolerations(pools)}


def vendor_pool_names(pools: Iterable[GpuPoolConfig], vendor: str) -> list[str] | None:
    """Names of the pools with `vendor`'s GPUs, or None when every pool has them (no restriction needed)."""
    pools = list(pools)
    names = [p.name for p in pools if p.sku.vendor == vendor]
    return None if len(names) == len(pools) else names


def vendor_pod_scheduling(pools: Iterable[GpuPoolConfig], vendor: str) -> dict[str, Any]:
    """`gpu_pod_scheduling` for a node agent that only works on `vendor`'s GPUs (a device plugin or metrics
    exporter on another vendor's GPU crash-loops): where pools of other vendors exist, a required node affinity
    to the `vendor` pools by name."""
    pools = list(pools)
    return gpu_pod_scheduling_on(pools, vendor_pool_names(pools, vendor))


def gpu_pod_scheduling_on(pools: Iterable[GpuPoolConfig], names: Sequence[str] | None) -> dict[str, Any]:
    """`gpu_pod_scheduling` limited to the GPU pools `names` by a required node affinity (None: every pool)."""
    scheduling = gpu_pod_scheduling(pools)
    if names is not None:
        term = {"matchExpressions": [{"key": GPU_POOL_NAME_LABEL_KEY, "operator": "In", "values": list(names)}]}
        required = {"nodeSelectorTerms": [term]}
        scheduling["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return scheduling


def gpu_pool_node_labels(pool_name: str, gpu_model: str | None = None) -> dict[str, str]:
    """Labels set through the pool, so scale-from-zero templates carry them too."""
    labels = {GPU_POOL_LABEL_KEY: GPU_POOL_LABEL_VALUE, GPU_POOL_NAME_LABEL_KEY: pool_name}
    if gpu_model:
        labels[GPU_MODEL_LABEL_KEY] = gpu_model
    return labels


def vendor_node_labels(pool: GpuPoolConfig) -> dict[str, str]:
    """The AMD operator's node labels on AMD pools, set through the pool so nodes carry them from boot; nothing on
    NVIDIA pools."""
    return dict([AMD_VENDOR_LABEL, AMD_NFD_LABEL]) if pool.sku.vendor == AMD_VENDOR_LABEL[1] else {}


def autoscaler_resource_tag(resource: str) -> str:
    """The scale-set tag name that makes the autoscaler's template offer `resource` (Azure tag names allow no `/`:
    the autoscaler turns every `_` after the prefix into `/`, so a resource with `_` cannot be named)."""
    if "_" in resource:
        raise ValueError(f"{resource!r}: the cluster autoscaler reads `_` in a tag as `/`; it cannot be a tag")
    return AUTOSCALER_RESOURCE_TAG_PREFIX + resource.replace("/", "_")


def gpu_resource(pool: GpuPoolConfig) -> str:
    """The extended resource a node of `pool` advertises its GPUs as."""
    return GPU_RESOURCES[pool.sku.vendor]


def scale_from_zero_tags(pool: GpuPoolConfig, gpus_per_node: int) -> dict[str, str]:
    """AgentPool tags that tell the cluster autoscaler what a node of `pool` offers beyond its SKU: the RDMA
    devices of InfiniBand pools, on MIG or shared pools the `nvidia.com/gpu` devices the plugin advertises (the SKU
    counts whole GPUs, not MIG slices or time-sliced/MPS replicas), and on AMD pools `amd.com/gpu`. The template
    names every size's GPUs `nvidia.com/gpu` (azure_template.go buildNodeFromTemplate at cluster-autoscaler-1.36.1),
    so an AMD pool also sets that to 0: otherwise a pending NVIDIA pod would scale up AMD nodes it can never use."""
    tags: dict[str, str] = {}
    if pool.infiniband:
        tags[autoscaler_resource_tag(RDMA_RESOURCE)] = str(RDMA_DEVICES_PER_NODE)
    if pool.mig_profile or pool.sharing or gpu_resource(pool) != GPU_RESOURCE:
        tags[autoscaler_resource_tag(gpu_resource(pool))] = str(gpus_per_node)
    if gpu_resource(pool) != GPU_RESOURCE:
        tags[autoscaler_resource_tag(GPU_RESOURCE)] = "0"
    return tags


def sharing_node_labels(pool: GpuPoolConfig, stack_mode: str) -> dict[str, str]:
    """Labels a shared pool's nodes carry from boot, set through the pool so a node from zero has them too.

    `nvidia.com/device-plugin.config` names the plugin configuration the node runs (the chart's and the
    operator's config-manager read it: NVIDIA/k8s-device-plugin v0.20.0 templates/daemonset-device-plugin.yml
    NODE_LABEL). Under the standalone chart, `nvidia.com/mps.capable=true` lets its MPS control daemon DaemonSet
    (nodeSelector in templates/daemonset-mps-control-daemon.yml) run on MPS pools: the plugin waits for that
    daemon, and only gpu-feature-discovery, which the platform does not run there, would write the label. Under
    the GPU Operator its own gpu-feature-discovery writes it.
    """
    if pool.sharing is None:
        return {}
    labels = {DEVICE_PLUGIN_CONFIG_LABEL_KEY: pool.sharing.config_name}
    if pool.sharing.mode == "mps" and stack_mode == "devicePlugin":
        labels[MPS_CAPABLE_LABEL_KEY] = "true"
    return labels


def cpu_node_affinity() -> dict[str, Any]:
    """`cpu_node_selector` as a required node affinity, for charts that take affinity and no nodeSelector."""
    terms = [
        {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in cpu_node_selector().items()]}
    ]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def cpu_node_selector() -> dict[str, str]:
    """Selects the CPU user pool (monitoring, log collection, API servers, preprocessing)."""
    return {GPU_POOL_LABEL_KEY: CPU_POOL_LABEL_VALUE}


def parse_taint(taint: str) -> dict[str, str]:
    """`key=value:Effect` (the AgentPool nodeTaints form) as a Kubernetes taint object."""
    key_value, effect = taint.rsplit(":", 1)
    key, _, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect}


# ---------------------------------------------------------------- the scheduler's filters, for checks


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, str]) -> bool:
    """Kubernetes' Toleration.ToleratesTaint: empty effect matches all, empty key with Exists matches all keys."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    operator = toleration.get("operator") or "Equal"
    if not toleration.get("key"):
        return operator == "Exists"
    if toleration["key"] != taint["key"]:
        return False
    if operator == "Exists":
        return True
    return (toleration.get("value") or "") == taint["value"]


def tolerates_taints(pod_spec: Mapping[str, Any], node_taints: Iterable[str]) -> bool:
    """The TaintToleration filter: every NoSchedule/NoExecute taint has a matching toleration."""
    tolerations: Sequence[Mapping[str, Any]] = pod_spec.get("tolerations") or []
    for taint in map(parse_taint, node_taints):
        if taint["effect"] == "PreferNoSchedule":
            continue  # a preference, never a filter
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression["key"], expression["operator"]
    values: Sequence[str] = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        if key not in labels:
            return False
        try:
            have, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if term.get("matchFields"):
        raise ValueError("matchFields (node name) is not modelled: a template cannot know node names")
    expressions: Sequence[Mapping[str, Any]] = term.get("matchExpressions") or []
    # An empty term selects no node (Kubernetes' NodeSelectorTerm semantics).
    return bool(expressions) and all(_expression_matches(e, labels) for e in expressions)


def selects_node(pod_spec: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """The NodeSelector and NodeAffinity filters: `nodeSelector` and the required node affinity both match."""
    selector: Mapping[str, str] = pod_spec.get("nodeSelector") or {}
    if any(node_labels.get(k) != v for k, v in selector.items()):
        return False
    affinity: Mapping[str, Any] = pod_spec.get("affinity") or {}
    node_affinity: Mapping[str, Any] = affinity.get("nodeAffinity") or {}
    required: Mapping[str, Any] | None = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    terms: Sequence[Mapping[str, Any]] = required.get("nodeSelectorTerms") or []
    return any(_term_matches(term, node_labels) for term in terms)  # terms are ORed


# The restricted Pod Security Standard, as every pod the platform runs itself (smoke test, samples,
# verification pods) declares it: the container half below, the pod half (non-root user, RuntimeDefault
# seccomp) from restricted_pod_security_context.
RESTRICTED_CONTAINER_SECURITY_CONTEXT: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


# The container half plus the pod's non-root user and seccomp profile repeated, where scanners look for them
# (checkov reads each container's own securityContext).
SCANNED_CONTAINER_SECURITY_CONTEXT: dict[str, Any] = {
    **RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def restricted_pod_security_context(uid: int, fs_group: bool = False) -> dict[str, Any]:
    """Pod-level half of the restricted standard: a fixed non-root user and group, RuntimeDefault seccomp."""
    context: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if fs_group:
        context["fsGroup"] = uid
    return context
