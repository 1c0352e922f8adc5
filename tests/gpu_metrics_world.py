"""The series managed Prometheus would store for a recorded stack: DCGM exporters scraped through the recorded
PodMonitor (`tests/scrape_model.py`), plus `kube_node_labels` from Azure's kube-state-metrics.

Pods and exposition follow upstream, not the program:
- our exporter's pods: dcgm-exporter chart 4.1.1 (NVIDIA/dcgm-exporter tag 4.2.3-4.1.1)
  `deployment/templates/daemonset.yaml` + `_helpers.tpl`: labels `app.kubernetes.io/name` (nameOverride or
  the chart name), `app.kubernetes.io/instance` (release), `app.kubernetes.io/component: dcgm-exporter`;
  container `exporter`, port `metrics` = `service.port` (9400), `NODE_NAME` from `spec.nodeName`;
- the GPU Operator's: gpu-operator v25.3.4 `assets/state-dcgm-exporter/0900_daemonset.yaml`: label
  `app: nvidia-dcgm-exporter`, container `nvidia-dcgm-exporter`, port `metrics` 9400, in the operator's namespace;
- /metrics: DCGM exporter 4.0.4 (tag 4.1.1-4.0.4) `internal/pkg/rendermetrics/render_metrics.go`: per GPU
  `gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`, then the pod mapping (`internal/pkg/
  transformation/kubernetes.go`, keys of a Go map, so sorted): `container`, `namespace`, `pod`;
- Azure's kube-state-metrics job (Azure/prometheus-collector v7.1.1-main-07-21-2026-39583fd5
  `otelcollector/configmapparser/default-prom-configs/kubestateDefault.yml`): a static target, so only
  `job` and `instance` are added; `kube_node_labels` carries `node` and `label_<key>` for allowlisted keys.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from tests.scrape_model import (
    Container,
    Pod,
    Port,
    Series,
    pod_monitor_scrape_configs,
    sanitize,
    scrape,
    targets,
)
from tools.offline import Recording

POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
RELEASE = "kubernetes:helm.sh/v3:Release"
AGENT_POOL = "azure-native:containerservice:AgentPool"
CLUSTER = "azure-native:containerservice:ManagedCluster"
GPUS_PER_NODE = 2


@dataclass(frozen=True)
class GpuWorkload:
    """A pod that holds GPUs, and the utilisation DCGM reports for them."""

    namespace: str
    pod: str
    gpus: int = 1
    utilization: float = 50.0
    container: str = "main"


@dataclass
class MetricsWorld:
    series: list[Series]
    exporter_pods: list[Pod]
    gpu_nodes: list[str]
    silent_nodes: list[str] = field(default_factory=list[str])
    placement: dict[str, list[tuple[str, int]]] = field(default_factory=dict[str, list[tuple[str, int]]])
    """Workload pod -> the (node, GPU index) pairs it holds."""

    def of(self, metric: str) -> list[Series]:
        return [s for s in self.series if s.name == metric]


def _exporter_template(recording: Recording) -> tuple[str, dict[str, str], str, int]:
    """(namespace, pod labels, container, port) of the DCGM exporter pods upstream would create."""
    ours = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == "dcgm-exporter"]
    if ours:
        (release,) = ours
        values = release.inputs.get("values") or {}
        labels = {
            "app.kubernetes.io/name": (values.get("nameOverride") or "dcgm-exporter")[:63].rstrip("-"),
            "app.kubernetes.io/instance": release.inputs["name"],
            "app.kubernetes.io/component": "dcgm-exporter",
        }
        port = int((values.get("service") or {}).get("port", 9400))
        return release.inputs["namespace"], labels, "exporter", port
    (operator,) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == "gpu-operator"]
    return operator.inputs["namespace"], {"app": "nvidia-dcgm-exporter"}, "nvidia-dcgm-exporter", 9400


def _gpu_nodes(recording: Recording) -> list[tuple[str, dict[str, str]]]:
    """One node per GPU pool, named as AKS names VMSS nodes, with the labels the pool gives its nodes."""
    nodes: list[tuple[str, dict[str, str]]] = []
    for pool in recording.of_type(AGENT_POOL):
        labels = dict(pool.inputs.get("nodeLabels") or {})
        if labels.get("pool") == "gpu":
            nodes.append((f"aks-{pool.outputs['name']}-12345678-vmss000000", labels))
    return nodes


def _counters(recording: Recording) -> list[str]:
    """The DCGM fields the exporter is configured to emit (its counters CSV)."""
    configmaps = [r for r in recording.of_type("kubernetes:core/v1:ConfigMap") if "dcgm-counters" in r.name]
    if configmaps:
        csv = next(iter(configmaps[0].inputs["data"].values()))
    else:
        from aks_gpu_platform.components.dcgm_exporter import (
            DCGM_COUNTERS,  # the list the operator's exporter must be given
        )

        csv = DCGM_COUNTERS
    return [line.split(",")[0].strip() for line in csv.splitlines() if line.strip() and not line.startswith("#")]


def dcgm_exposition(
    node: str,
    gpus: Sequence[tuple[int, GpuWorkload | None]],
    counters: Sequence[str],
    value_of: Callable[[str, GpuWorkload | None], float],
) -> str:
    """/metrics of one exporter, in the 4.0.4 template's label order."""
    lines: list[str] = []
    for counter in counters:
        lines.append(f"# HELP {counter} modelled")
        lines.append(f"# TYPE {counter} gauge")
        for index, holder in gpus:
            labels = (
                f'gpu="{index}",UUID="GPU-{hashlib.sha256(f"{node}/{index}".encode()).hexdigest()[:32]}",'
                f'pci_bus_id="00000001:0{index}:00.0",device="nvidia{index}",modelName="NVIDIA A100 80GB PCIe",'
                f'Hostname="{node}"'
            )
            if holder is not None:
                labels += f',container="{holder.container}",namespace="{holder.namespace}",pod="{holder.pod}"'
            lines.append(f"{counter}{{{labels}}} {value_of(counter, holder)}")
    return "\n".join(lines) + "\n"


def _default_value(counter: str, holder: GpuWorkload | None) -> float:
    if counter == "DCGM_FI_DEV_GPU_UTIL":
        return holder.utilization if holder else 0.0
    return {"DCGM_FI_DEV_FB_USED": 70000.0, "DCGM_FI_DEV_FB_FREE": 10000.0, "DCGM_FI_DEV_GPU_TEMP": 65.0}.get(
        counter, 1.0
    )


def _kube_node_labels(
    recording: Recording, nodes: Sequence[tuple[str, Mapping[str, str]]], cluster: str
) -> list[Series]:
    profile = recording.one(CLUSTER).inputs.get("azureMonitorProfile") or {}
    allowlist = ((profile.get("metrics") or {}).get("kubeStateMetrics") or {}).get("metricLabelsAllowlist", "")
    match = re.search(r"nodes=\[([^\]]*)\]", allowlist)
    allowed = [k.strip() for k in match.group(1).split(",")] if match else []
    series: list[Series] = []
    for node, node_labels in nodes:
        labels = {"__name__": "kube_node_labels", "node": node, "job": "kube-state-metrics"}
        labels["instance"] = "ama-metrics-ksm.kube-system.svc.cluster.local:8080"
        labels.update({f"label_{sanitize(k)}": v for k, v in node_labels.items() if k in allowed or "*" in allowed})
        series.append(Series({"cluster": cluster, **labels}, 1.0))
    return series


def build_world(
    recording: Recording,
    workloads: Sequence[GpuWorkload] = (),
    silent_nodes: int = 0,
    nodes_per_pool: int = 4,
    value_of: Callable[[str, GpuWorkload | None], float] = _default_value,
) -> MetricsWorld:
    """Each GPU node runs an exporter (the last `silent_nodes` send nothing); workloads fill GPUs in order."""
    cluster = recording.one(CLUSTER).outputs["name"]
    namespace, exporter_labels, container, port = _exporter_template(recording)
    pool_nodes = _gpu_nodes(recording)
    assert pool_nodes, "the stack must have a GPU pool to observe"
    nodes = [(f"{name[:-1]}{i}", labels) for name, labels in pool_nodes for i in range(nodes_per_pool)]
    reporting = nodes[: len(nodes) - silent_nodes]
    slots = [(node, index) for node, _ in reporting for index in range(GPUS_PER_NODE)]
    assert sum(w.gpus for w in workloads) <= len(slots), "more GPUs asked for than the reporting nodes have"
    holders: dict[tuple[str, int], GpuWorkload] = {}
    placement: dict[str, list[tuple[str, int]]] = {}
    for workload in workloads:
        for _ in range(workload.gpus):
            slot = slots[len(holders)]
            holders[slot] = workload
            placement.setdefault(workload.pod, []).append(slot)

    exporter_pods = [
        Pod(
            namespace,
            f"dcgm-exporter-{i:05d}",
            exporter_labels,
            node,
            f"10.244.{i}.7",
            (Container(container, (Port("metrics", port),)),),
        )
        for i, (node, _) in enumerate(reporting)
    ]
    # Neighbours the monitor must not scrape: another pod with a `metrics` port beside the exporter, and the workloads.
    bystanders = [
        Pod(
            namespace,
            "metrics-sidecar-0",
            {"app": "other"},
            reporting[0][0] if reporting else "n",
            "10.244.99.1",
            (Container("sidecar", (Port("metrics", 8080),)),),
        ),
        *(
            Pod(
                w.namespace,
                w.pod,
                {"app": w.pod.rsplit("-", 2)[0]},
                placement[w.pod][0][0],
                f"10.245.{i}.9",
                (Container(w.container, (Port("http", 8000),)),),
            )
            for i, w in enumerate(workloads)
        ),
    ]
    (monitor,) = recording.of_type(POD_MONITOR)
    series: list[Series] = []
    counters = _counters(recording)
    for config in pod_monitor_scrape_configs(monitor.inputs):
        for target in targets(config, [*exporter_pods, *bystanders]):
            node = target.pod.node
            gpus = [(index, holders.get((node, index))) for index in range(GPUS_PER_NODE)]
            result = scrape(target, config, dcgm_exposition(node, gpus, counters, value_of), {"cluster": cluster})
            series += result.series
            assert result.up is not None
            series.append(result.up)
    series += _kube_node_labels(recording, nodes, cluster)
    return MetricsWorld(
        series, exporter_pods, [n for n, _ in nodes], [n for n, _ in nodes[len(reporting) :]], placement
    )
