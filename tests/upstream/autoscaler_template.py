"""The node the cluster autoscaler imagines for a pool at zero nodes, and the pods that must make it add one.

The template follows kubernetes/autoscaler tag cluster-autoscaler-1.36.1 (commit 35e8a280),
cluster-autoscaler/cloudprovider/azure, built here from a recorded AgentPool's inputs, never from the platform's
scheduling helpers:

- azure_template.go buildNodeFromTemplate: capacity `cpu` (vCPUs), `memory` (MemoryMb), `nvidia.com/gpu` (the
  SKU's GPU count) and 110 `pods`, from the SKU API or its fallback, the static list azure_instance_types.go (the
  sizes we accept are excerpted in tests/fixtures/autoscaler/azure_instance_types.json; the SKU API reports the
  same vCPU, memory and GPU counts); allocatable is capacity ("TODO: set real allocatable").
- processVMSSTemplate: `ephemeral-storage` from the OS disk size; every scale-set tag
  `k8s.io_cluster-autoscaler_node-template_resources_<name>` adds (or overrides) resource <name> with every `_` and
  `~2` turned into `/` (extractAllocatableResourcesFromScaleSet). AKS copies AgentPool `tags` to the scale set
  (MicrosoftDocs/azure-aks-docs articles/aks/use-tags.md, "Add tags to node pools").
- Labels and taints: AKS's build passes the pool's nodeLabels and nodeTaints as the template's InputLabels and
  InputTaints (upstream commit e0c91ad7 "defork labels and taints"; the AKS team in Azure/AKS#2586: "If a node
  doesn't exist, the information is obtained from the AKS API properties"), plus buildGenericLabels (arch, os,
  instance type, region, zone, hostname) and the agentpool labels from the scale set's aks-managed-poolName tag.
  Labels predicted only for some SKUs (`kubernetes.azure.com/accelerator`: NvidiaEnabledSKUs, which lists no H100)
  are left out, so a pod that selects on them shows up as not fitting: the safe side.
- Only VirtualMachineScaleSets pools read resource tags (buildNodeTemplateFromVMPool has none).

What a real node then advertises, to compare with the template, follows NVIDIA/k8s-device-plugin v0.20.0: MIG
slices under the single strategy, and the time-slicing or MPS replicas of the plugin configuration the node's
`nvidia.com/device-plugin.config` label selects (api/config/v1 sharing.go and replicas.go).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import yaml

from aks_gpu_platform.testing import Recording
from tests.upstream.azure_vm_sizes import INSTANCE_TYPES, MIG_INSTANCES_PER_GPU, gpu_vendor, gpus_per_vm
from tests.upstream.kube_scheduler import pod_fits_node, selects_node
from tests.upstream.scheduling import (
    AGENT_POOL,
    RELEASE,
    RESOURCE_FLAVOR,
    PodTemplate,
    object_pod_templates,
    parse_quantity,
    unmet_requests,
)

NODE_RESOURCES_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"  # azure_util.go nodeResourcesTagName
GPU_RESOURCE = "nvidia.com/gpu"  # k8s.io/autoscaler utils/gpu ResourceNvidiaGPU
NIC_CLUSTER_POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"


@dataclass(frozen=True)
class TemplateNode:
    """What the autoscaler believes one more node of a pool at zero would offer."""

    pool: str
    labels: Mapping[str, str]
    taints: tuple[str, ...]
    allocatable: Mapping[str, Fraction]


def can_be_at_zero(pool: Mapping[str, Any]) -> bool:
    """An autoscaled pool whose minimum is zero: only the template speaks for it then."""
    return bool(pool.get("enableAutoScaling")) and int(pool.get("minCount") or 0) == 0


def resources_from_tags(tags: Mapping[str, str]) -> dict[str, Fraction]:
    """extractAllocatableResourcesFromScaleSet: the name after the prefix, `_` and `~2` read as `/`."""
    found: dict[str, Fraction] = {}
    for tag, value in tags.items():
        name = tag.split(NODE_RESOURCES_TAG, 1)[1] if NODE_RESOURCES_TAG in tag else ""
        if name:
            found[name.replace("_", "/").replace("~2", "/")] = parse_quantity(value)
    return found


def template_node(pool: Mapping[str, Any], location: str = "koreacentral") -> TemplateNode:
    """The autoscaler's template node of a VirtualMachineScaleSets AgentPool, from its recorded inputs."""
    name, vm_size = str(pool["agentPoolName"]), str(pool["vmSize"])
    assert pool.get("type", "VirtualMachineScaleSets") == "VirtualMachineScaleSets", (
        f"{name}: only scale-set pools read resource tags; a VirtualMachines pool's template is not modelled"
    )
    assert vm_size in INSTANCE_TYPES, f"{vm_size}: not in the autoscaler SKU excerpt; add it from the tag's list"
    sku = INSTANCE_TYPES[vm_size]
    allocatable: dict[str, Fraction] = {
        "pods": Fraction(110),
        "cpu": Fraction(sku["vcpu"]),
        "memory": Fraction(sku["memoryMb"] * 1024 * 1024),
        GPU_RESOURCE: Fraction(sku["gpu"]),
    }
    if pool.get("osDiskSizeGB"):
        allocatable["ephemeral-storage"] = Fraction(int(pool["osDiskSizeGB"]) * 1024**3)
    allocatable.update(resources_from_tags(pool.get("tags") or {}))
    zones = list(pool.get("availabilityZones") or [])
    zone = f"{location}-{zones[0]}" if zones else "0"  # the template picks one of the pool's zones at random
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": str(pool.get("osType", "Linux")).lower(),
        "node.kubernetes.io/instance-type": vm_size,
        "topology.kubernetes.io/region": location,
        "topology.kubernetes.io/zone": zone,
        "agentpool": name,
        "kubernetes.azure.com/agentpool": name,
        **(pool.get("nodeLabels") or {}),
    }
    return TemplateNode(name, labels, tuple(pool.get("nodeTaints") or ()), allocatable)


def zero_node_templates(recording: Recording) -> list[TemplateNode]:
    """The template of every separately managed pool that can be at zero nodes."""
    return [template_node(p.inputs) for p in recording.of_type(AGENT_POOL) if can_be_at_zero(p.inputs)]


def why_not_template(pod: Mapping[str, Any], node: TemplateNode) -> list[str]:
    """Why the autoscaler's simulation would not place `pod` on the template node (empty: it fits)."""
    reasons = [f"lacks {need}" for need in unmet_requests(pod, node.allocatable)]
    if not pod_fits_node(pod, node.labels, node.taints):
        reasons.append("labels or taints do not match")
    return reasons


def advertised_rdma_resources(recording: Recording) -> set[str]:
    """`<resourcePrefix>/<resourceName>` of every RDMA shared device plugin resource the NicClusterPolicy runs
    (Mellanox/k8s-rdma-shared-dev-plugin: the plugin registers prefix + "/" + name with the kubelet)."""
    found: set[str] = set()
    for policy in recording.of_type(NIC_CLUSTER_POLICY):
        plugin = (policy.inputs.get("spec") or {}).get("rdmaSharedDevicePlugin") or {}
        for entry in json.loads(plugin.get("config") or "{}").get("configList") or []:
            found.add(f"{entry.get('resourcePrefix') or 'rdma'}/{entry['resourceName']}")
    return found


# What each vendor's device plugin registers with the kubelet: NVIDIA/k8s-device-plugin `nvidia.com/gpu`;
# ROCm/k8s-device-plugin v1.31.0.10 internal/pkg/plugin/plugin.go GetResourceNamespace "amd.com" + "gpu".
DEVICE_PLUGIN_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}


def vendor_of(pool: Mapping[str, Any]) -> str:
    vendor = gpu_vendor(str(pool["vmSize"]))
    assert vendor is not None, f"{pool['vmSize']}: not a GPU size"
    return vendor


# ---------------------------------------------------------------- the device plugin's sharing configuration

# NVIDIA/k8s-device-plugin v0.20.0: the node label config-manager reads (templates/daemonset-device-plugin.yml
# NODE_LABEL; the GPU Operator's config-manager reads the same), and the chart fallback "named" (a config called
# `default`) when the node has no label.
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"


@dataclass(frozen=True)
class PluginSharing:
    """What one named plugin config makes of each GPU, read as api/config/v1 (sharing.go, replicas.go) reads it."""

    replicas: int
    """Devices advertised per physical device for `nvidia.com/gpu` (1: not shared)."""
    one_device_per_container: bool
    """failRequestsGreaterThanOne: a container asking for more than one shared device is refused by the kubelet."""


def parse_plugin_config(text: str) -> PluginSharing:
    """A config file as the plugin parses it at v0.20.0: MPS wins over time-slicing when both replicate
    (Sharing.SharingStrategy), `resources` must be non-empty and `replicas` at least 2 (ReplicatedResource
    UnmarshalJSON), renameByDefault moves the devices to `nvidia.com/gpu.shared`, and MPS defaults
    failRequestsGreaterThanOne to true (config.go) while time-slicing defaults it to false."""
    config = yaml.safe_load(text) or {}
    assert config.get("version") == "v1", f"the plugin reads config version v1 only: {config}"
    sharing = config.get("sharing") or {}
    for strategy in ("mps", "timeSlicing"):
        replicated = sharing.get(strategy)
        if not replicated:
            continue
        resources = replicated.get("resources") or []
        assert resources, f"sharing.{strategy}: the plugin refuses a config without resources"
        assert all(int(r["replicas"]) >= 2 for r in resources), "the plugin refuses fewer than 2 replicas"
        gpu = [int(r["replicas"]) for r in resources if r["name"] == GPU_RESOURCE]
        if not gpu or replicated.get("renameByDefault"):
            return PluginSharing(0, True)  # nvidia.com/gpu is no longer advertised under its own name
        fail = replicated.get("failRequestsGreaterThanOne", strategy == "mps")
        return PluginSharing(gpu[0], bool(fail))
    return PluginSharing(1, False)


def plugin_configs(recording: Recording) -> tuple[dict[str, str], str | None]:
    """The named configs and default of the release that runs the device plugin (chart `config.map`/`default`,
    or the GPU Operator chart's `devicePlugin.config.data`/`default`)."""
    for release in recording.of_type(RELEASE):
        values = release.inputs.get("values") or {}
        if release.inputs["chart"] == "nvidia-device-plugin":
            config = values.get("config") or {}
            return dict(config.get("map") or {}), config.get("default")
        if release.inputs["chart"] == "gpu-operator":
            config = (values.get("devicePlugin") or {}).get("config") or {}
            return dict(config.get("data") or {}), config.get("default")
    return {}, None


def pool_sharing(pool: Mapping[str, Any], recording: Recording) -> PluginSharing:
    """The config a node of `pool` runs: the one its label names, else the default, else none."""
    configs, default = plugin_configs(recording)
    name = (pool.get("nodeLabels") or {}).get(DEVICE_PLUGIN_CONFIG_LABEL) or default
    if name is None:
        return PluginSharing(1, False)
    assert name in configs, (
        f"{pool['agentPoolName']}: its nodes select plugin config {name!r}, not in {sorted(configs)}"
    )
    return parse_plugin_config(configs[name])


def whole_node_gpus(pool: Mapping[str, Any], recording: Recording) -> int:
    """`nvidia.com/gpu` one node advertises: the SKU's GPUs, each split into its MIG slices (single strategy), each
    device advertised `replicas` times when the plugin config shares it. GPU counts and slices per GPU as
    azure_vm_sizes.py has them (the autoscaler's instance list, Azure size pages, NVIDIA's MIG user guide)."""
    gpus = gpus_per_vm(str(pool["vmSize"]))
    assert gpus, f"{pool['vmSize']}: not a GPU size"
    profile = pool.get("gpuInstanceProfile")
    per_gpu = MIG_INSTANCES_PER_GPU[str(profile)] if profile else 1
    return gpus * per_gpu * pool_sharing(pool, recording).replicas


def flavor_rank_pods(recording: Recording, infiniband_pools: Iterable[str]) -> list[PodTemplate]:
    """Per ResourceFlavor, the rank a multi-node job runs on each node once Kueue admits it there: the flavor's
    nodeLabels as nodeSelector and its tolerations (Kueue v0.19.2 pkg/podset), every GPU of the node and, on an
    InfiniBand pool, one RDMA device of each resource the NicClusterPolicy advertises."""
    pools = {str((p.inputs.get("nodeLabels") or {}).get("gpu-pool")): p.inputs for p in recording.of_type(AGENT_POOL)}
    rdma = advertised_rdma_resources(recording)
    ib = set(infiniband_pools)
    pods: list[PodTemplate] = []
    for flavor in recording.of_type(RESOURCE_FLAVOR):
        spec = flavor.inputs.get("spec") or {}
        if "gpu-pool" not in (spec.get("nodeLabels") or {}):
            continue  # the CPU pool's flavor: jobs there ask for no GPU rank
        pool_name = str(spec["nodeLabels"]["gpu-pool"])
        pool = pools[pool_name]
        resource = DEVICE_PLUGIN_RESOURCES[vendor_of(pool)]
        # On a shared pool a container may hold one shared device: the ranks are one-device pods.
        one_device = pool_sharing(pool, recording).one_device_per_container
        requests = {resource: "1" if one_device else str(whole_node_gpus(pool, recording))}
        requests.update({resource: "1" for resource in (rdma if pool_name in ib else ())})
        pod = {
            "nodeSelector": dict(spec.get("nodeLabels") or {}),
            "tolerations": list(spec.get("tolerations") or []),
            "containers": [{"name": "rank", "resources": {"requests": requests, "limits": requests}}],
        }
        pods.append(PodTemplate(f"ResourceFlavor {flavor.name}: a whole-node rank", pod, f"pool:{pool_name}"))
    return pods


def pods_that_bring_up_nodes(recording: Recording, infiniband_pools: Iterable[str]) -> list[PodTemplate]:
    """Pods that wait for a GPU node the autoscaler must add: Jobs, Deployments and Pods asking for GPUs (smoke
    test, validation Jobs, inference sample) and the ranks Kueue admits per flavor. DaemonSet pods never trigger a
    scale-up: they follow the nodes."""
    workloads = [p for p in object_pod_templates(recording) if p.runs_on and not p.daemon]
    return [*workloads, *flavor_rank_pods(recording, infiniband_pools)]


def shared_pool_fill_problems(recording: Recording) -> list[str]:
    """A job holding a whole shared pool, one shared device per pod (what a team's full quota runs), as a
    best-effort-atomic ProvisioningRequest asks for it: the autoscaler packs the pods onto template nodes and
    succeeds only if they fit in maxCount of them."""
    problems: list[str] = []
    for agent_pool in recording.of_type(AGENT_POOL):
        pool = agent_pool.inputs
        if not can_be_at_zero(pool) or pool_sharing(pool, recording).replicas <= 1:
            continue
        max_count = int(pool["maxCount"])
        pods = max_count * whole_node_gpus(pool, recording)
        per_node = int(template_node(pool).allocatable.get(GPU_RESOURCE, 0))
        needed = math.ceil(pods / per_node) if per_node else math.inf
        if needed > max_count:
            problems.append(
                f"pool {pool['agentPoolName']} at zero: {pods} one-device pods fill its {max_count} nodes, but the "
                f"template offers {per_node} nvidia.com/gpu per node, so the autoscaler wants {needed} nodes"
            )
    return problems


def scale_from_zero_problems(recording: Recording, infiniband_pools: Iterable[str]) -> list[str]:
    """Every pod that must bring up a pool at zero, against that pool's template (or, for a pod that may use any
    GPU pool, against the templates of the pools it selects when none of them keeps a node)."""
    zero = zero_node_templates(recording)
    kept = [p.inputs for p in recording.of_type(AGENT_POOL) if not can_be_at_zero(p.inputs)]
    problems: list[str] = []
    for pod in pods_that_bring_up_nodes(recording, infiniband_pools):
        if pod.runs_on and pod.runs_on.startswith("pool:"):
            targets = [n for n in zero if n.labels.get("gpu-pool") == pod.runs_on.removeprefix("pool:")]
            for node in targets:
                if reasons := why_not_template(pod.spec, node):
                    problems.append(f"{pod.source}: pool {node.pool} at zero never scales up for it: {reasons}")
            continue
        if any(pod_fits_node(pod.spec, p.get("nodeLabels") or {}, p.get("nodeTaints") or ()) for p in kept):
            continue  # a pool that keeps nodes can take it
        targets = {n.pool: why_not_template(pod.spec, n) for n in zero if selects_node(pod.spec, n.labels)}
        if targets and all(targets.values()):
            problems.append(f"{pod.source}: no pool at zero it selects scales up for it: {targets}")
    return sorted([*problems, *shared_pool_fill_problems(recording)])
