"""What the scheduler would see: node templates built the way AKS builds a pool's nodes, and the pods
that our Kubernetes objects and our Helm values produce, read the way each chart's templates read them.

Node templates come from the recorded AgentPool inputs plus what AKS adds itself, never from the
platform's scheduling helpers: a wrong helper then shows up as a pod that does not fit.

- AKS labels: the reserved system labels of MicrosoftDocs/azure-aks-docs articles/aks/use-labels.md
  (snapshot 2026-08-21); only those a pool's inputs determine are modelled.
- Spot: "A Spot node pool has the kubernetes.azure.com/scalesetpriority:spot label, the
  kubernetes.azure.com/scalesetpriority=spot:NoSchedule taint" (articles/aks/spot-node-pool.md, same
  snapshot; https://learn.microsoft.com/azure/aks/spot-node-pool), whatever the pool's nodeTaints say.

Charts: for each chart we install, the values keys that shape its pods' scheduling, merged over the
chart's defaults as Helm merges values (maps merge, lists and scalars replace). Labels that an operator
or node-feature-discovery puts on nodes at runtime (`nvidia.com/gpu.deploy.*`, `pci-15b3.present`) are
not in a node template and the selectors on them are left out; each reader says which.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from aks_gpu_platform.testing import RecordedResource, Recording
from tests.upstream.azure_vm_sizes import gpu_vendor, host_arch, nvlink_across_vms
from tests.upstream.kube_scheduler import pod_fits_node, selects_node

AGENT_POOL = "azure-native:containerservice:AgentPool"
# aksManaged pools: the same AgentPool through the generic ARM resource (a newer API version).
GENERIC_RESOURCE = "azure-native:resources:Resource"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"
RELEASE = "kubernetes:helm.sh/v3:Release"
NIC_CLUSTER_POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
RESOURCE_FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"

# Spelled out from the AKS docs, not imported: the check must not trust the platform's own constants.
AKS_SPOT_LABEL = ("kubernetes.azure.com/scalesetpriority", "spot")
AKS_SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
# Azure/AgentBaker parts/linux/cloud-init/artifacts/cse_config.sh configureManagedGPUExperience (2026-08-21):
# a node whose pool has gpuProfile.nvidia.managementMode Managed gets this kubelet label.
AKS_MANAGED_EXPORTER_LABEL = ("kubernetes.azure.com/dcgm-exporter", "enabled")
GPU_RESOURCE = "nvidia.com/gpu"


# ---------------------------------------------------------------- nodes


@dataclass(frozen=True)
class NodeTemplate:
    """Labels and taints every node of one pool has when it joins (scale-from-zero included)."""

    pool: str
    """Azure pool name."""
    labels: Mapping[str, str]
    taints: tuple[str, ...]
    system: bool
    """The system pool: user workloads are not meant to land there."""

    @property
    def gpu(self) -> bool:
        """An NVIDIA GPU node (what NVIDIA's agents must run on)."""
        return self.labels.get("kubernetes.azure.com/accelerator") == "nvidia"

    @property
    def multi_node_nvlink(self) -> bool:
        return nvlink_across_vms(self.labels.get("node.kubernetes.io/instance-type", ""))

    @property
    def amd_gpu(self) -> bool:
        return self.labels.get("kubernetes.azure.com/accelerator") == "amd"

    @property
    def spot(self) -> bool:
        return self.labels.get(AKS_SPOT_LABEL[0]) == AKS_SPOT_LABEL[1]


def node_template(pool: Mapping[str, Any]) -> NodeTemplate:
    """The node AKS builds from an AgentPool's inputs (or the cluster's inline pool profile)."""
    name = str(pool.get("agentPoolName") or pool["name"])
    vm_size = str(pool["vmSize"])
    labels: dict[str, str] = {
        **(pool.get("nodeLabels") or {}),
        "kubernetes.azure.com/agentpool": name,
        "kubernetes.azure.com/mode": str(pool.get("mode", "User")).lower(),
        "kubernetes.azure.com/role": "agent",
        "kubernetes.io/os": str(pool.get("osType", "Linux")).lower(),
        # Azure size pages: Grace-Blackwell hosts are Arm64; every other size here is x86 (azure_vm_sizes.py).
        "kubernetes.io/arch": host_arch(vm_size),
        "node.kubernetes.io/instance-type": vm_size,
    }
    if pool.get("osSku"):
        labels["kubernetes.azure.com/os-sku"] = str(pool["osSku"])
    if (vendor := gpu_vendor(vm_size)) is not None:  # N-series sizes: AKS marks the node's accelerator
        # `amd` on AMD sizes: the node labels azure-aks-docs articles/aks/use-amd-gpus.md shows (at 742aedaa).
        labels["kubernetes.azure.com/accelerator"] = vendor
    taints = list(pool.get("nodeTaints") or [])
    if ((pool.get("gpuProfile") or {}).get("nvidia") or {}).get("managementMode") == "Managed":
        labels[AKS_MANAGED_EXPORTER_LABEL[0]] = AKS_MANAGED_EXPORTER_LABEL[1]
    if pool.get("scaleSetPriority") == "Spot":
        labels[AKS_SPOT_LABEL[0]] = AKS_SPOT_LABEL[1]
        if AKS_SPOT_TAINT not in taints:
            taints.append(AKS_SPOT_TAINT)
    return NodeTemplate(name, labels, tuple(taints), system=str(pool.get("mode")) == "System")


def generic_agent_pools(recording: Recording) -> list[dict[str, Any]]:
    """Pools created through the generic ARM resource (aksManaged), as AgentPool-shaped inputs."""
    return [
        {**(r.inputs.get("properties") or {}), "agentPoolName": r.inputs["resourceName"]}
        for r in recording.of_type(GENERIC_RESOURCE)
        if r.inputs.get("resourceProviderNamespace") == "Microsoft.ContainerService"
        and r.inputs.get("resourceType") == "agentPools"
    ]


def node_templates(recording: Recording) -> list[NodeTemplate]:
    """Every pool of the stack: the cluster's inline system pool and every separate AgentPool."""
    inline = [p for c in recording.of_type(MANAGED_CLUSTER) for p in c.inputs.get("agentPoolProfiles") or []]
    separate = [p.inputs for p in recording.of_type(AGENT_POOL)] + generic_agent_pools(recording)
    return [node_template(p) for p in inline] + [node_template(p) for p in separate]


# ---------------------------------------------------------------- pods


@dataclass(frozen=True)
class PodTemplate:
    """The scheduling-relevant part of a pod some object or release makes, and where it must run."""

    source: str
    spec: Mapping[str, Any]
    runs_on: str | None = None
    """"gpu": every NVIDIA GPU pool; "amd": every AMD GPU pool; "infiniband": the InfiniBand pools; "nvlink": the
    multi-node NVLink pools; "every": every user pool; "cpu": the CPU pools
    (non-GPU user pools); "pool:<name>": the GPU pool of that configured name; None: somewhere."""
    daemon: bool = False
    """A DaemonSet: one pod per selected node, so it must fit every node it selects."""


POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
SCHEDULING_KEYS = ("nodeSelector", "affinity", "tolerations")


def _at(obj: Any, path: Sequence[str]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def requests_gpus(spec: Mapping[str, Any]) -> bool:
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    return any(
        GPU_RESOURCE in ((c.get("resources") or {}).get(bound) or {})
        for c in containers
        for bound in ("limits", "requests")
    )


# k8s.io/apimachinery pkg/api/resource quantity suffixes (binary and decimal SI, milli).
QUANTITY_SUFFIXES = {
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
}


def parse_quantity(value: Any) -> Fraction:
    """A Kubernetes quantity (`500m`, `64Gi`, `8`) as an exact number."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([a-zA-Z]*)", str(value).strip())
    assert match and match.group(2) in QUANTITY_SUFFIXES, f"not a modelled quantity: {value!r}"
    return Fraction(match.group(1)) * QUANTITY_SUFFIXES[match.group(2)]


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """The scheduler's view of a pod's requests (k8s.io/component-helpers resource.PodRequests): per resource the
    larger of the containers' sum and the largest init container; a limit without a request counts as the request."""

    def requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {name: parse_quantity(quantity) for name, quantity in merged.items()}

    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        for name, quantity in requests(container).items():
            total[name] = total.get(name, Fraction(0)) + quantity
    for container in spec.get("initContainers") or []:
        for name, quantity in requests(container).items():
            total[name] = max(total.get(name, Fraction(0)), quantity)
    return total


def unmet_requests(spec: Mapping[str, Any], allocatable: Mapping[str, Fraction]) -> list[str]:
    """The NodeResourcesFit filter on an empty node: each resource the pod requests that the node lacks or has
    too little of, as `name (wants x, node has y)`."""
    return [
        f"{name} (wants {float(quantity):g}, node has {float(allocatable.get(name, 0)):g})"
        for name, quantity in sorted(pod_requests(spec).items())
        if quantity > allocatable.get(name, Fraction(0))
    ]


# Kinds whose objects carry several pod templates. LeaderWorkerSet v1 (kubernetes-sigs/lws v0.10.0,
# api/leaderworkerset/v1/leaderworkerset_types.go): the group's leader and its workers; the leader template
# defaults to the worker's when absent.
MULTI_POD_SPEC_PATHS: dict[str, dict[str, tuple[str, ...]]] = {
    "LeaderWorkerSet": {
        "leader": ("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
        "worker": ("spec", "leaderWorkerTemplate", "workerTemplate", "spec"),
    },
}


def _object_pod(kind: str, source: str, spec: Mapping[str, Any]) -> PodTemplate:
    gpu = requests_gpus(spec)
    # A pod pinned to one GPU pool (a validation Job) must fit that pool; other GPU pods any GPU pool.
    pinned = (spec.get("nodeSelector") or {}).get("gpu-pool")
    runs_on = f"pool:{pinned}" if pinned else "gpu" if gpu else None
    return PodTemplate(source, spec, runs_on, daemon=kind == "DaemonSet")


def object_pod_templates(recording: Recording) -> list[PodTemplate]:
    """The pod template of every plain Kubernetes object that has one (each of them, for a LeaderWorkerSet)."""
    pods: list[PodTemplate] = []
    for resource in recording.kubernetes_objects():
        kind = resource.type.rsplit(":", 1)[-1]
        if kind in MULTI_POD_SPEC_PATHS:
            for role, path in MULTI_POD_SPEC_PATHS[kind].items():
                spec = _at(resource.inputs, path)
                if isinstance(spec, Mapping):
                    pods.append(_object_pod(kind, f"{kind} {resource.name} {role}", spec))
            continue
        if kind not in POD_SPEC_PATHS:
            continue
        spec = _at(resource.inputs, POD_SPEC_PATHS[kind])
        assert isinstance(spec, Mapping), f"{kind} {resource.name} renders no pod spec"
        pods.append(_object_pod(kind, f"{kind} {resource.name}", spec))
    return pods


def helm_merge(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of user values over chart defaults: maps merge, lists and scalars replace, null deletes."""
    merged = copy.deepcopy(dict(defaults))
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = helm_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _scheduling(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: values[key] for key in SCHEDULING_KEYS if values.get(key)}


def _toleration(key: str, effect: str | None = "NoSchedule", value: str | None = None) -> dict[str, str]:
    toleration = {"key": key, "operator": "Equal" if value is not None else "Exists"}
    if value is not None:
        toleration["value"] = value
    if effect:
        toleration["effect"] = effect
    return toleration


def _required_terms(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions} for expressions in terms]
            }
        }
    }


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


CONTROL_PLANE_TOLERATIONS = [
    _toleration("node-role.kubernetes.io/master", value=""),
    _toleration("node-role.kubernetes.io/control-plane", value=""),
]


@dataclass(frozen=True)
class ChartReader:
    """How one chart's templates turn our values into pods, at the versions whose templates were read."""

    versions: frozenset[str]
    read: Callable[[str, Mapping[str, Any]], list[PodTemplate]]


def _device_plugin(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin: values.yaml and
    # templates/daemonset-device-plugin.yml (nodeSelector, affinity, tolerations), same from v0.17.0 to v0.20.0.
    defaults = {
        "devicePlugin": {"enabled": True},
        "nodeSelector": {},
        "affinity": _required_terms(
            [_in("feature.node.kubernetes.io/pci-10de.present", "true")],
            [_in("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA")],
            [_in("nvidia.com/gpu.present", "true")],
        ),
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, _toleration("nvidia.com/gpu")],
    }
    merged = helm_merge(defaults, values)
    if not merged["devicePlugin"]["enabled"]:
        return []
    return [PodTemplate(f"{release}: device plugin DaemonSet", _scheduling(merged), "gpu", daemon=True)]


def _gpu_operator(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # NVIDIA/gpu-operator deployments/gpu-operator: templates/clusterpolicy.yaml passes daemonsets.tolerations to
    # every operand (their nodeSelectors are nvidia.com/gpu.deploy.* labels the operator sets: not modelled);
    # the node-feature-discovery subchart's templates/worker.yaml reads worker.{nodeSelector,affinity,tolerations}.
    # Keys unchanged from v25.3.1 to v26.7.0.
    defaults = {
        "nfd": {"enabled": True},
        "daemonsets": {"tolerations": [_toleration("nvidia.com/gpu")]},
        "node-feature-discovery": {
            "worker": {
                "nodeSelector": {},
                "affinity": {},
                "tolerations": [*CONTROL_PLANE_TOLERATIONS, _toleration("nvidia.com/gpu")],
            }
        },
    }
    merged = helm_merge(defaults, values)
    pods = [PodTemplate(f"{release}: operand DaemonSets", _scheduling(merged["daemonsets"]), "gpu", daemon=True)]
    if merged["nfd"]["enabled"]:
        worker = merged["node-feature-discovery"]["worker"]
        pods.append(PodTemplate(f"{release}: node-feature-discovery worker", _scheduling(worker), "gpu", daemon=True))
    return pods


# ROCm/gpu-operator v1.5.1 helm-charts-k8s values.yaml (and its subcharts'): the defaults the templates read.
AMD_GPU_OPERATOR_DEFAULTS: dict[str, Any] = {
    "node-feature-discovery": {"enabled": True, "worker": {"nodeSelector": {}, "tolerations": []}},
    "kmm": {
        "enabled": True,
        "controller": {"nodeSelector": {}, "affinity": {}, "manager": {"tolerations": CONTROL_PLANE_TOLERATIONS}},
        "webhookServer": {
            "nodeSelector": {},
            "affinity": {},
            "webhookServer": {"tolerations": CONTROL_PLANE_TOLERATIONS},
        },
    },
    "controllerManager": {
        "nodeSelector": {},
        "affinity": {},
    },
    "deviceConfig": {
        "spec": {
            "selector": {"feature.node.kubernetes.io/amd-gpu": "true"},
            "driver": {"enable": False, "tolerations": []},
            "devicePlugin": {
                "devicePluginTolerations": [],
                "enableNodeLabeller": True,
                "nodeLabellerTolerations": [],
            },
            "metricsExporter": {"enable": True, "tolerations": []},
        }
    },
}


def _amd_gpu_operator(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # ROCm/gpu-operator v1.5.1 helm-charts-k8s: values.yaml; templates/deployment.yaml (controllerManager.nodeSelector
    # and .affinity; tolerations only when manager.tolerations is set); the node-feature-discovery subchart
    # (node-feature-discovery.enabled) worker with worker.{nodeSelector,tolerations}; the kmm subchart (kmm.enabled)
    # charts/kmm/templates/deployment.yaml: controller and webhook Deployments with {controller,webhookServer}
    # .{nodeSelector,affinity} and the manager's / webhookServer's tolerations. templates/default-deviceconfig.yaml
    # passes deviceConfig.spec on to the operator, whose operand DaemonSets take spec.selector as nodeSelector and
    # devicePlugin.devicePluginTolerations, devicePlugin.nodeLabellerTolerations (internal/nodelabeller, when
    # enableNodeLabeller) and metricsExporter.tolerations (internal/metricsexporter); with driver.enable the KMM
    # Module takes the same selector and driver.tolerations for its build and module-loader pods
    # (internal/kmmmodule/kmmmodule.go setKMMModuleLoader).
    merged = helm_merge(AMD_GPU_OPERATOR_DEFAULTS, values)
    controller = merged["controllerManager"]
    pods = [PodTemplate(f"{release}: controller-manager Deployment", _scheduling(controller))]
    if merged["node-feature-discovery"]["enabled"]:
        worker = merged["node-feature-discovery"]["worker"]
        pods.append(PodTemplate(f"{release}: node-feature-discovery worker", _scheduling(worker), "amd", daemon=True))
    kmm = merged["kmm"]
    if kmm["enabled"]:
        kmm_controller = {**kmm["controller"], "tolerations": kmm["controller"]["manager"]["tolerations"]}
        webhook = {**kmm["webhookServer"], "tolerations": kmm["webhookServer"]["webhookServer"]["tolerations"]}
        pods.append(PodTemplate(f"{release}: KMM controller Deployment", _scheduling(kmm_controller), "cpu"))
        pods.append(PodTemplate(f"{release}: KMM webhook Deployment", _scheduling(webhook), "cpu"))
    return [*pods, *_amd_operands(release, merged["deviceConfig"]["spec"])]


def _amd_operands(release: str, spec: Mapping[str, Any]) -> list[PodTemplate]:
    """The DeviceConfig's operands, on the nodes its selector picks (the operator's objects, not the chart's)."""
    selector = dict(spec["selector"])

    def on_amd_nodes(what: str, tolerations: list[Any], daemon: bool = True) -> PodTemplate:
        return PodTemplate(f"{release}: {what}", {"nodeSelector": selector, "tolerations": tolerations}, "amd", daemon)

    plugin = spec["devicePlugin"]
    pods = [on_amd_nodes("AMD device plugin DaemonSet", plugin["devicePluginTolerations"])]
    if plugin["enableNodeLabeller"]:
        pods.append(on_amd_nodes("AMD node labeller DaemonSet", plugin["nodeLabellerTolerations"]))
    if spec["metricsExporter"]["enable"]:
        pods.append(on_amd_nodes("AMD metrics exporter DaemonSet", spec["metricsExporter"]["tolerations"]))
    if spec["driver"]["enable"]:
        pods.append(on_amd_nodes("KMM driver build pod", spec["driver"]["tolerations"], daemon=False))
        pods.append(on_amd_nodes("KMM module loader (per node)", spec["driver"]["tolerations"]))
    return pods


def _network_operator(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # Mellanox/network-operator deployment/network-operator (v24.10.0, v24.10.1, v26.4.0, v26.4.1):
    # templates/operator.yaml reads operator.{nodeSelector,affinity,tolerations} for the operator's own
    # Deployment only (at 26.4.x also its CRD-upgrade and keep-NicClusterPolicy hook Jobs); the subchart
    # node-feature-discovery (condition nfd.enabled) reads worker.*; its worker labels pci-15b3.present, which the
    # RDMA plugin selects.
    defaults = {
        "nfd": {"enabled": True},
        "node-feature-discovery": {
            "worker": {
                "nodeSelector": {},
                "affinity": {},
                "tolerations": [
                    _toleration("node-role.kubernetes.io/master"),
                    _toleration("node-role.kubernetes.io/control-plane"),
                    _toleration("nvidia.com/gpu"),
                ],
            }
        },
        "operator": {"nodeSelector": {}, "tolerations": CONTROL_PLANE_TOLERATIONS},
    }
    merged = helm_merge(defaults, values)
    pods = [PodTemplate(f"{release}: operator Deployment", _scheduling(merged["operator"]))]
    if merged["nfd"]["enabled"]:
        worker = merged["node-feature-discovery"]["worker"]
        pods.append(
            PodTemplate(f"{release}: node-feature-discovery worker", _scheduling(worker), "infiniband", daemon=True)
        )
    return pods


def _dcgm_exporter(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # NVIDIA/dcgm-exporter gh-pages helm-charts/dcgm-exporter-<v>.tgz: templates/daemonset.yaml reads top-level
    # affinity, nodeSelector, tolerations (4.0.1 to 4.8.2). Default tolerations differ across versions (none up to
    # 4.6.0, a list from 4.7.1): our values must replace them.
    assert "tolerations" in values, f"{release}: set tolerations; the chart's default list depends on its version"
    return [PodTemplate(f"{release}: exporter DaemonSet", _scheduling(values), "gpu", daemon=True)]


def _lustre_csi(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # kubernetes-sigs/azurelustre-csi-driver charts/latest/azurelustre-csi-driver (released as 0.6.0 per
    # charts/README.md): templates/node-daemonset-{jammy,noble,azurelinux3}.yaml take node.tolerations whole and
    # require `type NotIn [virtual-kubelet]`; the per-flavor os-sku-effective affinity picks the DaemonSet for the
    # node's Ubuntu/Azure Linux version (not modelled: config requires Ubuntu on pools that mount Lustre).
    node = values.get("node") or {}
    assert "tolerations" in node, f"{release}: set node.tolerations; the chart's default list is not modelled"
    spec = {
        "tolerations": node["tolerations"],
        "affinity": _required_terms([{"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}]),
    }
    return [PodTemplate(f"{release}: CSI node DaemonSets", spec, "every", daemon=True)]


def _kueue(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # kubernetes-sigs/kueue v0.19.2 charts/kueue: templates/manager/manager.yaml reads controllerManager.nodeSelector
    # and .tolerations (defaults {} and []); no affinity key.
    manager = helm_merge({"nodeSelector": {}, "tolerations": []}, values.get("controllerManager") or {})
    return [PodTemplate(f"{release}: controller-manager Deployment", _scheduling(manager), "cpu")]


def _jobset(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # kubernetes-sigs/jobset v0.12.0 charts/jobset: templates/controller/deployment.yaml reads
    # controller.{nodeSelector,affinity,tolerations} (defaults {}, {}, []).
    controller = helm_merge({"nodeSelector": {}, "affinity": {}, "tolerations": []}, values.get("controller") or {})
    return [PodTemplate(f"{release}: controller Deployment", _scheduling(controller), "cpu")]


def _cert_manager(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # cert-manager/cert-manager v1.21.1 deploy/charts/cert-manager: templates/deployment.yaml, webhook-deployment.yaml,
    # cainjector-deployment.yaml (if cainjector.enabled) and startupapicheck-job.yaml (if startupapicheck.enabled)
    # build nodeSelector as `merge global.nodeSelector <component>.nodeSelector` (Sprig merge: the global value wins a
    # clash) and take affinity and tolerations from the component. values.yaml defaults: each component's
    # nodeSelector {kubernetes.io/os: linux}, affinity {}, tolerations [], cainjector and startupapicheck enabled.
    linux = {"nodeSelector": {"kubernetes.io/os": "linux"}, "affinity": {}, "tolerations": []}
    defaults = {
        "global": {"nodeSelector": {}},
        **linux,
        "webhook": linux,
        "cainjector": {"enabled": True, **linux},
        "startupapicheck": {"enabled": True, **linux},
    }
    merged = helm_merge(defaults, values)

    def pod(component: Mapping[str, Any]) -> dict[str, Any]:
        selector = {**(component.get("nodeSelector") or {}), **(merged["global"].get("nodeSelector") or {})}
        return _scheduling({**component, "nodeSelector": selector})

    pods = [
        PodTemplate(f"{release}: controller Deployment", pod(merged), "cpu"),
        PodTemplate(f"{release}: webhook Deployment", pod(merged["webhook"]), "cpu"),
    ]
    if merged["cainjector"]["enabled"]:
        pods.append(PodTemplate(f"{release}: cainjector Deployment", pod(merged["cainjector"]), "cpu"))
    if merged["startupapicheck"]["enabled"]:
        pods.append(PodTemplate(f"{release}: startupapicheck Job", pod(merged["startupapicheck"]), "cpu"))
    return pods


# Node labels NVSentinel's labeler writes at runtime (labeler/pkg/labeler/labeler.go at e002c5dc): no node template
# has them, so selectors on them are left out here; tests/gpu/test_gpu_health.py checks the labeler will write them.
NVSENTINEL_RUNTIME_LABELS = (
    "nvsentinel.dgxc.nvidia.com/driver.installed",
    "nvsentinel.dgxc.nvidia.com/kata.enabled",
    "nvsentinel.dgxc.nvidia.com/dcgm.version",
)


def _without_runtime_labels(spec: dict[str, Any]) -> dict[str, Any]:
    selector = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k not in NVSENTINEL_RUNTIME_LABELS}
    return {**spec, "nodeSelector": selector} if selector else {k: v for k, v in spec.items() if k != "nodeSelector"}


# NVIDIA/NVSentinel distros/kubernetes/nvsentinel (read at fork lalitadithya/NVSentinel@e002c5dc, v1.19.0), umbrella
# values.yaml defaults: global.tolerations [{operator: Exists}], the rest empty; enabled by default:
# gpuHealthMonitor, syslogHealthMonitor, labeler, metadataCollector; the others off.
NVSENTINEL_DEFAULTS: dict[str, Any] = {
    "global": {
        "nodeSelector": {},
        "tolerations": [{"operator": "Exists"}],
        "affinity": {},
        "systemNodeSelector": {},
        "systemNodeTolerations": [],
        "gpuHealthMonitor": {"enabled": True},
        "syslogHealthMonitor": {"enabled": True},
        "labeler": {"enabled": True},
        "metadataCollector": {"enabled": True},
        "faultQuarantine": {"enabled": False},
        "nodeDrainer": {"enabled": False},
        "kubernetesObjectMonitor": {"enabled": False},
        "mongodbStore": {"enabled": False},
    },
    "platformConnector": {"tolerations": [], "affinity": {}},
    "mongodb-store": {"mongodb": {"nodeSelector": {}, "tolerations": [], "jobTolerations": []}, "job": {}},
}
_DRIVER_INSTALLED = {"nvsentinel.dgxc.nvidia.com/driver.installed": "true"}
# Node agents: switch -> (subchart, the labels its DaemonSet selects besides the values' nodeSelector).
NVSENTINEL_AGENTS = {
    "syslogHealthMonitor": (
        "syslog-health-monitor",
        {**_DRIVER_INSTALLED, "nvsentinel.dgxc.nvidia.com/kata.enabled": "false"},
    ),
    "metadataCollector": ("metadata-collector", {"nvidia.com/gpu.present": "true", **_DRIVER_INSTALLED}),
    "gpuHealthMonitor": ("gpu-health-monitor", {"nvsentinel.dgxc.nvidia.com/dcgm.version": "4.x"}),
}
# Controllers: switch -> subchart.
NVSENTINEL_CONTROLLERS = {
    "labeler": "labeler",
    "faultQuarantine": "fault-quarantine",
    "nodeDrainer": "node-drainer",
    "kubernetesObjectMonitor": "kubernetes-object-monitor",
}


def _nvsentinel(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # NVIDIA/NVSentinel distros/kubernetes/nvsentinel (read at fork lalitadithya/NVSentinel@e002c5dc, v1.19.0):
    # - templates/daemonset.yaml (platform-connectors): tolerations `global.tolerations | default
    #   platformConnector.tolerations`, affinity platformConnector.affinity, no nodeSelector;
    # - node agents, each `global.X | default <subchart>.X` for nodeSelector (appended to fixed labels), affinity and
    #   tolerations: syslog-health-monitor daemonset-regular (driver.installed, kata.enabled=false; the kata
    #   DaemonSet selects kata.enabled=true, which the labeler never writes on our nodes), metadata-collector
    #   (nvidia.com/gpu.present=true, driver.installed), gpu-health-monitor daemonset-dcgm-4.x/3.x (dcgm.version);
    # - controllers labeler, fault-quarantine, node-drainer, kubernetes-object-monitor: nodeSelector
    #   `global.systemNodeSelector | default own`, affinity `global.affinity | default own`, tolerations
    #   `global.systemNodeTolerations | default own`;
    # - mongodb-store: Bitnami mongodb 16.2.2 replicaset/statefulset.yaml reads mongodb.{nodeSelector,tolerations} and
    #   a soft pod anti-affinity preset (a preference, no filter); templates/jobs.yaml `job.nodeSelector | default
    #   mongodb.nodeSelector`, `job.tolerations | default mongodb.jobTolerations`.
    merged = helm_merge(NVSENTINEL_DEFAULTS, values)
    glob = merged["global"]
    connector = merged["platformConnector"]
    connector_spec = {"tolerations": glob["tolerations"] or connector["tolerations"], "affinity": connector["affinity"]}
    pods = [PodTemplate(f"{release}: platform-connectors DaemonSet", _scheduling(connector_spec), "every", True)]
    for switch, (chart, fixed) in NVSENTINEL_AGENTS.items():
        if glob[switch]["enabled"]:
            agent = _nvsentinel_agent(merged, chart, fixed)
            pods.append(PodTemplate(f"{release}: {chart} DaemonSet", agent, "gpu", daemon=True))
    for switch, chart in NVSENTINEL_CONTROLLERS.items():
        if glob[switch]["enabled"]:
            pods.append(PodTemplate(f"{release}: {chart} Deployment", _nvsentinel_controller(merged, chart), "cpu"))
    if glob["mongodbStore"]["enabled"]:
        pods.extend(_nvsentinel_store(release, merged["mongodb-store"]))
    return pods


def _nvsentinel_agent(merged: Mapping[str, Any], chart: str, fixed: Mapping[str, str]) -> dict[str, Any]:
    """A node agent's scheduling: each key `global.X | default <subchart>.X`, the selector after its fixed labels."""
    glob, own = merged["global"], merged.get(chart) or {}
    spec = {
        "nodeSelector": {**fixed, **(glob["nodeSelector"] or own.get("nodeSelector") or {})},
        "affinity": glob["affinity"] or own.get("affinity") or {},
        "tolerations": glob["tolerations"] or own.get("tolerations") or [],
    }
    return _without_runtime_labels(_scheduling(spec))


def _nvsentinel_controller(merged: Mapping[str, Any], chart: str) -> dict[str, Any]:
    """A controller's scheduling: the `global.systemNode*` keys, else the subchart's own."""
    glob, own = merged["global"], merged.get(chart) or {}
    spec = {
        "nodeSelector": glob["systemNodeSelector"] or own.get("nodeSelector") or {},
        "affinity": glob["affinity"] or own.get("affinity") or {},
        "tolerations": glob["systemNodeTolerations"] or own.get("tolerations") or [],
    }
    return _scheduling(spec)


def _nvsentinel_store(release: str, store: Mapping[str, Any]) -> list[PodTemplate]:
    """The MongoDB StatefulSet and its setup Jobs (the Jobs fall back to the database's selector)."""
    mongodb, job = store["mongodb"], store.get("job") or {}
    database = {"nodeSelector": mongodb["nodeSelector"], "tolerations": mongodb["tolerations"]}
    jobs = {
        "nodeSelector": job.get("nodeSelector") or mongodb["nodeSelector"],
        "tolerations": job.get("tolerations") or mongodb["jobTolerations"],
    }
    return [
        PodTemplate(f"{release}: mongodb StatefulSet", _scheduling(database), "cpu"),
        PodTemplate(f"{release}: mongodb setup Jobs", _scheduling(jobs), "cpu"),
    ]


def _dra_driver(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # NVIDIA/k8s-dra-driver-gpu v0.4.0 deployments/helm/dra-driver-nvidia-gpu: values.yaml defaults below;
    # templates/kubeletplugin.yaml (DaemonSet when computeDomains or gpus are enabled) and templates/controller.yaml
    # (Deployment when computeDomains are enabled) read `<component>.{nodeSelector,affinity,tolerations}`. The IMEX
    # daemon the controller creates per ComputeDomain tolerates every taint and selects a label the controller sets.
    defaults = {
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
        "controller": {
            "nodeSelector": {},
            "tolerations": [
                _toleration("node-role.kubernetes.io/control-plane"),
                _toleration("node-role.kubernetes.io/master"),
                {"key": "CriticalAddonsOnly", "operator": "Exists"},
            ],
            "affinity": {},
        },
        "kubeletPlugin": {
            "nodeSelector": {},
            "tolerations": [_toleration("nvidia.com/gpu")],
            "affinity": _required_terms(
                [_in("feature.node.kubernetes.io/pci-10de.present", "true")],
                [_in("feature.node.kubernetes.io/pci-0302_10de.present", "true")],
                [_in("feature.node.kubernetes.io/pci-0300_10de.present", "true")],
                [_in("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA")],
                [_in("nvidia.com/gpu.present", "true")],
            ),
        },
    }
    merged = helm_merge(defaults, values)
    resources = merged["resources"]
    pods: list[PodTemplate] = []
    if resources["computeDomains"]["enabled"]:
        pods.append(PodTemplate(f"{release}: controller Deployment", _scheduling(merged["controller"]), "cpu"))
    if resources["computeDomains"]["enabled"] or resources["gpus"]["enabled"]:
        plugin = _scheduling(merged["kubeletPlugin"])
        pods.append(PodTemplate(f"{release}: kubelet plugin DaemonSet", plugin, "nvlink", daemon=True))
    return pods


def _istio_base(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # istio/istio 1.30.3 (56df41f6) manifests/charts/base/templates: CRDs, webhook configuration, a service
    # account; no workload.
    return []


def _istiod(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # istio/istio 1.30.3 manifests/charts/istio-control/istio-discovery/templates/deployment.yaml: nodeSelector and
    # affinity from values (default {}), tolerations = `cni.istio.io/not-ready` Exists + values.tolerations.
    merged = helm_merge({"nodeSelector": {}, "affinity": {}, "tolerations": []}, values)
    spec = _scheduling(merged)
    spec["tolerations"] = [{"key": "cni.istio.io/not-ready", "operator": "Exists"}, *merged["tolerations"]]
    return [PodTemplate(f"{release}: istiod Deployment", spec, "cpu")]


def _inferencepool(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # kubernetes-sigs/gateway-api-inference-extension v1.5.0 (df9f8909) config/charts/epplib/templates/
    # _deployment.yaml: affinity and tolerations from inferenceExtension (defaults {} and []); no nodeSelector key.
    epp = helm_merge({"affinity": {}, "tolerations": []}, values.get("inferenceExtension") or {})
    return [PodTemplate(f"{release}: endpoint picker Deployment", _scheduling(epp), "cpu")]


def _lws(release: str, values: Mapping[str, Any]) -> list[PodTemplate]:
    # kubernetes-sigs/lws v0.10.0 (2161f38f) charts/lws/templates/manager/deployment.yaml: nodeSelector, affinity,
    # tolerations from values (defaults {}, {}, []).
    merged = helm_merge({"nodeSelector": {}, "affinity": {}, "tolerations": []}, values)
    return [PodTemplate(f"{release}: controller-manager Deployment", _scheduling(merged), "cpu")]


CHART_READERS: dict[str, ChartReader] = {
    "nvidia-device-plugin": ChartReader(
        frozenset(
            {
                "0.17.0",
                "0.17.1",
                "0.17.2",
                "0.17.3",
                "0.17.4",
                "0.18.0",
                "0.18.1",
                "0.18.2",
                "0.19.0",
                "0.19.1",
                "0.19.2",
                "0.19.3",
                "0.20.0",
            }
        ),
        _device_plugin,
    ),
    "gpu-operator": ChartReader(
        frozenset(
            {
                "v25.3.1",
                "v25.3.2",
                "v25.3.3",
                "v25.3.4",
                "v25.10.0",
                "v25.10.1",
                "v26.3.0",
                "v26.3.1",
                "v26.3.2",
                "v26.3.3",
                "v26.7.0",
            }
        ),
        _gpu_operator,
    ),
    "network-operator": ChartReader(frozenset({"24.10.0", "24.10.1", "26.4.0", "26.4.1"}), _network_operator),
    "gpu-operator-charts": ChartReader(frozenset({"v1.5.1"}), _amd_gpu_operator),
    "dcgm-exporter": ChartReader(
        frozenset(
            {
                "4.0.1",
                "4.0.3",
                "4.0.4",
                "4.1.0",
                "4.1.1",
                "4.1.3",
                "4.2.0",
                "4.4.0",
                "4.4.1",
                "4.5.0",
                "4.5.2",
                "4.6.0",
                "4.7.1",
                "4.8.0",
                "4.8.1",
                "4.8.2",
            }
        ),
        _dcgm_exporter,
    ),
    "oci://mcr.microsoft.com/microsoft.azuremanagedlustre/azurelustre-csi-driver": ChartReader(
        frozenset({"0.6.0"}), _lustre_csi
    ),
    "oci://registry.k8s.io/kueue/charts/kueue": ChartReader(frozenset({"0.19.2"}), _kueue),
    "oci://registry.k8s.io/jobset/charts/jobset": ChartReader(frozenset({"0.12.0"}), _jobset),
    "cert-manager": ChartReader(frozenset({"v1.21.1"}), _cert_manager),
    "oci://ghcr.io/nvidia/nvsentinel": ChartReader(frozenset({"v1.19.0"}), _nvsentinel),
    "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu": ChartReader(
        frozenset({"0.4.0"}), _dra_driver
    ),
    "base": ChartReader(frozenset({"1.30.3"}), _istio_base),
    "istiod": ChartReader(frozenset({"1.30.3"}), _istiod),
    "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool": ChartReader(
        frozenset({"v1.5.0"}), _inferencepool
    ),
    "oci://registry.k8s.io/lws/charts/lws": ChartReader(frozenset({"0.10.0"}), _lws),
}


def chart_name(release: RecordedResource) -> str:
    return str(release.inputs["chart"])


def release_pod_templates(recording: Recording) -> tuple[list[PodTemplate], list[str]]:
    """Pods of every Helm release, and the releases no reader covers (unknown chart or unread version)."""
    pods: list[PodTemplate] = []
    unread: list[str] = []
    for release in recording.of_type(RELEASE):
        chart, version = chart_name(release), str(release.inputs.get("version"))
        reader = CHART_READERS.get(chart)
        if reader is None or version not in reader.versions:
            unread.append(f"{release.name}: chart {chart} {version}")
            continue
        pods.extend(reader.read(release.name, release.inputs.get("values") or {}))
    return pods, unread


def custom_resource_pod_templates(recording: Recording) -> tuple[list[PodTemplate], list[str]]:
    """Pods that custom resources make their operator create; unknown kinds that carry scheduling keys."""
    pods: list[PodTemplate] = []
    unread: list[str] = []
    for resource in recording.kubernetes_objects():
        kind = resource.type.rsplit(":", 1)[-1]
        if resource.type == NIC_CLUSTER_POLICY:
            # network-operator v24.10.0 and v26.4.1,
            # manifests/state-rdma-shared-device-plugin/0060_rdma-shared-dev-plugin-ds.yaml:
            # spec.tolerations plus its own nvidia.com/gpu toleration, spec.nodeAffinity; its nodeSelector
            # (pci-15b3.present, operator.mofed.wait) is set on nodes by NFD and the operator: not modelled.
            spec = resource.inputs.get("spec") or {}
            pod = {
                "tolerations": [*(spec.get("tolerations") or []), _toleration("nvidia.com/gpu")],
                **({"affinity": {"nodeAffinity": spec["nodeAffinity"]}} if spec.get("nodeAffinity") else {}),
            }
            pods.append(
                PodTemplate(f"NicClusterPolicy {resource.name}: RDMA shared device plugin", pod, "infiniband", True)
            )
        elif resource.type == RESOURCE_FLAVOR:
            # Kueue v0.19.2 pkg/podset: an admitted pod gets the flavor's nodeLabels as nodeSelector and its
            # tolerations appended; the flavor of a GPU pool must land those pods on that pool's nodes.
            spec = resource.inputs.get("spec") or {}
            pool = (spec.get("nodeLabels") or {}).get("gpu-pool")
            pod = {"nodeSelector": spec.get("nodeLabels") or {}, "tolerations": spec.get("tolerations") or []}
            runs_on = f"pool:{pool}" if pool else None
            pods.append(PodTemplate(f"ResourceFlavor {resource.name}: admitted pods", pod, runs_on))
        elif (
            kind not in POD_SPEC_PATHS
            and kind not in MULTI_POD_SPEC_PATHS
            and _mentions_scheduling(resource.inputs.get("spec"))
        ):
            unread.append(f"{resource.type} {resource.name}")
    return pods, unread


def _mentions_scheduling(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(k in SCHEDULING_KEYS or k == "nodeAffinity" or _mentions_scheduling(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_mentions_scheduling(v) for v in value)
    return False


# ---------------------------------------------------------------- the check


@dataclass
class SchedulingCheck:
    """Every pod template against every node template of the stack."""

    nodes: list[NodeTemplate]
    pods: list[PodTemplate]
    infiniband_pools: set[str]
    """Configured names (`gpu-pool` label) of the pools that use InfiniBand."""
    unread: list[str] = field(default_factory=list)

    @property
    def user_nodes(self) -> list[NodeTemplate]:
        return [n for n in self.nodes if not n.system]

    def must_run_on(self, pod: PodTemplate) -> list[NodeTemplate]:
        if pod.runs_on == "gpu":
            return [n for n in self.user_nodes if n.gpu]
        if pod.runs_on == "amd":
            return [n for n in self.user_nodes if n.amd_gpu]
        if pod.runs_on == "infiniband":
            return [n for n in self.user_nodes if n.labels.get("gpu-pool") in self.infiniband_pools]
        if pod.runs_on == "nvlink":
            return [n for n in self.user_nodes if n.multi_node_nvlink]
        if pod.runs_on == "every":
            return self.user_nodes
        if pod.runs_on == "cpu":
            return [n for n in self.user_nodes if not n.gpu and not n.amd_gpu]
        if pod.runs_on and pod.runs_on.startswith("pool:"):
            return [n for n in self.user_nodes if n.labels.get("gpu-pool") == pod.runs_on.removeprefix("pool:")]
        return []

    def problems(self) -> list[str]:
        found = [f"{what}: no reader; read its templates at that version and describe its pods" for what in self.unread]
        for pod in self.pods:
            fits = [n.pool for n in self.user_nodes if pod_fits_node(pod.spec, n.labels, n.taints)]
            if not fits:
                found.append(f"{pod.source}: fits no user pool, it never runs")
            missed = [n for n in self.must_run_on(pod) if n.pool not in fits]
            found += [f"{pod.source}: must run on pool {n.pool} but {_why_not(pod, n)}" for n in missed]
            if pod.daemon and pod.runs_on in ("gpu", "amd"):
                # A vendor's node agent on another vendor's GPUs finds no device and crash-loops.
                wrong = [n.pool for n in self.user_nodes if (n.amd_gpu if pod.runs_on == "gpu" else n.gpu)]
                found += [
                    f"{pod.source}: selects pool {p}, whose GPUs are another vendor's" for p in wrong if p in fits
                ]
            if pod.daemon or pod.runs_on == "gpu":
                # A DaemonSet runs on every node it selects, a GPU workload may be placed on any GPU node it selects.
                for node in self.user_nodes:
                    selected = selects_node(pod.spec, node.labels)
                    if selected and (pod.daemon or node.gpu) and node not in missed and node.pool not in fits:
                        found.append(f"{pod.source}: selects pool {node.pool} but {_why_not(pod, node)}")
        return sorted(set(found))


def _why_not(pod: PodTemplate, node: NodeTemplate) -> str:
    if not selects_node(pod.spec, node.labels):
        return f"its nodeSelector/affinity do not match the node labels {dict(node.labels)}"
    return f"it does not tolerate the node taints {list(node.taints)} (tolerations {pod.spec.get('tolerations')})"


def scheduling_check(recording: Recording, infiniband_pools: Iterable[str]) -> SchedulingCheck:
    releases, unread_releases = release_pod_templates(recording)
    custom, unread_custom = custom_resource_pod_templates(recording)
    return SchedulingCheck(
        nodes=node_templates(recording),
        pods=[*object_pod_templates(recording), *releases, *custom],
        infiniband_pools=set(infiniband_pools),
        unread=[*unread_releases, *unread_custom],
    )
