"""The series managed Prometheus would store for a recorded stack: DCGM exporters scraped through the recorded
PodMonitor (`tests/upstream/scrape.py`), plus `kube_node_labels` from Azure's kube-state-metrics.

Pods and exposition follow upstream, not the program:
- our exporter's pods: dcgm-exporter chart 4.1.1 (NVIDIA/dcgm-exporter tag 4.2.3-4.1.1)
  `deployment/templates/daemonset.yaml` + `_helpers.tpl`: labels `app.kubernetes.io/name` (nameOverride or
  the chart name), `app.kubernetes.io/instance` (release), `app.kubernetes.io/component: dcgm-exporter`;
  container `exporter`, port `metrics` = `service.port` (9400), `NODE_NAME` from `spec.nodeName`;
- the GPU Operator's: gpu-operator v26.7.0 `assets/state-dcgm-exporter/0800_daemonset.yaml`: label
  `app: nvidia-dcgm-exporter`, container `nvidia-dcgm-exporter`, port `metrics` 9400, in the operator's namespace,
  image `deployments/gpu-operator/values.yaml` `dcgmExporter.version` (default 4.6.0-4.8.3-distroless); counters:
  `DCGM_EXPORTER_COLLECTORS` = the image's `/etc/dcgm-exporter/dcp-metrics-included.csv`, or the chart's
  `dcgmExporter.config` ConfigMap when one is named (`templates/dcgm_exporter_config.yaml`,
  `controllers/object_controls.go` `TransformDCGMExporter`);
- /metrics: DCGM exporter `internal/pkg/rendermetrics/render_metrics.go`: per GPU `gpu`, `UUID`, `pci_bus_id`,
  `device`, `modelName`, for a MIG instance `GPU_I_PROFILE` and `GPU_I_ID` (tag 4.5.3-4.8.2), and the node, then
  the pod mapping (`internal/pkg/transformation/kubernetes.go`, keys of a Go map, so sorted): `container`,
  `namespace`, `pod`. The node label is `Hostname` up to exporter 4.8.2 and `hostname` from 4.8.3 on (PR #655,
  merged 2026-05-12 after tag 4.5.3-4.8.2; tag 4.6.0-4.8.3 = commit 7ad58324);
- values: a held GPU's DCGM_FI_DEV_GPU_UTIL is its workload's utilisation and DCGM_FI_PROF_GR_ENGINE_ACTIVE the same
  as a 0-1 ratio; a MIG slice (`GpuWorkload.mig_profile`) has the ratio and no DCGM_FI_DEV_GPU_UTIL ("not supported
  for MIG instances": NVIDIA/dcgm-exporter issues #50, #430). A `value_of` may answer None: the exporter then
  writes no line for that field, as for a profiling field when DCGM's profiling module is not loaded
  (NVIDIA/dcgm-exporter issues #395, #550; NVIDIA/DCGM issue #226).
- Azure's kube-state-metrics job (Azure/prometheus-collector v7.1.1-main-07-21-2026-39583fd5
  `otelcollector/configmapparser/default-prom-configs/kubestateDefault.yml`): a static target, so only
  `job` and `instance` are added; `kube_node_labels` carries `node` and `label_<key>` for allowlisted keys.
- aksManaged: AKS's exporter is a node service on port 19400 with no pod mapping, collecting the packaged
  `/etc/dcgm-exporter/default-counters.csv` (Azure/AgentBaker cse_config.sh); it is reached through the recorded
  hostNetwork anchor DaemonSet, whose pods have the node's IP. Its counters are those enabled in NVIDIA/dcgm-exporter
  tag 4.5.3-4.8.2 `etc/default-counters.csv` (the exporter release AKS ships, AgentBaker components.json).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_platform.testing import Recording
from tests.upstream.scheduling import generic_agent_pools
from tests.upstream.scrape import (
    Container,
    Pod,
    Port,
    Series,
    pod_monitor_scrape_configs,
    sanitize,
    scrape,
    targets,
)

POD_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:PodMonitor"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
# NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 etc/default-counters.csv: the fields it enables (label-type rows left out).
AKS_EXPORTER_COUNTERS = (
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
)
# NVIDIA/dcgm-exporter tag 4.6.0-4.8.3 (commit 7ad58324) etc/dcp-metrics-included.csv, the GPU Operator exporter's
# default list, enables exactly these fields too: no ECC, NVLink error or throttling counter.
OPERATOR_DEFAULT_COUNTERS = AKS_EXPORTER_COUNTERS
# gpu-operator v26.7.0 deployments/gpu-operator/values.yaml dcgmExporter.version.
OPERATOR_DEFAULT_EXPORTER_TAG = "4.6.0-4.8.3-distroless"
# NVIDIA/AgentBaker components.json: the exporter release AKS ships on managed GPU nodes.
AKS_EXPORTER_TAG = "4.5.3-4.8.2"
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
    mig_profile: str | None = None
    """The MIG profile of the slice it holds (e.g. `3g.40gb`), None for a whole GPU."""


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


def _host_network_exporter(recording: Recording) -> tuple[str, dict[str, str], str, int] | None:
    """aksManaged: the recorded hostNetwork DaemonSet that declares a `metrics` port (the scrape anchor)."""
    for daemon_set in recording.of_type(DAEMON_SET):
        template = daemon_set.inputs["spec"]["template"]
        pod = template["spec"]
        if not pod.get("hostNetwork"):
            continue
        for container in pod["containers"]:
            for port in container.get("ports") or []:
                if port.get("name") == "metrics":
                    labels = dict(template["metadata"]["labels"])
                    return daemon_set.inputs["metadata"]["namespace"], labels, container["name"], port["containerPort"]
    return None


def _exporter_template(recording: Recording) -> tuple[str, dict[str, str], str, int]:
    """(namespace, pod labels, container, port) of the DCGM exporter pods upstream would create."""
    anchor = _host_network_exporter(recording)
    if anchor is not None:
        return anchor
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
    pools = [(p.outputs["name"], p.inputs) for p in recording.of_type(AGENT_POOL)]
    pools += [(p["agentPoolName"], p) for p in generic_agent_pools(recording)]
    for name, pool in pools:
        labels = dict(pool.get("nodeLabels") or {})
        if labels.get("pool") == "gpu":
            nodes.append((f"aks-{name}-12345678-vmss000000", labels))
    return nodes


def _operator_exporter_values(recording: Recording) -> dict[str, object] | None:
    """The GPU Operator release's `dcgmExporter` values when the operator runs the exporter, else None."""
    if _host_network_exporter(recording) is not None or any(
        r.inputs.get("chart") == "dcgm-exporter" for r in recording.of_type(RELEASE)
    ):
        return None
    (operator,) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == "gpu-operator"]
    return dict((operator.inputs.get("values") or {}).get("dcgmExporter") or {})


def _csv_fields(csv: str) -> list[str]:
    return [line.split(",")[0].strip() for line in csv.splitlines() if line.strip() and not line.startswith("#")]


def _counters(recording: Recording) -> list[str]:
    """The DCGM fields the exporter is configured to emit (its counters CSV)."""
    if _host_network_exporter(recording) is not None:
        return list(AKS_EXPORTER_COUNTERS)  # AKS's packaged file; the platform cannot change it
    operator = _operator_exporter_values(recording)
    if operator is not None:
        config = operator.get("config")
        if not isinstance(config, dict) or not config.get("name"):
            return list(OPERATOR_DEFAULT_COUNTERS)
        # The chart renders `data` into the named ConfigMap only with `create`; a bare name must already exist.
        assert config.get("create") and config.get("data"), "a counters ConfigMap nobody creates stalls the exporter"
        return _csv_fields(str(config["data"]))
    configmaps = [r for r in recording.of_type("kubernetes:core/v1:ConfigMap") if "dcgm-counters" in r.name]
    return _csv_fields(next(iter(configmaps[0].inputs["data"].values())))


def node_label(recording: Recording) -> str:
    """The label the scraped exporter writes the node name under (`hostname` from exporter 4.8.3 on)."""
    if _host_network_exporter(recording) is not None:
        tag = AKS_EXPORTER_TAG
    else:
        operator = _operator_exporter_values(recording)
        if operator is not None:
            tag = str(operator.get("version") or OPERATOR_DEFAULT_EXPORTER_TAG)
        else:
            (release,) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart") == "dcgm-exporter"]
            tag = release.inputs["values"]["image"]["tag"]
    exporter = tuple(int(part) for part in tag.split("-")[1].split("."))
    return "hostname" if exporter >= (4, 8, 3) else "Hostname"


def dcgm_exposition(
    node: str,
    gpus: Sequence[tuple[int, GpuWorkload | None]],
    counters: Sequence[str],
    value_of: Callable[[str, GpuWorkload | None], float | None],
    node_label: str = "Hostname",
) -> str:
    """/metrics of one exporter, in its template's label order."""
    lines: list[str] = []
    for counter in counters:
        lines.append(f"# HELP {counter} modelled")
        lines.append(f"# TYPE {counter} gauge")
        for index, holder in gpus:
            labels = (
                f'gpu="{index}",UUID="GPU-{hashlib.sha256(f"{node}/{index}".encode()).hexdigest()[:32]}",'
                f'pci_bus_id="00000001:0{index}:00.0",device="nvidia{index}",modelName="NVIDIA A100 80GB PCIe",'
                f'{node_label}="{node}"'
            )
            if holder is not None and holder.mig_profile:
                if counter == "DCGM_FI_DEV_GPU_UTIL":
                    continue  # not reported per MIG instance
                insert = labels.index(f",{node_label}=")
                labels = f'{labels[:insert]},GPU_I_PROFILE="{holder.mig_profile}",GPU_I_ID="1"{labels[insert:]}'
            if holder is not None:
                labels += f',container="{holder.container}",namespace="{holder.namespace}",pod="{holder.pod}"'
            value = value_of(counter, holder)
            if value is not None:
                lines.append(f"{counter}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def default_value(counter: str, holder: GpuWorkload | None) -> float:
    if counter == "DCGM_FI_DEV_GPU_UTIL":
        return holder.utilization if holder else 0.0
    if counter == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
        return holder.utilization / 100 if holder else 0.0
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
    value_of: Callable[[str, GpuWorkload | None], float | None] = default_value,
) -> MetricsWorld:
    """Each GPU node runs an exporter (the last `silent_nodes` send nothing); workloads fill GPUs in order."""
    cluster = recording.one(CLUSTER).outputs["name"]
    namespace, exporter_labels, container, port = _exporter_template(recording)
    # AKS's exporter runs without Kubernetes mapping (no -k): no series names the pod holding a GPU.
    pod_mapping = _host_network_exporter(recording) is None
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
            f"10.244.{i}.7" if pod_mapping else f"10.224.0.{i + 4}",  # a hostNetwork pod has its node's IP
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
    # The DCGM exporter's monitor (the served models' vLLM monitors scrape no GPU series).
    (monitor,) = [m for m in recording.of_type(POD_MONITOR) if m.inputs["metadata"]["name"] == "dcgm-exporter"]
    series: list[Series] = []
    counters = _counters(recording)
    exporter_node_label = node_label(recording)
    for config in pod_monitor_scrape_configs(monitor.inputs):
        for target in targets(config, [*exporter_pods, *bystanders]):
            node = target.pod.node
            gpus = [(index, holders.get((node, index)) if pod_mapping else None) for index in range(GPUS_PER_NODE)]
            exposition = dcgm_exposition(node, gpus, counters, value_of, exporter_node_label)
            result = scrape(target, config, exposition, {"cluster": cluster})
            series += result.series
            assert result.up is not None
            series.append(result.up)
    series += _kube_node_labels(recording, nodes, cluster)
    return MetricsWorld(
        series, exporter_pods, [n for n, _ in nodes], [n for n, _ in nodes[len(reporting) :]], placement
    )


def node_state_series(
    recording: Recording,
    nodes: Sequence[str],
    conditions: Sequence[str],
    faults: Mapping[str, str] | None = None,
    cordoned: Sequence[str] = (),
) -> list[Series]:
    """kube-state-metrics' node series for `nodes` (kubernetes/kube-state-metrics docs/metrics/cluster/
    node-metrics.md): `kube_node_status_condition{node,condition,status}` with one series per status, 1 on the
    node's actual one, for Ready and each of `conditions` (`faults` maps a node to the condition that is True on
    it); `kube_node_spec_taint{node,key,value,effect}` for the taint a cordon adds (TaintNodesByCondition)."""
    cluster = recording.one(CLUSTER).outputs["name"]
    scrape = {"cluster": cluster, "job": "kube-state-metrics", "instance": "ama-metrics-ksm.kube-system.svc:8080"}
    faults = faults or {}
    series: list[Series] = []
    for node in nodes:
        for condition in ("Ready", *conditions):
            actual = "true" if condition == "Ready" or faults.get(node) == condition else "false"
            for status in ("true", "false", "unknown"):
                labels = {"__name__": "kube_node_status_condition", "node": node, "condition": condition}
                series.append(Series({**scrape, **labels, "status": status}, 1.0 if status == actual else 0.0))
        if node in cordoned:
            taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}  # empty value: no label
            series.append(Series({**scrape, "__name__": "kube_node_spec_taint", "node": node, **taint}, 1.0))
    return series


# --- kube-state-metrics' pod and node series, Kueue's metrics, recording rules ---------------------------------
# kube-state-metrics (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md and internal/store/pod.go):
# `kube_pod_container_resource_requests{namespace,pod,uid,container,node,resource,unit}` with an extended resource's
# name sanitised (`nvidia.com/gpu` -> `nvidia_com_gpu`, unit `integer`); `kube_pod_status_phase{namespace,pod,uid,
# phase}` one series per phase, 1 on the pod's; `kube_pod_owner{namespace,pod,uid,owner_kind,owner_name,
# owner_is_controller}`; node-metrics.md: `kube_node_status_allocatable{node,resource,unit}`. All in the add-on's
# minimal ingestion profile (components/monitoring/recording_rules.py names the keep-list).
KSM_TARGET = {"job": "kube-state-metrics", "instance": "ama-metrics-ksm.kube-system.svc.cluster.local:8080"}
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


def job_of(pod: str) -> str:
    """The Job a pod belongs to: Job pods are `<job>-<index>-<suffix>` or `<job>-<suffix>`."""
    return pod.rsplit("-", 1)[0]


def kube_state_pod_series(recording: Recording, world: MetricsWorld, workloads: Sequence[GpuWorkload]) -> list[Series]:
    cluster = recording.one(CLUSTER).outputs["name"]
    series: list[Series] = []
    for w in workloads:
        node = world.placement[w.pod][0][0]
        pod = {"cluster": cluster, **KSM_TARGET, "namespace": w.namespace, "pod": w.pod, "uid": f"uid-{w.pod}"}
        series.append(
            Series(
                {
                    **pod,
                    "__name__": "kube_pod_container_resource_requests",
                    "container": w.container,
                    "node": node,
                    "resource": "nvidia_com_gpu",
                    "unit": "integer",
                },
                float(w.gpus),
            )
        )
        for phase in POD_PHASES:
            labels = {**pod, "__name__": "kube_pod_status_phase", "phase": phase}
            series.append(Series(labels, 1.0 if phase == "Running" else 0.0))
        owner = {"owner_kind": "Job", "owner_name": job_of(w.pod), "owner_is_controller": "true"}
        series.append(Series({**pod, "__name__": "kube_pod_owner", **owner}, 1.0))
    for node in world.gpu_nodes:
        labels = {"cluster": cluster, **KSM_TARGET, "__name__": "kube_node_status_allocatable", "node": node}
        series.append(Series({**labels, "resource": "nvidia_com_gpu", "unit": "integer"}, float(GPUS_PER_NODE)))
    return series


SERVICE_MONITOR = "kubernetes:azmonitoring.coreos.com/v1:ServiceMonitor"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
# kubernetes-sigs/kueue v0.19.2 pkg/metrics/metrics.go: per-ClusterQueue gauges and the admission wait histogram
# (labels cluster_queue, status active|inadmissible, priority_class, cohort, flavor, resource, replica_role
# leader|follower|standalone); resource names unsanitised (`nvidia.com/gpu`).
ADMISSION_WAIT_BUCKETS = ("1", "2", "4", "8", "16", "+Inf")


# Kueue v0.19.2 cmd/kueue/main.go serves /metrics with `SecureServing: true` behind controller-runtime's
# authentication and authorization filter; with the chart's default internal certificate management no metrics
# certificate is mounted, so controller-runtime v0.24.1 (the version Kueue's go.mod pins) pkg/metrics/server/server.go
# `createListener` falls back to a self-signed certificate for "localhost", generated at start-up. No CA can verify
# it: a scraper that verifies certificates fails every Kueue target. Plain HTTP is refused by the TLS listener and a
# request without a bearer token is refused by the filter.


def kueue_scrape_problems(endpoint: dict[str, Any]) -> list[str]:
    """Why scraping a Kueue controller through this ServiceMonitor endpoint fails (empty: it succeeds)."""
    problems: list[str] = []
    if endpoint.get("scheme") != "https":
        problems.append("Kueue serves /metrics over TLS only")
    if not (endpoint.get("tlsConfig") or {}).get("insecureSkipVerify"):
        problems.append("Kueue's metrics certificate is self-signed at start-up: no CA verifies it")
    if not (endpoint.get("bearerTokenFile") or endpoint.get("authorization") or endpoint.get("bearerTokenSecret")):
        problems.append("Kueue authenticates every /metrics request: the scraper must present its token")
    return problems


def kueue_series(recording: Recording) -> list[Series]:
    """What scraping the recorded Kueue ServiceMonitor stores: each controller replica's metrics with the target
    labels prometheus-operator gives a ServiceMonitor endpoint (namespace, service, pod, container, endpoint, job,
    instance), the monitor's job relabeling applied. A scrape that fails stores only `up` = 0."""
    cluster = recording.one(CLUSTER).outputs["name"]
    (monitor,) = recording.of_type(SERVICE_MONITOR)
    (kueue,) = [r for r in recording.of_type(RELEASE) if r.inputs.get("chart", "").endswith("/kueue")]
    namespace = kueue.inputs["namespace"]
    assert monitor.inputs["metadata"]["namespace"] == namespace
    (endpoint,) = monitor.inputs["spec"]["endpoints"]
    job = f"{kueue.inputs['name']}-controller-manager-metrics-service"
    for relabel in endpoint.get("relabelings") or []:
        if relabel.get("targetLabel") == "job":
            job = relabel["replacement"]
    replicas = int(kueue.inputs["values"]["controllerManager"]["replicas"])
    failed = bool(kueue_scrape_problems(endpoint))
    series: list[Series] = []
    for replica in range(replicas):
        role = "standalone" if replicas == 1 else ("leader" if replica == 0 else "follower")
        target = {
            "cluster": cluster,
            "namespace": namespace,
            "service": f"{kueue.inputs['name']}-controller-manager-metrics-service",
            "pod": f"kueue-controller-manager-7c9d-{replica}",
            "container": "manager",
            "endpoint": endpoint["port"],
            "job": job,
            "instance": f"10.244.3.{replica + 10}:8443",
            "replica_role": role,
        }
        target_labels = {k: v for k, v in target.items() if k != "replica_role"}
        series.append(Series({**target_labels, "__name__": "up"}, 0.0 if failed else 1.0))
        if failed:
            continue
        for queue in recording.of_type(CLUSTER_QUEUE):
            name = queue.inputs["metadata"]["name"]
            cohort = queue.inputs["spec"].get("cohortName", "")
            for status, value in (("active", 2.0), ("inadmissible", 1.0)):
                series.append(
                    Series(
                        {**target, "__name__": "kueue_pending_workloads", "cluster_queue": name, "status": status},
                        value,
                    )
                )
            series.append(Series({**target, "__name__": "kueue_admitted_active_workloads", "cluster_queue": name}, 1.0))
            for group in queue.inputs["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for resource in flavor["resources"]:
                        labels = {
                            "cohort": cohort,
                            "cluster_queue": name,
                            "flavor": flavor["name"],
                            "resource": resource["name"],
                        }
                        quota = float(resource["nominalQuota"]) if resource["name"] == "nvidia.com/gpu" else 1.0
                        series.append(
                            Series({**target, **labels, "__name__": "kueue_cluster_queue_nominal_quota"}, quota)
                        )
                        series.append(
                            Series({**target, **labels, "__name__": "kueue_cluster_queue_resource_usage"}, quota / 2)
                        )
            for le in ADMISSION_WAIT_BUCKETS:
                labels = {"cluster_queue": name, "priority_class": "", "le": le}
                series.append(Series({**target, **labels, "__name__": "kueue_admission_wait_time_seconds_bucket"}, 3.0))
    return [Series({k: v for k, v in s.labels.items() if v != ""}, s.value) for s in series]


def panel_query(board: Mapping[str, Any], expr: str, cluster: str) -> str:
    """A panel's query as Grafana sends it: `$cluster` chosen, each hidden constant (`$idle_threshold`...) replaced
    by the value the dashboard carries."""
    query = expr.replace("$cluster", cluster)
    for variable in board.get("templating", {}).get("list", []):
        if variable.get("type") == "constant":
            query = query.replace(f"${variable['name']}", str(variable["query"]))
    return query
