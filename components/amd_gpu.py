"""AMD GPU pools: AMD's GPU Operator with its driver build, device plugin and metrics exporter, and the exporter's
PodMonitor.

Nothing on an AKS MI300X node loads amdgpu for us: AKS "doesn't manage nor automate the installation of GPU drivers"
on AMD pools, which must use `gpuProfile.driver: None` (MicrosoftDocs/azure-aks-docs articles/aks/use-amd-gpus.md at
7cbe8aca), and the node image build carries no AMD driver (Azure/AgentBaker at 06836ee2: `EnableAMDGPU` is declared
in pkg/agent/datamodel/types.go and read by no provisioning script). So the operator installs AMD's out-of-tree
driver itself (ROCm/gpu-operator v1.5.1 docs/drivers/installation.md, "Install out-of-tree AMD GPU Drivers with
Operator"): through its KMM subchart it builds an image of `amdgpu-dkms` for each node kernel in the cluster
(internal/kmmmodule/dockerfiles/DockerfileTemplate.ubuntu; Ubuntu 22.04 and 24.04, kmmmodule.go driverLabels),
pushes it to the platform's registry and loads the module and its firmware on every selected node. What that needs,
all created here:
- cert-manager, for the KMM webhook's self-signed certificate (charts/kmm/templates/serving-cert.yaml);
- a repository in the platform's registry that the build pushes to and the nodes pull from, and a token scoped to
  that repository for the build. Its password is the one step left to the operator of the platform (the plan prints
  it): ACR issues token passwords only through the registry's `generateCredentials` action, which the pinned
  azure-native SDK does not expose, and the registry's admin user stays off;
- `driver.blacklist`, so a node that ever loads the kernel's own amdgpu keeps it out from the next boot on (the
  operator writes the modprobe entry through the node labeller, which is therefore on).
Further, at our values:
- the DeviceConfig selects AMD pools by the platform's `gpu-vendor: amd` label and the chart's default
  `feature.node.kubernetes.io/amd-gpu: "true"`, both set through the pool so nodes carry them from boot; the chart's
  node-feature-discovery and its NFD rule are off (NVIDIA's operator may run its own NFD);
- the Argo-based remediation is off, so no Argo CRDs;
- every operand and the driver build and loader tolerate every GPU pool taint; controllers run on the CPU pool;
  every image runs at a release tag, not `latest`.
Its images are on Docker Hub (`rocm/...`, busybox, and the `ubuntu` base of the driver build): `AMD_DOCKER_HUB_IMAGES`
names them for the plan's rate-limit warning.
"""

from collections.abc import Sequence
from typing import Any, TypedDict

import pulumi
import pulumi_azure_native.containerregistry as containerregistry
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.gpu import GpuPoolConfig
from aks_gpu_platform.config.scheduling import (
    AMD_VENDOR_LABEL,
    cpu_node_selector,
    gpu_tolerations,
)

from . import metrics_labels as labels
from .context import ClusterHandle
from .dcgm_exporter import SCRAPE_LABEL_LIMITS
from .gpu_health import cert_manager_release

# github.com/ROCm/gpu-operator tag v1.5.1 (2026-07-21, commit 858cf255), newest release; helm-charts-k8s
AMD_GPU_OPERATOR_CHART = ("https://rocm.github.io/gpu-operator", "gpu-operator-charts", "v1.5.1")
AMD_GPU_OPERATOR_NAMESPACE = "kube-amd-gpu"
# Operand images at release tags: the operator's own (chart default controllerManager.manager.image), the device
# plugin ROCm/k8s-device-plugin v1.31.0.10 (tag form as the operator's e2e tests pin it, `1.31.0.6`) and its node
# labeller (`labeller-<version>`, docs/specialized_networks/airgapped-install.md), the exporter
# ROCm/device-metrics-exporter v1.5.1 (released with operator v1.5.1), busybox as the chart's initContainerImage.
OPERATOR_IMAGE = "docker.io/rocm/amd-gpu-operator:v1.5.1"
DEVICE_PLUGIN_IMAGE = "docker.io/rocm/k8s-device-plugin:1.31.0.10"
NODE_LABELLER_IMAGE = "docker.io/rocm/k8s-device-plugin:labeller-1.31.0.10"
METRICS_EXPORTER_IMAGE = "docker.io/rocm/device-metrics-exporter:v1.5.1"
INIT_CONTAINER_IMAGE = "docker.io/library/busybox:1.36"
# KMM at the operator's release tag (airgapped-install.md lists kernel-module-management-* at the operator's
# `<version>`; the chart's charts/kmm/values.yaml says `latest`). The build runs kaniko at the chart's pin
# (relatedImageBuild) on the Docker Hub `ubuntu:<node OS version>` base (DockerfileTemplate.ubuntu, baseImageRegistry
# docker.io): both AKS Ubuntu versions are named so the plan can warn about their pulls.
KMM_TAG = "v1.5.1"
KMM_OPERATOR_IMAGE = "docker.io/rocm/kernel-module-management-operator"
KMM_WEBHOOK_IMAGE = "docker.io/rocm/kernel-module-management-webhook-server"
KMM_WORKER_IMAGE = f"docker.io/rocm/kernel-module-management-worker:{KMM_TAG}"
KMM_SIGNER_IMAGE = f"docker.io/rocm/kernel-module-management-signimage:{KMM_TAG}"
KMM_BUILDER_IMAGE = "gcr.io/kaniko-project/executor:v1.23.2"
DRIVER_BUILD_BASE_IMAGES = ("docker.io/ubuntu:22.04", "docker.io/ubuntu:24.04")
AMD_DOCKER_HUB_IMAGES = (
    OPERATOR_IMAGE,
    DEVICE_PLUGIN_IMAGE,
    NODE_LABELLER_IMAGE,
    METRICS_EXPORTER_IMAGE,
    INIT_CONTAINER_IMAGE,
    f"{KMM_OPERATOR_IMAGE}:{KMM_TAG}",
    f"{KMM_WEBHOOK_IMAGE}:{KMM_TAG}",
    KMM_WORKER_IMAGE,
    *DRIVER_BUILD_BASE_IMAGES,
)
# The amdgpu release the build installs: the chart's default deviceConfig.spec.driver.version at v1.5.1.
AMDGPU_DRIVER_VERSION = "30.20.1"
# The driver image lives in the platform's registry: the build pushes it as `<repository>:<os>-<kernel>-<version>`
# (kmmmodule.go addNodeInfoSuffixToImageTag) with the token below; the nodes pull it with the same secret.
DRIVER_REPOSITORY = "amdgpu-driver"
DRIVER_BUILD_TOKEN = "amdgpu-driver-build"
DRIVER_REGISTRY_SECRET = "amdgpu-driver-registry"
# ACR scope-map actions: pull, push and the manifest lookup KMM does before it builds.
DRIVER_REPOSITORY_ACTIONS = [
    f"repositories/{DRIVER_REPOSITORY}/content/read",
    f"repositories/{DRIVER_REPOSITORY}/content/write",
    f"repositories/{DRIVER_REPOSITORY}/metadata/read",
]
# The chart's default DeviceConfig is named `default` (templates/default-deviceconfig.yaml); the operator labels the
# exporter pods `daemonset-name: <DeviceConfig>` and `app.kubernetes.io/name: metrics-exporter`, container
# `metrics-exporter-container`, port `exporter-port` = spec.metricsExporter.port (internal/metricsexporter/
# metricsexporter.go at v1.5.1).
DEVICE_CONFIG_NAME = "default"
EXPORTER_POD_LABELS = {"daemonset-name": DEVICE_CONFIG_NAME, "app.kubernetes.io/name": "metrics-exporter"}
EXPORTER_PORT_NAME = "exporter-port"
EXPORTER_PORT = 5000


class AmdGpuStackArgs(TypedDict):
    pools: Sequence[GpuPoolConfig]
    """Every GPU pool: the operands tolerate all their taints; the DeviceConfig selects the AMD ones."""
    cluster: ClusterHandle
    """The cluster the operator runs in."""
    registry_name: pulumi.Input[str]
    """The platform's container registry, which holds the built driver images."""
    registry_login_server: pulumi.Input[str]
    """Its login server (`<name>.azurecr.io`)."""
    scrape_dependencies: Sequence[pulumi.Resource]
    """What a PodMonitor waits for (the managed Prometheus add-on that brings its CRD)."""
    scrape_interval_seconds: int
    """How often managed Prometheus scrapes the exporter (the DCGM exporter's interval)."""


def driver_secret_commands(registry_name: str) -> list[str]:
    """The commands that give the driver build its registry password: the one step the program cannot take."""
    return [
        f"az acr token credential generate --registry {registry_name} --name {DRIVER_BUILD_TOKEN} --password1 "
        "--query 'passwords[0].value' --output tsv",
        f"kubectl create secret docker-registry {DRIVER_REGISTRY_SECRET} --namespace {AMD_GPU_OPERATOR_NAMESPACE} "
        f"--docker-server {registry_name}.azurecr.io --docker-username {DRIVER_BUILD_TOKEN} "
        "--docker-password <that password>",
    ]


def kmm_values() -> dict[str, Any]:
    """The KMM subchart (charts/kmm at v1.5.1): pinned images, controller and webhook on the CPU pool."""
    cpu = cpu_node_selector()
    return {
        "enabled": True,
        "watch": True,
        "controller": {
            "nodeSelector": cpu,
            "manager": {
                "image": {"repository": KMM_OPERATOR_IMAGE, "tag": KMM_TAG},
                "env": {
                    "relatedImageBuild": KMM_BUILDER_IMAGE,
                    "relatedImageSign": KMM_SIGNER_IMAGE,
                    "relatedImageWorker": KMM_WORKER_IMAGE,
                },
            },
        },
        "webhookServer": {
            "nodeSelector": cpu,
            "webhookServer": {"image": {"repository": KMM_WEBHOOK_IMAGE, "tag": KMM_TAG}},
        },
    }


def amd_gpu_operator_values(pools: Sequence[GpuPoolConfig], registry_login_server: pulumi.Input[str]) -> dict[str, Any]:
    """Values of gpu-operator-charts v1.5.1 (keys as helm-charts-k8s/values.yaml and templates read them)."""
    tolerations = gpu_tolerations(pools)
    return {
        "node-feature-discovery": {"enabled": False},
        "installdefaultNFDRule": False,
        "kmm": kmm_values(),
        "remediation": {"enabled": False, "installCRDs": False},
        "controllerManager": {
            "manager": {"image": {"repository": OPERATOR_IMAGE.rsplit(":", 1)[0], "tag": "v1.5.1"}},
            # The controller stays on the CPU pool instead of keeping a GPU node awake.
            "nodeSelector": cpu_node_selector(),
        },
        "deviceConfig": {
            "spec": {
                # Helm merges maps, so the chart's default NFD label stays in the selector next to ours: AMD
                # pools carry both from boot (config/scheduling.py vendor_node_labels).
                "selector": dict([AMD_VENDOR_LABEL]),
                "driver": {
                    "enable": True,
                    "blacklist": True,
                    "version": AMDGPU_DRIVER_VERSION,
                    # No tag: the operator appends one per OS, kernel and driver version.
                    "image": pulumi.Output.concat(registry_login_server, "/", DRIVER_REPOSITORY),
                    "imageRegistrySecret": {"name": DRIVER_REGISTRY_SECRET},
                    # KMM's build and module-loader pods run on the GPU nodes.
                    "tolerations": tolerations,
                },
                "commonConfig": {"initContainerImage": INIT_CONTAINER_IMAGE},
                "devicePlugin": {
                    "devicePluginImage": DEVICE_PLUGIN_IMAGE,
                    "devicePluginTolerations": tolerations,
                    # The node labeller writes the amdgpu blacklist entry (driver.blacklist needs it).
                    "enableNodeLabeller": True,
                    "nodeLabellerImage": NODE_LABELLER_IMAGE,
                    "nodeLabellerTolerations": tolerations,
                },
                "metricsExporter": {
                    "enable": True,
                    "image": METRICS_EXPORTER_IMAGE,
                    "port": EXPORTER_PORT,
                    "tolerations": tolerations,
                    # monitoring.coreos.com, which managed Prometheus ignores: the PodMonitor below scrapes it.
                    "prometheus": {"serviceMonitor": {"enable": False}},
                },
            }
        },
    }


class AmdGpuStack(pulumi.ComponentResource):
    """AMD's GPU Operator (driver build, device plugin, exporter) for the AMD pools, and the exporter's PodMonitor."""

    release: k8s.helm.v3.Release
    """The operator release: depend on it for objects that need `amd.com/gpu`."""

    def __init__(self, name: str, args: AmdGpuStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:AmdGpuStack", name, None, opts)
        k8s_opts = args["cluster"].k8s_options(self)
        self._driver_build_token(name, args)
        cert_manager = cert_manager_release(f"{name}-cert-manager", k8s_opts)
        repo, chart, version = AMD_GPU_OPERATOR_CHART
        self.release = k8s.helm.v3.Release(
            f"{name}-gpu-operator",
            chart=chart,
            version=version,
            repository_opts={"repo": repo},
            namespace=AMD_GPU_OPERATOR_NAMESPACE,
            create_namespace=True,
            values=amd_gpu_operator_values(args["pools"], args["registry_login_server"]),
            # The KMM subchart's Issuer and Certificate need cert-manager's CRDs and webhook first.
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[cert_manager])),
        )
        k8s.apiextensions.CustomResource(
            f"{name}-exporter-pod-monitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": "amd-device-metrics-exporter", "namespace": AMD_GPU_OPERATOR_NAMESPACE},
            spec={
                **SCRAPE_LABEL_LIMITS,
                "selector": {"matchLabels": EXPORTER_POD_LABELS},
                "namespaceSelector": {"matchNames": [AMD_GPU_OPERATOR_NAMESPACE]},
                "podMetricsEndpoints": [
                    {
                        "port": EXPORTER_PORT_NAME,
                        "path": "/metrics",
                        "interval": f"{args['scrape_interval_seconds']}s",
                        "honorLabels": labels.HONOR_LABELS,
                        "relabelings": [
                            {"action": "replace", "targetLabel": "job", "replacement": labels.AMD_SCRAPE_JOB}
                        ],
                        "metricRelabelings": labels.amd_metric_relabelings(),
                    }
                ],
            },
            # The namespace comes with the release; the CRD with the managed Prometheus add-on.
            opts=pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=[self.release, *args["scrape_dependencies"]])
            ),
        )
        self.register_outputs({})

    def _driver_build_token(self, name: str, args: AmdGpuStackArgs) -> None:
        """A registry token that can push and pull the driver repository and nothing else."""
        child = pulumi.ResourceOptions(parent=self)
        scope_map = containerregistry.ScopeMap(
            f"{name}-driver-scope-map",
            resource_group_name=args["cluster"].resource_group_name,
            registry_name=args["registry_name"],
            scope_map_name=DRIVER_BUILD_TOKEN,
            description="AMD GPU Operator driver build: push and pull of the driver image repository",
            actions=DRIVER_REPOSITORY_ACTIONS,
            opts=child,
        )
        containerregistry.Token(
            f"{name}-driver-token",
            resource_group_name=args["cluster"].resource_group_name,
            registry_name=args["registry_name"],
            token_name=DRIVER_BUILD_TOKEN,
            scope_map_id=scope_map.id,
            status=containerregistry.TokenStatus.ENABLED,
            opts=child,
        )
