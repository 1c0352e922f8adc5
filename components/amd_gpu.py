"""AMD GPU pools: AMD's GPU Operator (device plugin and metrics exporter) and the exporter's PodMonitor.

AKS installs no AMD driver and leaves the AMD GPU Operator to the user (MicrosoftDocs/azure-aks-docs
articles/aks/use-amd-gpus.md at 742aedaa: pools with `gpuProfile.driver: None`, then "Deploy the AMD GPU Operator").
The operator (ROCm/gpu-operator, chart `gpu-operator-charts` v1.5.1, helm-charts-k8s/) turns the chart's default
DeviceConfig into the device plugin (`amd.com/gpu`) and the device-metrics-exporter DaemonSets on the nodes its
selector names. At our values:
- the DeviceConfig selects AMD pools by the platform's `gpu-vendor: amd` label and the chart's default
  `feature.node.kubernetes.io/amd-gpu: "true"`, both set through the pool so nodes carry them from boot; the chart's
  node-feature-discovery and its NFD rule are off (NVIDIA's operator may run its own NFD);
- `driver.enable: false`: the operator uses the amdgpu driver the node image provides (docs/drivers/installation.md,
  "Inbox or Pre-Installed AMD GPU Drivers"). Building AMD's out-of-tree driver needs KMM, cert-manager and a
  registry the in-cluster build pushes to; not set up here;
- KMM and the Argo-based remediation are off, so no cert-manager and no Argo CRDs;
- every operand tolerates every GPU pool taint and runs at an image tag, not `latest`.
Its images are on Docker Hub (`rocm/...`, and the init container's busybox): `AMD_DOCKER_HUB_IMAGES` names them
for the plan's rate-limit warning.
"""

from collections.abc import Sequence
from typing import Any, TypedDict

import pulumi
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

# github.com/ROCm/gpu-operator tag v1.5.1 (2026-07-21, commit 858cf255), newest release; helm-charts-k8s
AMD_GPU_OPERATOR_CHART = ("https://rocm.github.io/gpu-operator", "gpu-operator-charts", "v1.5.1")
AMD_GPU_OPERATOR_NAMESPACE = "kube-amd-gpu"
# Operand images at release tags: the operator's own (chart default controllerManager.manager.image), the device
# plugin ROCm/k8s-device-plugin v1.31.0.10 (tag form as the operator's e2e tests pin it, `1.31.0.6`), the exporter
# ROCm/device-metrics-exporter v1.5.1 (released with operator v1.5.1), busybox as the chart's initContainerImage.
OPERATOR_IMAGE = "docker.io/rocm/amd-gpu-operator:v1.5.1"
DEVICE_PLUGIN_IMAGE = "docker.io/rocm/k8s-device-plugin:1.31.0.10"
METRICS_EXPORTER_IMAGE = "docker.io/rocm/device-metrics-exporter:v1.5.1"
INIT_CONTAINER_IMAGE = "docker.io/library/busybox:1.36"
AMD_DOCKER_HUB_IMAGES = (OPERATOR_IMAGE, DEVICE_PLUGIN_IMAGE, METRICS_EXPORTER_IMAGE, INIT_CONTAINER_IMAGE)
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
    scrape_dependencies: Sequence[pulumi.Resource]
    """What a PodMonitor waits for (the managed Prometheus add-on that brings its CRD)."""
    scrape_interval_seconds: int
    """How often managed Prometheus scrapes the exporter (the DCGM exporter's interval)."""


def amd_gpu_operator_values(pools: Sequence[GpuPoolConfig]) -> dict[str, Any]:
    """Values of gpu-operator-charts v1.5.1 (keys as helm-charts-k8s/values.yaml and templates read them)."""
    tolerations = gpu_tolerations(pools)
    return {
        "node-feature-discovery": {"enabled": False},
        "installdefaultNFDRule": False,
        "kmm": {"enabled": False, "watch": False},
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
                "driver": {"enable": False},
                "commonConfig": {"initContainerImage": INIT_CONTAINER_IMAGE},
                "devicePlugin": {
                    "devicePluginImage": DEVICE_PLUGIN_IMAGE,
                    "devicePluginTolerations": tolerations,
                    # Its labels are not used for scheduling; one image less from Docker Hub.
                    "enableNodeLabeller": False,
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
    """AMD's GPU Operator for the AMD pools and the PodMonitor that feeds its metrics into managed Prometheus."""

    release: k8s.helm.v3.Release
    """The operator release: depend on it for objects that need `amd.com/gpu`."""

    def __init__(self, name: str, args: AmdGpuStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:AmdGpuStack", name, None, opts)
        k8s_opts = args["cluster"].k8s_options(self)
        repo, chart, version = AMD_GPU_OPERATOR_CHART
        self.release = k8s.helm.v3.Release(
            f"{name}-gpu-operator",
            chart=chart,
            version=version,
            repository_opts={"repo": repo},
            namespace=AMD_GPU_OPERATOR_NAMESPACE,
            create_namespace=True,
            values=amd_gpu_operator_values(args["pools"]),
            opts=k8s_opts,
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
