"""Whether each Helm release can finish: what its chart asks of the cluster, read from the chart at the pinned
version, against the release's `timeout` and what AKS nodes provide.

Per release, from the chart's templates and defaults merged with our values (Helm's merge,
tests/upstream/scheduling.py):
- the pods it creates: images (and so registries) and `runtimeClassName`;
- its readiness worst case, per operation Helm waits on under one `timeout` (pre-install hooks, the release's
  resources, post-install hooks: helm.sh/helm/v3 pkg/action/install.go runs each with the full timeout), built
  from the chart's own numbers (replicas, podManagementPolicy, probe delays, init waits, PVCs) plus the
  environment budgets below.

Pulumi's helm.v3.Release waits for readiness unless `skipAwait`, with `timeout` seconds, default 300
(pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go `defaultTimeoutSeconds`); Jobs that are not hooks
are waited for only with `waitForJobs`.

AKS nodes: no RuntimeClass object exists unless something creates it. AgentBaker configures containerd handlers
(`nvidia`, `runc`, `untrusted` in parts/linux/cloud-init/artifacts/ubuntu/containerd-nvidia.toml) but creates no
RuntimeClass; a pod naming a missing RuntimeClass is refused at admission. The GPU Operator creates RuntimeClass
`operator.runtimeClass` (default `nvidia`) once installed (gpu-operator v26.7.0 controllers/object_controls.go
`RuntimeClasses`, assets/pre-requisites/0200_runtime_class.yaml).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aks_gpu_platform.testing import Recording
from tests.upstream.scheduling import RELEASE, chart_name, helm_merge

DEFAULT_TIMEOUT_SECONDS = 300
RUNTIME_CLASS = "kubernetes:node.k8s.io/v1:RuntimeClass"

# Registries whose anonymous pulls are rate limited, with the published limit. Docker Hub: unauthenticated users
# get 10 pulls per hour per IPv4 address or IPv6 /64 (docs.docker.com/docker-hub/usage/, docker/docs
# content/manuals/docker-hub/usage/_index.md, 2025); AKS nodes share the cluster's egress IPs. nvcr.io, ghcr.io,
# quay.io, registry.k8s.io and mcr.microsoft.com publish no per-IP pull limit of that order.
RATE_LIMITED_REGISTRIES: Mapping[str, str] = {
    "docker.io": "Docker Hub: 10 anonymous pulls per hour per egress IPv4 address",
}

# Budgets of the environment, not of any chart (estimates for a healthy cluster; a slower one needs more margin).
POD_START_SECONDS = 60
"""Schedule, pull the pod's images from their registry and start its containers."""
DISK_SECONDS = 60
"""Azure Disk CSI: create a managed disk for a new PVC and attach it to the node (WaitForFirstConsumer)."""
CERTIFICATE_SECONDS = 30
"""cert-manager issues a self-signed CA and a leaf certificate."""
PROBE_PERIOD_DEFAULT = 10
"""Kubernetes' default `periodSeconds`."""


def ready_after(initial_delay: int, period: int = PROBE_PERIOD_DEFAULT) -> int:
    """Seconds from container start to Ready when the first probe after the delay may just miss."""
    return initial_delay + period


def registry_of(image: str) -> str:
    """The registry an image reference pulls from (Docker's rule: no dot, colon or localhost first means Hub)."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


@dataclass(frozen=True)
class ChartPod:
    source: str
    images: tuple[str, ...]
    runtime_class: str | None = None


@dataclass(frozen=True)
class Stage:
    """One operation Helm waits on under a single `timeout`."""

    name: str
    seconds: int
    basis: str


@dataclass(frozen=True)
class ReleaseModel:
    pods: tuple[ChartPod, ...]
    stages: tuple[Stage, ...]
    runtime_classes: tuple[str, ...] = ()
    """RuntimeClass objects the release makes exist (through the operator it installs)."""

    @property
    def worst_stage(self) -> Stage:
        return max(self.stages, key=lambda s: s.seconds)


@dataclass(frozen=True)
class ReleaseReader:
    versions: frozenset[str]
    read: Callable[[Mapping[str, Any]], ReleaseModel]


def _pod_wait(workloads: str, initial_delay: int, period: int = PROBE_PERIOD_DEFAULT) -> Stage:
    seconds = POD_START_SECONDS + ready_after(initial_delay, period)
    return Stage("resources", seconds, f"{workloads}: pod start + readiness {initial_delay}+{period} s")


def _device_plugin(values: Mapping[str, Any]) -> ReleaseModel:
    # NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin: values.yaml (image
    # nvcr.io/nvidia/k8s-device-plugin, tag = appVersion; runtimeClassName null), daemonset-device-plugin.yml (no
    # readiness probe; no hooks in templates/).
    defaults = {"runtimeClassName": None, "image": {"repository": "nvcr.io/nvidia/k8s-device-plugin", "tag": "v0.20.0"}}
    merged = helm_merge(defaults, values)
    image = f"{merged['image']['repository']}:{merged['image']['tag']}"
    pod = ChartPod("device plugin DaemonSet", (image,), merged["runtimeClassName"])
    return ReleaseModel((pod,), (Stage("resources", POD_START_SECONDS, "DaemonSet without readiness probe"),))


def _gpu_operator(values: Mapping[str, Any]) -> ReleaseModel:
    # NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator: templates/operator.yaml (readiness 5 s, period 10 s),
    # node-feature-discovery subchart (registry.k8s.io/nfd/node-feature-discovery, readiness 5 s); the only hooks
    # are pre-upgrade/pre-delete/post-delete. The operands (driver, toolkit, ...) are the operator's objects, not
    # the release's: Helm does not wait for them. The operator creates RuntimeClass `operator.runtimeClass`.
    # The ClusterPolicy's operands: `<repository>/<image>:<version>` of each values.yaml section (defaults below);
    # validator = the operator image; dcgm and dcgmExporter when on. The driver container's tag ends in the node's OS
    # (resolveDriverTag): tests/gpu/test_grace_blackwell.py checks it.
    def operand(repository: str, image: str, version: str) -> dict[str, str]:
        return {"repository": repository, "image": image, "version": version}

    defaults = {
        "operator": {"runtimeClass": "nvidia", "repository": "nvcr.io/nvidia", "image": "gpu-operator"},
        "validator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator"},
        "dcgm": operand("nvcr.io/nvidia/cloud-native", "dcgm", "4.6.0-1-ubuntu24.04"),
        "node-feature-discovery": {"image": {"repository": "registry.k8s.io/nfd/node-feature-discovery"}},
        "dcgmExporter": {
            "enabled": True,
            **operand("nvcr.io/nvidia/k8s", "dcgm-exporter", "4.6.0-4.8.3-distroless"),
        },
        "driver": {"manager": operand("nvcr.io/nvidia/cloud-native", "k8s-driver-manager", "v0.12.0")},
        "toolkit": operand("nvcr.io/nvidia/k8s", "container-toolkit", "v1.20.0"),
        "devicePlugin": operand("nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        "gfd": operand("nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        "migManager": operand("nvcr.io/nvidia/cloud-native", "k8s-mig-manager", "v0.15.0"),
    }
    merged = helm_merge(defaults, values)

    def joined(section: Mapping[str, Any]) -> str:
        return f"{section['repository']}/{section['image']}:{section['version']}"

    # The operator and the validator default their version to the chart's appVersion.
    operator, validator = ({**merged[k], "version": "v26.7.0"} for k in ("operator", "validator"))
    sections = [merged["driver"]["manager"], *(merged[k] for k in ("toolkit", "devicePlugin", "gfd", "migManager"))]
    operands = [joined(s) for s in sections] + [joined(validator)]
    if merged["dcgmExporter"]["enabled"]:
        operands += [joined(merged["dcgm"]), joined(merged["dcgmExporter"])]
    nfd = merged["node-feature-discovery"]["image"]["repository"]
    pods = (
        ChartPod("operator Deployment", (joined(operator),)),
        # The subchart's image tag defaults to its appVersion (charts/node-feature-discovery/Chart.yaml: v0.19.0).
        ChartPod("node-feature-discovery", (f"{nfd}:v0.19.0",)),
        ChartPod("operand DaemonSets", tuple(operands)),
    )
    return ReleaseModel(pods, (_pod_wait("operator, NFD", 5),), (merged["operator"]["runtimeClass"],))


# ROCm/gpu-operator v1.5.1 helm-charts-k8s values.yaml (and the kmm subchart's): the images and switches read below.
AMD_GPU_OPERATOR_DEFAULTS: dict[str, Any] = {
    "node-feature-discovery": {"enabled": True},
    "kmm": {
        "enabled": True,
        "controller": {
            "manager": {
                "image": {"repository": "docker.io/rocm/kernel-module-management-operator", "tag": "latest"},
                "env": {
                    "relatedImageBuild": "gcr.io/kaniko-project/executor:v1.23.2",
                    "relatedImageWorker": "docker.io/rocm/kernel-module-management-worker:latest",
                },
            }
        },
        "webhookServer": {
            "webhookServer": {
                "image": {"repository": "docker.io/rocm/kernel-module-management-webhook-server", "tag": "latest"}
            }
        },
    },
    "controllerManager": {"manager": {"image": {"repository": "docker.io/rocm/amd-gpu-operator", "tag": "v1.5.1"}}},
    "deviceConfig": {
        "spec": {
            "driver": {"enable": False, "imageBuild": {}},
            "commonConfig": {"initContainerImage": "busybox:1.36"},
            "devicePlugin": {
                "devicePluginImage": "rocm/k8s-device-plugin:latest",
                "enableNodeLabeller": True,
                "nodeLabellerImage": "rocm/k8s-device-plugin:labeller-latest",
            },
            "metricsExporter": {"enable": True, "image": "docker.io/rocm/device-metrics-exporter:latest"},
        }
    },
}


def _amd_gpu_operator(values: Mapping[str, Any]) -> ReleaseModel:
    # ROCm/gpu-operator v1.5.1 helm-charts-k8s: templates/deployment.yaml (controller image controllerManager.manager
    # .image, readiness initialDelaySeconds 5, periodSeconds 10); hooks are pre-upgrade/pre-rollback and
    # pre-/post-delete only; node-feature-discovery subchart (registry.k8s.io/nfd) when enabled; kmm subchart
    # (kmm.enabled) charts/kmm/templates/deployment.yaml: controller and webhook images from
    # {controller.manager,webhookServer.webhookServer}.image (values.yaml tag latest), both readiness 5 s, period
    # 10 s, the webhook mounting the certificate cert-manager issues (serving-cert.yaml); the controller's
    # RELATED_IMAGE_{BUILD,WORKER} name the kaniko build and module-loader images. The DeviceConfig's operands
    # (device plugin, node labeller, exporter, init container, driver build on the `<baseImageRegistry>/ubuntu:<node
    # OS version>` base of internal/kmmmodule/dockerfiles/DockerfileTemplate.ubuntu, baseImageRegistry default
    # docker.io) are the operator's objects: Helm does not wait for them, but the nodes pull them. No
    # runtimeClassName anywhere (AMD's container runtime needs none).
    merged = helm_merge(AMD_GPU_OPERATOR_DEFAULTS, values)
    spec = merged["deviceConfig"]["spec"]
    pods = [
        ChartPod("controller-manager Deployment", (_image(merged["controllerManager"]["manager"]),)),
        ChartPod("device plugin DaemonSet", (spec["devicePlugin"]["devicePluginImage"],)),
        ChartPod("init container", (spec["commonConfig"]["initContainerImage"],)),
    ]
    if spec["devicePlugin"]["enableNodeLabeller"]:
        pods.append(ChartPod("node labeller DaemonSet", (spec["devicePlugin"]["nodeLabellerImage"],)))
    if spec["metricsExporter"]["enable"]:
        pods.append(ChartPod("metrics exporter DaemonSet", (spec["metricsExporter"]["image"],)))
    if merged["node-feature-discovery"]["enabled"]:
        pods.append(ChartPod("node-feature-discovery", ("registry.k8s.io/nfd/node-feature-discovery",)))
    stages = [_pod_wait("controller-manager", 5)]
    if merged["kmm"]["enabled"]:
        kmm_pods, kmm_stage = _amd_kmm(merged["kmm"], spec["driver"])
        pods.extend(kmm_pods)
        stages.append(kmm_stage)
    return ReleaseModel(tuple(pods), tuple(stages))


def _image(of: Mapping[str, Any]) -> str:
    return f"{of['image']['repository']}:{of['image']['tag']}"


def _amd_kmm(kmm: Mapping[str, Any], driver: Mapping[str, Any]) -> tuple[list[ChartPod], Stage]:
    """KMM's controller and webhook (the webhook waits for its certificate), and with the driver enabled the build
    and module-loader pods the controller starts."""
    manager = kmm["controller"]["manager"]
    pods = [
        ChartPod("KMM controller Deployment", (_image(manager),)),
        ChartPod("KMM webhook Deployment", (_image(kmm["webhookServer"]["webhookServer"]),)),
    ]
    webhook = POD_START_SECONDS + CERTIFICATE_SECONDS + ready_after(5)
    stage = Stage("resources", webhook, "KMM webhook: pod start + certificate + readiness 5+10 s")
    if driver["enable"]:
        registry = driver["imageBuild"].get("baseImageRegistry", "docker.io")
        bases = tuple(f"{registry}/ubuntu:{version}" for version in ("22.04", "24.04"))
        env = manager["env"]
        pods.append(ChartPod("driver build pod", (env["relatedImageBuild"], *bases)))
        pods.append(ChartPod("module loader pod", (env["relatedImageWorker"],)))
    return pods, stage


def _network_operator(values: Mapping[str, Any]) -> ReleaseModel:
    # Mellanox/network-operator v26.4.1 deployment/network-operator: templates/upgrade-crd-hook.yaml is a
    # pre-install,pre-upgrade Job (kubectl apply of the CRDs); templates/operator.yaml readiness 5 s; images
    # nvcr.io/nvidia/cloud-native/network-operator and nvcr.io/nvidia/mellanox/node-feature-discovery.
    # The operator Deployment and the CRD hooks run `operator.repository/operator.image:<appVersion>`; the NFD
    # subchart `node-feature-discovery.image.repository:tag` (values.yaml).
    defaults = {
        "operator": {"repository": "nvcr.io/nvidia/cloud-native", "image": "network-operator"},
        "node-feature-discovery": {
            "image": {"repository": "nvcr.io/nvidia/mellanox/node-feature-discovery", "tag": "network-operator-v26.4.1"}
        },
    }
    merged = helm_merge(defaults, values)
    operator = f"{merged['operator']['repository']}/{merged['operator']['image']}:v26.4.1"
    nfd = merged["node-feature-discovery"]["image"]
    pods = (
        ChartPod("operator Deployment", (operator,)),
        ChartPod("CRD upgrade hook Job", (operator,)),
        ChartPod("node-feature-discovery", (f"{nfd['repository']}:{nfd['tag']}",)),
    )
    hook = Stage("pre-install hooks", POD_START_SECONDS, "CRD upgrade Job: pod start, kubectl apply")
    return ReleaseModel(pods, (hook, _pod_wait("operator, NFD", 5)))


def _dcgm_exporter(values: Mapping[str, Any]) -> ReleaseModel:
    # NVIDIA/dcgm-exporter 4.5.3-4.8.2 deployment/: values.yaml (runtimeClassName "", readinessProbe
    # initialDelaySeconds 45, no periodSeconds), templates/daemonset.yaml; no hooks.
    merged = helm_merge({"image": {"repository": "nvcr.io/nvidia/k8s/dcgm-exporter"}, "runtimeClassName": ""}, values)
    image = f"{merged['image']['repository']}:{merged['image'].get('tag', '')}"
    pod = ChartPod("exporter DaemonSet", (image,), merged["runtimeClassName"] or None)
    return ReleaseModel((pod,), (_pod_wait("exporter DaemonSet", 45),))


def _lustre_csi(values: Mapping[str, Any]) -> ReleaseModel:
    # kubernetes-sigs/azurelustre-csi-driver charts/latest/azurelustre-csi-driver at f1cffbfe (the 0.6.0 chart):
    # templates/node-daemonset-noble.yaml: the lustre-loader sidecar installs the Lustre client before the driver
    # starts, startupProbe initialDelaySeconds 10 + failureThreshold 120 x periodSeconds 5; then the driver's
    # readiness 5 s, period 5 s. Images from mcr.microsoft.com; the only hook is pre-delete.
    loader = 10 + 120 * 5
    seconds = POD_START_SECONDS + loader + ready_after(5, 5)
    pods = (ChartPod("CSI controller and node plugins", ("mcr.microsoft.com/oss/v2/kubernetes-csi/azurelustre-csi",)),)
    stage = Stage("resources", seconds, f"node plugin: pod start + Lustre client loader up to {loader} s + readiness")
    return ReleaseModel(pods, (stage,))


def _kueue(values: Mapping[str, Any]) -> ReleaseModel:
    # kubernetes-sigs/kueue v0.19.2 charts/kueue: values.yaml readinessProbe initialDelaySeconds 5; no hooks.
    # The published chart's image (hack/helm-chart-package.sh stamps registry.k8s.io/kueue and the tag).
    image = helm_merge(
        {"controllerManager": {"manager": {"image": {"repository": "registry.k8s.io/kueue/kueue", "tag": "v0.19.2"}}}},
        values,
    )["controllerManager"]["manager"]["image"]
    pod = ChartPod("controller-manager Deployment", (f"{image['repository']}:{image['tag']}",))
    return ReleaseModel((pod,), (_pod_wait("controller-manager", 5),))


def _jobset(values: Mapping[str, Any]) -> ReleaseModel:
    # kubernetes-sigs/jobset v0.12.0 charts/jobset: templates/controller/deployment.yaml readiness 5 s; no hooks.
    # The published chart's image (hack/helm-chart-package.sh stamps registry.k8s.io/jobset and the tag).
    image = helm_merge({"image": {"repository": "registry.k8s.io/jobset/jobset", "tag": "v0.12.0"}}, values)["image"]
    pod = ChartPod("controller Deployment", (f"{image['repository']}:{image['tag']}",))
    return ReleaseModel((pod,), (_pod_wait("controller", 5),))


def _cert_manager(values: Mapping[str, Any]) -> ReleaseModel:
    # cert-manager/cert-manager v1.21.1 deploy/charts/cert-manager: values.yaml imageRegistry quay.io,
    # imageNamespace jetstack; webhook readiness 5 s, period 5 s; startupapicheck is a post-install hook Job running
    # `check api --wait=<startupapicheck.timeout>` (1m). runtimeClassName: per component, else global (all "").
    # Each image is `<imageRegistry>/<imageNamespace>/cert-manager-<component>` (templates/_helpers.tpl).
    defaults = {
        "global": {"runtimeClassName": ""},
        "startupapicheck": {"timeout": "1m"},
        "imageRegistry": "quay.io",
        "imageNamespace": "jetstack",
    }
    merged = helm_merge(defaults, values)
    runtime = merged["global"]["runtimeClassName"] or None
    components = ("controller", "webhook", "cainjector", "startupapicheck")
    prefix = f"{merged['imageRegistry']}/{merged['imageNamespace']}"
    pods = tuple(ChartPod(c, (f"{prefix}/cert-manager-{c}:v1.21.1",), runtime) for c in components)
    check = merged["startupapicheck"]["timeout"]
    check_seconds = int(check[:-1]) * {"s": 1, "m": 60}[check[-1]]
    stages = (
        _pod_wait("controller, webhook, cainjector", 5, 5),
        Stage("post-install hooks", POD_START_SECONDS + check_seconds, f"startupapicheck: pod start + wait {check}"),
    )
    return ReleaseModel(pods, stages)


def _bitnami(image: Mapping[str, Any]) -> str:
    return f"{image['registry']}/{image['repository']}:{image['tag']}"


# NVIDIA/NVSentinel v1.19.0 charts/mongodb-store/values.yaml and its Bitnami mongodb 16.2.2 subchart: the images,
# members and probes read below.
NVSENTINEL_MONGODB_DEFAULTS: dict[str, Any] = {
    "helperImages": {"kubectl": {"repository": "docker.io/bitnamilegacy/kubectl", "tag": "1.30.6"}},
    "image": {"registry": "docker.io", "repository": "bitnamilegacy/mongodb", "tag": "8.0.3-debian-12-r0"},
    "tls": {
        "enabled": True,
        "image": {"registry": "docker.io", "repository": "bitnamilegacy/nginx", "tag": "1.27.2-debian-12-r2"},
    },
    "metrics": {
        "enabled": True,
        "image": {
            "registry": "docker.io",
            "repository": "bitnamilegacy/mongodb-exporter",
            "tag": "0.41.2-debian-12-r1",
        },
    },
    "replicaCount": 3,
    "podManagementPolicy": "OrderedReady",
    "readinessProbe": {"initialDelaySeconds": 60, "periodSeconds": 10},
    "persistence": {"enabled": True},
}
# The umbrella values.yaml: the switches and runtime classes read below.
NVSENTINEL_DEFAULTS: dict[str, Any] = {
    "global": {
        "metadataCollector": {"enabled": True},
        "gpuHealthMonitor": {"enabled": True},
        "mongodbStore": {"enabled": False},
    },
    "metadata-collector": {"runtimeClassName": "nvidia"},
    "gpu-health-monitor": {"runtimeClassName": ""},
    "mongodb-store": {"mongodb": NVSENTINEL_MONGODB_DEFAULTS},
}


def _nvsentinel(values: Mapping[str, Any]) -> ReleaseModel:
    # NVIDIA/NVSentinel distros/kubernetes/nvsentinel, read at fork lalitadithya/NVSentinel@e002c5dc (v1.19.0):
    # - charts/metadata-collector/values.yaml `runtimeClassName: "nvidia"`, templates/daemonset.yaml sets it when
    #   non-empty; charts/gpu-health-monitor/values.yaml `runtimeClassName: ""` (required only in embedded-mode);
    # - node agents and controllers: ghcr.io/nvidia/nvsentinel/* images; controllers' readiness 5 s, period 10 s;
    # - charts/mongodb-store/values.yaml: Bitnami mongodb 16.2.2 (charts/mongodb) `architecture: replicaset`,
    #   `replicaCount: 3`, readinessProbe initialDelaySeconds 60 (period 10, the subchart default), persistence on
    #   (one PVC per member), podManagementPolicy OrderedReady (subchart values.yaml); init containers
    #   create-mongodb-credentials and create-certmanager-resources (`kubectl wait` for the CA and client
    #   certificates) from helperImages.kubectl, generate-tls-certs from tls.image, log-dir from image; the
    #   exporter sidecar from metrics.image (metrics.enabled); templates/jobs.yaml Job create-mongodb-database
    #   (kubectl, mongosh images) is not a hook.
    # No hooks at our values (nodeConditionCleanup is off). Helm waits for the StatefulSet's members one by one.
    merged = helm_merge(NVSENTINEL_DEFAULTS, values)
    glob = merged["global"]
    ghcr = "ghcr.io/nvidia/nvsentinel"
    pods = [ChartPod("platform-connectors and controllers", (f"{ghcr}/platform-connectors:v1.19.0",))]
    if glob["metadataCollector"]["enabled"]:
        runtime = merged["metadata-collector"]["runtimeClassName"] or None
        pods.append(ChartPod("metadata-collector DaemonSet", (f"{ghcr}/metadata-collector:v1.19.0",), runtime))
    if glob["gpuHealthMonitor"]["enabled"]:
        runtime = merged["gpu-health-monitor"]["runtimeClassName"] or None
        pods.append(ChartPod("gpu-health-monitor DaemonSet", (f"{ghcr}/gpu-health-monitor:v1.19.0",), runtime))
    controllers = _pod_wait("controllers", 5)
    if not glob["mongodbStore"]["enabled"]:
        return ReleaseModel(tuple(pods), (controllers,))
    store, stage = _nvsentinel_store(merged["mongodb-store"]["mongodb"], controllers)
    return ReleaseModel((*pods, store), (stage,))


def _nvsentinel_store(mongodb: Mapping[str, Any], controllers: Stage) -> tuple[ChartPod, Stage]:
    """The MongoDB StatefulSet and the wait for it: certificates, then each member in turn, then the controllers
    (they read the store, so become ready after it)."""
    kubectl = mongodb["helperImages"]["kubectl"]
    images = [f"{kubectl['repository']}:{kubectl['tag']}", _bitnami(mongodb["image"])]
    if mongodb["tls"]["enabled"]:
        images.append(_bitnami(mongodb["tls"]["image"]))
    if mongodb["metrics"]["enabled"]:
        images.append(_bitnami(mongodb["metrics"]["image"]))
    pod = ChartPod("mongodb StatefulSet", tuple(images), mongodb.get("runtimeClassName") or None)
    probe = mongodb["readinessProbe"]
    disk = DISK_SECONDS if mongodb["persistence"]["enabled"] else 0
    member = disk + POD_START_SECONDS + ready_after(probe["initialDelaySeconds"], probe["periodSeconds"])
    members = mongodb["replicaCount"] if mongodb["podManagementPolicy"] == "OrderedReady" else 1
    seconds = CERTIFICATE_SECONDS + members * member + controllers.seconds
    basis = (
        f"certificates {CERTIFICATE_SECONDS} s, then {members} MongoDB member(s) one by one x (disk {disk} + pod "
        f"start {POD_START_SECONDS} + readiness {probe['initialDelaySeconds']}+{probe['periodSeconds']} s), then "
        f"the controllers {controllers.seconds} s"
    )
    return pod, Stage("resources", seconds, basis)


def _dra_driver(values: Mapping[str, Any]) -> ReleaseModel:
    # NVIDIA/k8s-dra-driver-gpu v0.4.0 deployments/helm/dra-driver-nvidia-gpu: one image for controller and kubelet
    # plugin (values.yaml image.repository, tag "v" + appVersion); no runtimeClassName in any template; no hooks.
    # templates/kubeletplugin.yaml: the compute-domains container's startupProbe allows failureThreshold 600 x
    # periodSeconds 1 before the DaemonSet pod is Ready; templates/controller.yaml has no readiness probe.
    defaults = {"image": {"repository": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu", "tag": ""}}
    chosen = helm_merge(defaults, values)["image"]
    image = f"{chosen['repository']}:{chosen['tag'] or 'v0.4.0'}"  # an empty tag is "v" + appVersion
    pods = (ChartPod("controller Deployment and kubelet plugin DaemonSet", (image,)),)
    startup = 600 * 1
    stage = Stage(
        "resources", POD_START_SECONDS + startup, f"kubelet plugin: pod start + startupProbe up to {startup} s"
    )
    return ReleaseModel(pods, (stage,))


def _istio_base(values: Mapping[str, Any]) -> ReleaseModel:
    # istio/istio 1.30.3 (56df41f6) manifests/charts/base: CRDs (as templates), webhook configuration, a service
    # account; no pods, no hooks: Helm waits for nothing that starts.
    return ReleaseModel((), (Stage("resources", 0, "CRDs and configuration only, no pods"),))


def _istiod(values: Mapping[str, Any]) -> ReleaseModel:
    # istio/istio 1.30.3 manifests/charts/istio-control/istio-discovery: templates/deployment.yaml image
    # `<hub>/pilot:<tag>` (hub/tag: own values, else global), readinessProbe /ready initialDelaySeconds 1,
    # periodSeconds 3; no hooks. The gateway pods (`<hub>/proxyv2:<tag>`) are istiod's, created from the Gateway
    # after the release, and not waited on.
    merged = helm_merge({"hub": "", "tag": "", "global": {"hub": "registry.istio.io/testing", "tag": "latest"}}, values)
    hub, tag = merged["hub"] or merged["global"]["hub"], merged["tag"] or merged["global"]["tag"]
    pod = ChartPod("istiod Deployment", (f"{hub}/pilot:{tag}", f"{hub}/proxyv2:{tag}"))
    return ReleaseModel((pod,), (_pod_wait("istiod", 1, 3),))


def _inferencepool(values: Mapping[str, Any]) -> ReleaseModel:
    # kubernetes-sigs/gateway-api-inference-extension v1.5.0 (df9f8909) config/charts/inferencepool values.yaml
    # (image registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0) and epplib templates/_deployment.yaml
    # (readinessProbe gRPC, no initial delay, periodSeconds 2); no hooks.
    image = helm_merge(
        {"registry": "registry.k8s.io", "repository": "gateway-api-inference-extension/epp", "tag": "v1.5.0"},
        (values.get("inferenceExtension") or {}).get("image") or {},
    )
    pod = ChartPod("endpoint picker Deployment", (f"{image['registry']}/{image['repository']}:{image['tag']}",))
    return ReleaseModel((pod,), (_pod_wait("endpoint picker", 0, 2),))


def _lws(values: Mapping[str, Any]) -> ReleaseModel:
    # kubernetes-sigs/lws v0.10.0 (2161f38f) charts/lws: values.yaml image.manager (repository
    # registry.k8s.io/lws/lws; tag `main` in git, the release tag once published), templates/manager/
    # deployment.yaml readinessProbe initialDelaySeconds 5, periodSeconds 10; no hooks.
    manager = helm_merge(
        {"repository": "registry.k8s.io/lws/lws", "tag": "main"}, (values.get("image") or {}).get("manager") or {}
    )
    pod = ChartPod("controller-manager Deployment", (f"{manager['repository']}:{manager['tag']}",))
    return ReleaseModel((pod,), (_pod_wait("controller-manager", 5),))


RELEASE_READERS: dict[str, ReleaseReader] = {
    "nvidia-device-plugin": ReleaseReader(frozenset({"0.20.0"}), _device_plugin),
    "gpu-operator": ReleaseReader(frozenset({"v26.7.0"}), _gpu_operator),
    "network-operator": ReleaseReader(frozenset({"26.4.1"}), _network_operator),
    "gpu-operator-charts": ReleaseReader(frozenset({"v1.5.1"}), _amd_gpu_operator),
    "dcgm-exporter": ReleaseReader(frozenset({"4.8.2"}), _dcgm_exporter),
    "oci://mcr.microsoft.com/microsoft.azuremanagedlustre/azurelustre-csi-driver": ReleaseReader(
        frozenset({"0.6.0"}), _lustre_csi
    ),
    "oci://registry.k8s.io/kueue/charts/kueue": ReleaseReader(frozenset({"0.19.2"}), _kueue),
    "oci://registry.k8s.io/jobset/charts/jobset": ReleaseReader(frozenset({"0.12.0"}), _jobset),
    "cert-manager": ReleaseReader(frozenset({"v1.21.1"}), _cert_manager),
    "oci://ghcr.io/nvidia/nvsentinel": ReleaseReader(frozenset({"v1.19.0"}), _nvsentinel),
    "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu": ReleaseReader(
        frozenset({"0.4.0"}), _dra_driver
    ),
    "base": ReleaseReader(frozenset({"1.30.3"}), _istio_base),
    "istiod": ReleaseReader(frozenset({"1.30.3"}), _istiod),
    "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool": ReleaseReader(
        frozenset({"v1.5.0"}), _inferencepool
    ),
    "oci://registry.k8s.io/lws/charts/lws": ReleaseReader(frozenset({"0.10.0"}), _lws),
}


@dataclass(frozen=True)
class ReleaseFacts:
    release: str
    chart: str
    timeout: int
    model: ReleaseModel

    @property
    def rate_limited_images(self) -> list[str]:
        return sorted({i for p in self.model.pods for i in p.images if registry_of(i) in RATE_LIMITED_REGISTRIES})


def release_facts(recording: Recording) -> tuple[list[ReleaseFacts], list[str]]:
    """Every release with its model, and the releases no reader covers (unknown chart or unread version)."""
    facts: list[ReleaseFacts] = []
    unread: list[str] = []
    for release in recording.of_type(RELEASE):
        chart, version = chart_name(release), str(release.inputs.get("version"))
        reader = RELEASE_READERS.get(chart)
        if reader is None or version not in reader.versions:
            unread.append(f"{release.name}: chart {chart} {version}")
            continue
        if release.inputs.get("skipAwait"):
            continue  # nothing is waited for, nothing can time out
        timeout = int(release.inputs.get("timeout") or DEFAULT_TIMEOUT_SECONDS)
        facts.append(ReleaseFacts(release.name, chart, timeout, reader.read(release.inputs.get("values") or {})))
    return facts, unread


def runtime_classes(recording: Recording, facts: list[ReleaseFacts]) -> set[str]:
    """RuntimeClass objects that exist once the stack is up: the ones it creates and the ones its operators do."""
    created = {str((r.inputs.get("metadata") or {}).get("name")) for r in recording.of_type(RUNTIME_CLASS)}
    return created | {name for f in facts for name in f.model.runtime_classes}


def release_problems(recording: Recording, named_in_plan: str) -> list[str]:
    """Why a release could not finish: timeout, RuntimeClass, anonymous pulls nobody was told about."""
    facts, unread = release_facts(recording)
    found = [f"{what}: no release reader; read the chart at that version" for what in unread]
    classes = runtime_classes(recording, facts)
    for f in facts:
        stage = f.model.worst_stage
        if stage.seconds > f.timeout:
            found.append(
                f"{f.release}: waits up to {stage.seconds} s for its {stage.name} ({stage.basis}) but its timeout "
                f"is {f.timeout} s: the first `pulumi up` fails and leaves the release FAILED"
            )
        for pod in f.model.pods:
            if pod.runtime_class and pod.runtime_class not in classes:
                found.append(
                    f"{f.release}: {pod.source} asks for runtimeClassName {pod.runtime_class!r}, which no "
                    f"RuntimeClass provides on AKS (existing: {sorted(classes)}): its pods are refused"
                )
        for image in f.rate_limited_images:
            if image not in named_in_plan:
                limit = RATE_LIMITED_REGISTRIES[registry_of(image)]
                found.append(f"{f.release}: pulls {image} anonymously ({limit}) and the plan does not say so")
    return sorted(found)
