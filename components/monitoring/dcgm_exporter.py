"""NVIDIA's DCGM exporter on every GPU node, and what it collects: every series the alerts, the dashboard
and KEDA read, nothing more."""

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import pinned_tag
from aks_gpu_platform.config.gpu.scheduling import vendor_pod_scheduling
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.monitoring.section import DcgmExporterConfig

from ..network.policies import platform_ingress
from ..shared.workloads import pod_security_labels
from . import metrics_labels as labels
from .registry import DCGM_UPSTREAM

EXPORTER_NAMESPACE = "gpu-monitoring"
EXPORTER_RELEASE = "dcgm-exporter"
DCGM_CHART_REPO = "https://nvidia.github.io/dcgm-exporter/helm-charts"
METRICS_PORT_NAME = "metrics"
METRICS_PORT = 9400
SCRAPE_JOB = labels.SCRAPE_JOB
# Azure drops series above these limits; its PodMonitor template sets exactly these
# (learn.microsoft.com/azure/azure-monitor/containers/prometheus-metrics-scrape-crd, read 2026-12-02).
SCRAPE_LABEL_LIMITS = {"labelLimit": 63, "labelNameLengthLimit": 511, "labelValueLengthLimit": 1023}
GPU_OPERATOR_NAMESPACE = "gpu-operator"
GPU_OPERATOR_EXPORTER_LABELS = {"app": "nvidia-dcgm-exporter"}
COUNTERS_FILE = "/etc/dcgm-exporter/platform-counters.csv"
# The ConfigMap the GPU Operator chart creates from `dcgmExporter.config` (templates/dcgm_exporter_config.yaml
# at v26.7.0); the operator then points DCGM_EXPORTER_COLLECTORS at it instead of the image's
# dcp-metrics-included.csv, which leaves out the ECC, NVLink error and throttling counters the alerts read.
OPERATOR_COUNTERS_CONFIGMAP = "platform-dcgm-counters"
# DCGM exporter 4.8.3 (NVIDIA/dcgm-exporter PR #655; the GPU Operator v26.7.0 default image 4.6.0-4.8.3) writes the
# node as `hostname`, earlier releases as `Hostname`: store it under the contract's name whichever exporter runs.
NODE_LABEL_RELABELINGS: list[dict[str, Any]] = [
    {"sourceLabels": ["hostname"], "regex": "(.+)", "targetLabel": labels.NODE, "action": "replace"},
    {"action": "labeldrop", "regex": "hostname"},
]

# What the exporter collects: every series the alerts, the dashboard and KEDA read, nothing more.
DCGM_COUNTERS = """\
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilisation (%)
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilisation (%)
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (MiB)
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (MiB)
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (C)
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (C)
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (W)
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (MHz)
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered
DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, Total number of single-bit volatile ECC errors
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor pipe is active
DCGM_FI_DEV_ROW_REMAP_FAILURE, gauge, Whether remapping of rows has failed
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_THERMAL_VIOLATION, counter, Throttling duration due to thermal constraints (ns)
DCGM_FI_DEV_POWER_VIOLATION, counter, Throttling duration due to power constraints (ns)
DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, counter, Total number of NVLink data CRC errors
DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, counter, Total number of NVLink recovery errors
"""


def operator_exporter_config() -> dict[str, Any]:
    """The GPU Operator chart's `dcgmExporter.config`: the platform's counters in a ConfigMap the chart creates."""
    return {"name": OPERATOR_COUNTERS_CONFIGMAP, "create": True, "data": DCGM_COUNTERS}


def dcgm_exporter_release(
    name: str,
    exporter: DcgmExporterConfig,
    repository: pulumi.Input[str],
    gpu_pools: Sequence[GpuPoolConfig],
    k8s_opts: pulumi.ResourceOptions,
    runtime_class: str | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.helm.v3.Release:
    """NVIDIA's chart on every GPU node (all GPU pools' taints tolerated), image from our registry, collecting
    the platform's counters. `runtime_class`: the RuntimeClass that gives the pods the driver where containerd's
    default runtime does not (the chart's default, none, relies on AKS's NVIDIA default runtime)."""
    namespace = k8s.core.v1.Namespace(
        f"{name}-namespace",
        metadata={"name": EXPORTER_NAMESPACE, "labels": pod_security_labels("privileged")},
        opts=k8s_opts,
    )
    # The exporter lists every pod on its node: only managed Prometheus (kube-system) scrapes it.
    platform_ingress(name, namespace.metadata["name"], k8s_opts)
    counters = k8s.core.v1.ConfigMap(
        f"{name}-dcgm-counters",
        metadata={"name": "dcgm-exporter-counters", "namespace": EXPORTER_NAMESPACE},
        data={"platform-counters.csv": DCGM_COUNTERS},
        opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[namespace])),
    )
    r = exporter.resources
    return k8s.helm.v3.Release(
        f"{name}-dcgm-exporter",
        name=EXPORTER_RELEASE,
        chart="dcgm-exporter",
        version=exporter.chart_version,
        repository_opts={"repo": DCGM_CHART_REPO},
        namespace=EXPORTER_NAMESPACE,
        values={
            "nameOverride": EXPORTER_RELEASE,
            # The registry caches nvcr.io's repository: the upstream digest pulls through it.
            "image": {"repository": repository, "tag": pinned_tag(DCGM_UPSTREAM, exporter.image_tag)},
            "arguments": ["-f", COUNTERS_FILE],
            "extraConfigMapVolumes": [{"name": "platform-counters", "configMap": {"name": "dcgm-exporter-counters"}}],
            "extraVolumeMounts": [
                {"name": "platform-counters", "mountPath": COUNTERS_FILE, "subPath": "platform-counters.csv"}
            ],
            # The chart's top-level nodeSelector/affinity/tolerations (templates/daemonset.yaml; default: none);
            # DCGM needs NVIDIA's driver, so AMD pools are left out.
            **vendor_pod_scheduling(gpu_pools, "nvidia"),
            "resources": {
                "requests": {"cpu": r.cpu_request, "memory": r.memory_request},
                "limits": {"cpu": r.cpu_limit, "memory": r.memory_limit},
            },
            # The chart's ServiceMonitor is monitoring.coreos.com, which managed Prometheus ignores.
            "serviceMonitor": {"enabled": False},
            # templates/daemonset.yaml at 4.5.3-4.8.2: `{{- if .Values.runtimeClassName }}`.
            **({"runtimeClassName": runtime_class} if runtime_class else {}),
        },
        opts=pulumi.ResourceOptions.merge(
            k8s_opts, pulumi.ResourceOptions(depends_on=[namespace, counters, *depends_on])
        ),
    )
