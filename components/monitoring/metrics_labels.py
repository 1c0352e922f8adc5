"""The one label contract for DCGM metrics: which label names what once managed Prometheus has scraped a series.

The PodMonitor (`gpu_monitoring.py`), the KEDA query (`gpu_autoscaling.py`), the GPU alerts and
`components/monitoring/dashboards/gpu-overview.json` all take their label names from here;
`tests/upstream/scrape.py` checks
this contract against a model of the real scrape.

Where the names come from:
- Managed Prometheus builds its scrape jobs with prometheus-operator's generator (Azure/prometheus-collector
  `otelcollector/otel-allocator`, tag v7.1.1-main-07-21-2026-39583fd5, pins prometheus-operator v0.92.0 and
  renames its API group to azmonitoring.coreos.com). `pkg/prometheus/promcfg.go` `generatePodMonitorConfig`
  at v0.92.0 gives every PodMonitor target `namespace`, `container` and `pod` of the *scraped* pod, `job`
  and `endpoint`; Prometheus adds `instance` (`scrape/target.go` `PopulateLabels`, v3.12.0).
- Without `honorLabels`, an exposed label that clashes with a target label is stored as `exported_<name>`
  (`scrape/scrape.go` `mutateSampleLabels`, Prometheus v3.12.0).
- DCGM exporter 4.0.4 (image tag 4.1.1-4.0.4, `internal/pkg/rendermetrics/render_metrics.go`,
  `internal/pkg/transformation/const.go`) writes `gpu`, `UUID`, `pci_bus_id`, `device`, `modelName` and
  `Hostname` (the node: the chart and the GPU Operator set `NODE_NAME`) on every GPU series, and the
  `namespace`, `pod`, `container` of the pod holding the GPU when Kubernetes mapping is on.
- Azure's metrics agent adds `cluster` to every series (learn.microsoft.com/azure/azure-monitor/containers/
  prometheus-metrics-scrape-configuration, "cluster alias", read 2026-12-02).
"""

from typing import Final

HONOR_LABELS: Final = False
"""The PodMonitor's `honorLabels`. Off: `namespace`/`pod` always name the exporter pod (so `up` and every GPU
series agree), and the pod holding a GPU is found under `exported_namespace`/`exported_pod`. On, a GPU
nobody holds would carry the exporter pod's names, indistinguishable from a GPU a pod holds."""

EXPORTED_PREFIX: Final = "exported_"
TARGET_LABELS: Final = frozenset({"namespace", "container", "pod", "job", "endpoint", "instance"})
"""Labels every PodMonitor target carries (prometheus-operator v0.92.0 + Prometheus's default `instance`)."""

CLUSTER: Final = "cluster"
"""Added by Azure's metrics agent to every series: the cluster's name."""

DCGM_GPU_LABELS: Final = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")
"""What DCGM exporter 4.0.4 writes on every per-GPU series, in its own names."""
DCGM_POD_LABELS: Final = ("namespace", "pod", "container")
"""What its Kubernetes mapping adds when a pod holds the GPU, in its own names."""


def stored_name(exposed: str, honor_labels: bool = HONOR_LABELS) -> str:
    """The name an exposed label is stored under: a clash with a target label gains `exported_` unless honoured."""
    if exposed in TARGET_LABELS and not honor_labels:
        return EXPORTED_PREFIX + exposed
    return exposed


WORKLOAD_NAMESPACE: Final = stored_name("namespace")
"""Namespace of the pod that holds the GPU."""
WORKLOAD_POD: Final = stored_name("pod")
"""Name of the pod that holds the GPU (absent while no pod holds it)."""
WORKLOAD_CONTAINER: Final = stored_name("container")
"""Container of that pod."""
NODE: Final = stored_name("Hostname")
"""Kubernetes node name of the GPU (the exporter reports `NODE_NAME`)."""
GPU: Final = stored_name("gpu")
"""GPU index on its node."""
GPU_UUID: Final = stored_name("UUID")
"""GPU UUID: stable across reboots and pod moves."""
GPU_MODEL: Final = stored_name("modelName")
"""GPU model name, e.g. `NVIDIA A100 80GB PCIe`."""
TARGET_ADDRESS: Final = "instance"
"""`<pod IP>:<port>` of the exporter target (on `up` and every series)."""

SCRAPE_JOB: Final = "dcgm-exporter"
"""The `job` value the PodMonitor sets on every exporter target, whichever exporter (ours or the GPU Operator's)."""


MIG_INSTANCE: Final = "GPU_I_ID"
"""The MIG instance a series is about: set only on a MIG slice's series (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2
internal/pkg/rendermetrics/render_metrics.go), so `GPU_I_ID=""` selects whole GPUs."""
MIG_PROFILE: Final = "GPU_I_PROFILE"
"""The MIG profile of that instance, e.g. `3g.40gb`."""


# --- AMD: the device-metrics-exporter's series, stored under the DCGM names above --------------------------------
# ROCm/device-metrics-exporter v1.5.1 (commit ad44c717), pkg/amdgpu/gpuagent/gpuagent_gpu_metrics.go: metric names
# (`gpu_gfx_activity` "Graphics engine usage in Percentage (0-100)", `gpu_used_vram`/`gpu_free_vram` "in MB",
# `gpu_junction_temperature` Celsius, `gpu_package_power` Watts) and labels, the lower-cased MetricLabel /
# GPUMetricLabel names of pkg/exporter/proto/exporterconfig.proto (`hostname` = the node, DS_NODE_NAME;
# `gpu_id`, `serial_number`, `card_model`, and `pod`, `namespace`, `container` of the pod holding the GPU).
# The PodMonitor's metric relabelling renames both, so the alerts, KEDA and dashboards read AMD GPUs unchanged.

AMD_SCRAPE_JOB: Final = "amd-device-metrics-exporter"
"""The `job` of AMD exporter targets (`up` tells the two exporters apart; GPU series share the DCGM names)."""
AMD_METRIC_NAMES: Final = {
    "gpu_gfx_activity": "DCGM_FI_DEV_GPU_UTIL",
    "gpu_used_vram": "DCGM_FI_DEV_FB_USED",
    "gpu_free_vram": "DCGM_FI_DEV_FB_FREE",
    "gpu_junction_temperature": "DCGM_FI_DEV_GPU_TEMP",
    "gpu_package_power": "DCGM_FI_DEV_POWER_USAGE",
}
"""AMD series -> the DCGM series of the same meaning and unit (percent, MB of memory, Celsius, Watts)."""
AMD_LABEL_NAMES: Final = {"hostname": NODE, "gpu_id": GPU, "serial_number": GPU_UUID, "card_model": GPU_MODEL}
"""AMD's per-GPU labels -> the contract's names. Its pod labels follow the same `exported_` rule as DCGM's."""


def amd_metric_relabelings() -> list[dict[str, object]]:
    """PodMonitor metricRelabelings that store AMD series under the contract's metric and label names."""
    relabelings: list[dict[str, object]] = [
        {
            "sourceLabels": ["__name__"],
            "regex": amd,
            "targetLabel": "__name__",
            "replacement": dcgm,
            "action": "replace",
        }
        for amd, dcgm in AMD_METRIC_NAMES.items()
    ]
    for amd, contract in AMD_LABEL_NAMES.items():
        relabelings.append({"sourceLabels": [amd], "regex": "(.+)", "targetLabel": contract, "action": "replace"})
    relabelings.append({"action": "labeldrop", "regex": "|".join(AMD_LABEL_NAMES)})
    return relabelings
