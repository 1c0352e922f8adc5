"""Microsoft's recommended recording rules for managed Prometheus, as data (the names the Azure Monitor
and Grafana Kubernetes dashboards query)."""

import re
from collections.abc import Sequence

import pulumi_azure_native.alertsmanagement as alertsmanagement

from aks_gpu_platform.config.gpu.scheduling import AMD_GPU_RESOURCE, GPU_RESOURCE

from .metrics_labels import MIG_INSTANCE, NODE, WORKLOAD_NAMESPACE, WORKLOAD_POD


def _rule(record: str, expression: str) -> alertsmanagement.PrometheusRuleArgsDict:
    return {"record": record, "expression": expression}


# Microsoft's recommended recording rules (the names the Azure Monitor and Grafana dashboards query).
NODE_RECORDING_RULES: list[alertsmanagement.PrometheusRuleArgsDict] = [
    _rule("instance:node_num_cpu:sum", 'count without (cpu, mode) (node_cpu_seconds_total{job="node",mode="idle"})'),
    _rule(
        "instance:node_cpu_utilisation:rate5m",
        "1 - avg without (cpu) (sum without (mode)"
        ' (rate(node_cpu_seconds_total{job="node", mode=~"idle|iowait|steal"}[5m])))',
    ),
    _rule(
        "instance:node_load1_per_cpu:ratio",
        '(node_load1{job="node"} / instance:node_num_cpu:sum{job="node"})',
    ),
    _rule(
        "instance:node_memory_utilisation:ratio",
        '1 - ((node_memory_MemAvailable_bytes{job="node"} or (node_memory_Buffers_bytes{job="node"}'
        ' + node_memory_Cached_bytes{job="node"} + node_memory_MemFree_bytes{job="node"}'
        ' + node_memory_Slab_bytes{job="node"})) / node_memory_MemTotal_bytes{job="node"})',
    ),
    _rule("instance:node_vmstat_pgmajfault:rate5m", 'rate(node_vmstat_pgmajfault{job="node"}[5m])'),
    _rule(
        "instance_device:node_disk_io_time_seconds:rate5m",
        'rate(node_disk_io_time_seconds_total{job="node", device!=""}[5m])',
    ),
    _rule(
        "instance_device:node_disk_io_time_weighted_seconds:rate5m",
        'rate(node_disk_io_time_weighted_seconds_total{job="node", device!=""}[5m])',
    ),
    _rule(
        "instance:node_network_receive_bytes_excluding_lo:rate5m",
        'sum without (device) (rate(node_network_receive_bytes_total{job="node", device!="lo"}[5m]))',
    ),
    _rule(
        "instance:node_network_transmit_bytes_excluding_lo:rate5m",
        'sum without (device) (rate(node_network_transmit_bytes_total{job="node", device!="lo"}[5m]))',
    ),
    _rule(
        "instance:node_network_receive_drop_excluding_lo:rate5m",
        'sum without (device) (rate(node_network_receive_drop_total{job="node", device!="lo"}[5m]))',
    ),
    _rule(
        "instance:node_network_transmit_drop_excluding_lo:rate5m",
        'sum without (device) (rate(node_network_transmit_drop_total{job="node", device!="lo"}[5m]))',
    ),
]

_POD_NODE = 'topk by (cluster, namespace, pod) (1, max by (cluster, namespace, pod, node) (kube_pod_info{node!=""}))'
_ACTIVE_POD = '(kube_pod_status_phase{phase=~"Pending|Running"} == 1)'


def _per_container(metric: str) -> str:
    return f'{metric}{{job="cadvisor", image!=""}} * on (namespace, pod) group_left(node) {_POD_NODE}'


def _requests_or_limits(kind: str, resource: str) -> list[alertsmanagement.PrometheusRuleArgsDict]:
    series = f'kube_pod_container_resource_{kind}{{resource="{resource}",job="kube-state-metrics"}}'
    active = f"cluster:namespace:pod_{resource}:active:kube_pod_container_resource_{kind}"
    return [
        _rule(
            active,
            f"{series} * on (namespace, pod, cluster) group_left() max by (namespace, pod, cluster) {_ACTIVE_POD}",
        ),
        _rule(
            f"namespace_{resource}:kube_pod_container_resource_{kind}:sum",
            "sum by (namespace, cluster) (sum by (namespace, pod, cluster)"
            f" (max by (namespace, pod, container, cluster) ({series})"
            f" * on (namespace, pod, cluster) group_left() max by (namespace, pod, cluster) {_ACTIVE_POD}))",
        ),
    ]


def _owner(workload_type: str, owner_kind: str) -> alertsmanagement.PrometheusRuleArgsDict:
    return {
        "record": "namespace_workload_pod:kube_pod_owner:relabel",
        "expression": "max by (cluster, namespace, workload, pod) (label_replace(kube_pod_owner"
        f'{{job="kube-state-metrics", owner_kind="{owner_kind}"}}, "workload", "$1", "owner_name", "(.*)"))',
        "labels": {"workload_type": workload_type},
    }


KUBERNETES_RECORDING_RULES: list[alertsmanagement.PrometheusRuleArgsDict] = [
    _rule(
        "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate",
        "sum by (cluster, namespace, pod, container) (irate(container_cpu_usage_seconds_total"
        f'{{job="cadvisor", image!=""}}[5m])) * on (cluster, namespace, pod) group_left(node) {_POD_NODE}',
    ),
    _rule(
        "node_namespace_pod_container:container_memory_working_set_bytes",
        _per_container("container_memory_working_set_bytes"),
    ),
    _rule("node_namespace_pod_container:container_memory_rss", _per_container("container_memory_rss")),
    _rule("node_namespace_pod_container:container_memory_cache", _per_container("container_memory_cache")),
    _rule("node_namespace_pod_container:container_memory_swap", _per_container("container_memory_swap")),
    *_requests_or_limits("requests", "memory"),
    *_requests_or_limits("requests", "cpu"),
    *_requests_or_limits("limits", "memory"),
    *_requests_or_limits("limits", "cpu"),
    _owner("deployment", "ReplicaSet"),
    _owner("daemonset", "DaemonSet"),
    _owner("statefulset", "StatefulSet"),
    _owner("job", "Job"),
    _rule(
        ":node_memory_MemAvailable_bytes:sum",
        'sum(node_memory_MemAvailable_bytes{job="node"} or (node_memory_Buffers_bytes{job="node"}'
        ' + node_memory_Cached_bytes{job="node"} + node_memory_MemFree_bytes{job="node"}'
        ' + node_memory_Slab_bytes{job="node"})) by (cluster)',
    ),
]


# --- Chargeback: GPU device-hours a team holds, and holds idle, per GPU pool, priced per device-hour ---------------
# The unit is the device a pool advertises and a pod requests: `nvidia.com/gpu` or `amd.com/gpu`, that is a whole
# GPU, a MIG slice, or one replica of a time-sliced or MPS GPU. Allocated and idle hours count the same devices, and
# the price of a device-hour is the VM-hour over the devices a node advertises, so a team holding every device of a
# node for an hour pays that node's hour whatever the sharing.
# Inputs as managed Prometheus stores them: kube-state-metrics' `kube_pod_container_resource_requests` (extended
# resources sanitised: `nvidia_com_gpu`, `amd_com_gpu`; the pod's `node` once scheduled), `kube_pod_status_phase`
# and `kube_node_labels` (`label_gpu_pool`, allowlisted on the cluster), all kept by the add-on's minimal ingestion
# profile (Azure/prometheus-collector v7.1.1-main-07-21-2026-39583fd5, otelcollector/shared/configmap/mp/
# tomlparser-default-targets-metrics-keep-list.go, `kubestateRegex_minimal_mac`); GPU utilisation under the label
# contract (components/monitoring/metrics_labels.py), AMD's exporter renamed to the DCGM names by its PodMonitor.
# Which pod a GPU's utilisation names: DCGM exporter (NVIDIA/dcgm-exporter internal/pkg/transformation/
# kubernetes.go, `toDeviceToPod`, tags 4.2.3-4.1.1 to 4.6.0-4.8.3) maps a whole GPU or MIG slice to the pod holding
# it, but a time-sliced or MPS GPU to only one of the pods sharing it. So a device on an unshared pool is idle while
# the GPUs its pod holds average under the threshold (the pod's share of idle GPUs), and a device on a shared pool
# while the node's held GPUs do (exact on the single-GPU sizes sharing is used on; an average over a node's GPUs
# otherwise): DCGM measures a GPU, never one of the pods time-slicing it.
# A MIG slice's utilisation: DCGM does not report DCGM_FI_DEV_GPU_UTIL per MIG instance ("not supported for MIG
# instances ... use DCGM_FI_PROF_* metrics": NVIDIA/dcgm-exporter issues #50, #105, #430, NVIDIA/DCGM #80); the graphics
# engine's active ratio DCGM_FI_PROF_GR_ENGINE_ACTIVE (0-1) is, with the slice's pod, and is among the platform's
# counters (components/monitoring/dcgm_exporter.py). On MIG pools idle is read from it, as a percentage.

TEAM_INFO = "team_namespace:info"
"""One series per team: `team` and the `namespace` it submits jobs in (from config, so no label allowlist)."""
GPU_PRICE = "gpu_pool:gpu_hour_price_usd:info"
"""One series per priced GPU pool: `gpu_pool`, `estimate` ("true"/"false"); the value is USD per device-hour."""
POD_GPUS = "team_pod:gpus_running:sum"
"""Per GPU pod: the devices it requests while Running (0 otherwise), with `node`, `gpu_pool` and `team`."""
GPUS_ALLOCATED = "team_gpu_pool:gpus_allocated:sum"
GPUS_IDLE = "team_gpu_pool:gpus_idle:sum"
GPU_HOURS_ALLOCATED = "team_gpu_pool:gpu_hours_allocated:sum24h"
GPU_HOURS_IDLE = "team_gpu_pool:gpu_hours_idle:sum24h"
GPU_COST_ALLOCATED = "team_gpu_pool:gpu_cost_usd_allocated:sum24h"
GPU_COST_IDLE = "team_gpu_pool:gpu_cost_usd_idle:sum24h"
CHARGEBACK_INTERVAL_MINUTES = 1
"""The chargeback group's evaluation interval: each sample of a per-minute series stands for one minute."""
IDLE_WINDOW = "5m"
"""Utilisation is averaged over this window before it is compared with the idle threshold."""
GPU_UTILIZATION = "DCGM_FI_DEV_GPU_UTIL"
"""Percent busy of a whole GPU (AMD's `gpu_gfx_activity` is stored under this name)."""
MIG_UTILIZATION = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
"""Ratio of time a GPU's or a MIG slice's graphics engine is active, 0-1: the utilisation of a MIG slice."""


def held_utilization_percent(window: str | None = None, matchers: str = "") -> str:
    """Percent busy of each device a pod holds, a whole GPU or a MIG slice, averaged over `window` (instant without).

    A MIG instance's series carries `GPU_I_ID` (NVIDIA/dcgm-exporter internal/pkg/rendermetrics/render_metrics.go,
    tag 4.5.3-4.8.2) and has no DCGM_FI_DEV_GPU_UTIL, so a slice is measured by its graphics engine's active ratio
    (DCGM_FI_PROF_GR_ENGINE_ACTIVE, a profiling field). A whole GPU is measured by DCGM_FI_DEV_GPU_UTIL only: the
    profiling field can read 0 on a busy GPU (NVIDIA/dcgm-exporter issue 662) or be missing where DCGM's profiling
    module is not loaded (dcgm-exporter issues 395, 550), and a 0 would raise false idle alerts. AMD's activity is
    stored as DCGM_FI_DEV_GPU_UTIL without `GPU_I_ID`. A slice without the profiling field has no series here:
    `MIG_UTILIZATION_MISSING` names its node.
    """
    mig = f'{{{WORKLOAD_POD}!=""{matchers},{MIG_INSTANCE}!=""}}'
    whole = f'{{{WORKLOAD_POD}!=""{matchers},{MIG_INSTANCE}=""}}'
    if window is None:
        return f"{MIG_UTILIZATION}{mig} * 100 or {GPU_UTILIZATION}{whole}"
    return f"avg_over_time({MIG_UTILIZATION}{mig}[{window}]) * 100 or avg_over_time({GPU_UTILIZATION}{whole}[{window}])"


def mig_utilization_missing() -> str:
    """One series per node whose DCGM exporter reports MIG instances (their framebuffer, DCGM_FI_DEV_FB_USED with
    `GPU_I_ID`, a device field the memory alert collects anyway) but no per-instance DCGM_FI_PROF_GR_ENGINE_ACTIVE:
    its slices' idleness is unobserved."""
    by = f"cluster, {NODE}"
    instances = f'max by ({by}) (DCGM_FI_DEV_FB_USED{{{MIG_INSTANCE}!=""}})'
    return f'{instances} unless on ({by}) max by ({by}) ({MIG_UTILIZATION}{{{MIG_INSTANCE}!=""}})'


GPU_RESOURCES_STORED = tuple(re.sub(r"[^a-zA-Z0-9_]", "_", r) for r in (GPU_RESOURCE, AMD_GPU_RESOURCE))
"""The GPU extended resources as kube-state-metrics stores them in `resource` (`nvidia_com_gpu`, `amd_com_gpu`)."""


def _constant(value: float, labels: dict[str, str]) -> str:
    """A one-series vector with fixed labels (label_replace on an empty source sets a constant)."""
    expression = f"vector({value})"
    for name, label_value in labels.items():
        expression = f'label_replace({expression}, "{name}", "{label_value}", "", "")'
    return expression


def _pool_of(series: str, node_label: str) -> str:
    """Adds `gpu_pool` to `series` by joining its `node_label` with kube-state-metrics' node labels."""
    nodes = (
        'label_replace(kube_node_labels{job="kube-state-metrics", label_gpu_pool!=""},'
        ' "gpu_pool", "$1", "label_gpu_pool", "(.*)")'
    )
    if node_label != "node":
        nodes = f'label_replace({nodes}, "{node_label}", "$1", "node", "(.*)")'
    return (
        f"{series} * on (cluster, {node_label}) group_left(gpu_pool) max by (cluster, {node_label}, gpu_pool) ({nodes})"
    )


def _pool_matcher(pools: Sequence[str]) -> str:
    return "|".join(sorted(pools))


def _idle_share(utilization_percent: str, idle_utilization_percent: int, by_node: bool) -> str:
    """Per pod (or per node), the share of the GPUs (or MIG slices) it holds whose utilisation, averaged over
    `IDLE_WINDOW`, is under the threshold."""
    under = f"{utilization_percent} < bool {idle_utilization_percent}"
    if by_node:
        return f'avg by (cluster, node) (label_replace({under}, "node", "$1", "{NODE}", "(.*)"))'
    return (
        "avg by (cluster, namespace, pod) (label_replace(label_replace("
        f'{under}, "namespace", "$1", "{WORKLOAD_NAMESPACE}", "(.*)"), "pod", "$1", "{WORKLOAD_POD}", "(.*)"))'
    )


def _pod_gpus() -> str:
    """PromQL: the GPU devices each Running pod requests, with its node's pool and its namespace's team."""
    running = 'max by (cluster, namespace, pod) (kube_pod_status_phase{job="kube-state-metrics", phase="Running"})'
    requested = (
        "sum by (cluster, namespace, pod, node) (kube_pod_container_resource_requests"
        f'{{job="kube-state-metrics", resource=~"{"|".join(GPU_RESOURCES_STORED)}", node!=""}})'
    )
    return (
        f"({_pool_of(f'({requested} * on (cluster, namespace, pod) group_left() {running})', 'node')})"
        f" * on (namespace) group_left(team) {TEAM_INFO}"
    )


def _idle_devices(idle_utilization_percent: int, shared_pools: Sequence[str], mig_pools: Sequence[str]) -> str:
    """PromQL: the devices of POD_GPUS whose utilisation is under the threshold, read per kind of pool: a MIG
    slice's own utilisation, a shared GPU's per node, a whole GPU's per pod."""
    held = f'{{{WORKLOAD_POD}!=""}}[{IDLE_WINDOW}]'
    whole_gpu = f"avg_over_time({GPU_UTILIZATION}{held})"
    mig_slice = f"avg_over_time({MIG_UTILIZATION}{held}) * 100"
    # (pool matcher, utilisation in percent, per node) for each kind of pool, the unshared whole GPUs last.
    kinds: list[tuple[str, str, bool]] = []
    shared, mig = set(shared_pools), set(mig_pools)
    for pools, utilization, by_node in (
        (shared & mig, mig_slice, True),
        (mig - shared, mig_slice, False),
        (shared - mig, whole_gpu, True),
    ):
        if pools:
            kinds.append((f'{{gpu_pool=~"{_pool_matcher(sorted(pools))}"}}', utilization, by_node))
    special = shared | mig
    kinds.append((f'{{gpu_pool!~"{_pool_matcher(sorted(special))}"}}' if special else "", whole_gpu, False))
    return " or ".join(
        f"({POD_GPUS}{matcher} * on (cluster, {'node' if by_node else 'namespace, pod'}) group_left() "
        f"{_idle_share(utilization, idle_utilization_percent, by_node)})"
        for matcher, utilization, by_node in kinds
    )


def chargeback_rules(
    teams: dict[str, str],
    gpu_hour_prices: dict[str, tuple[float, bool]],
    idle_utilization_percent: int,
    shared_pools: Sequence[str] = (),
    mig_pools: Sequence[str] = (),
) -> list[alertsmanagement.PrometheusRuleArgsDict]:
    """Recording rules for device-hours allocated and idle per team and GPU pool over the last 24 h, and their cost.

    `teams` maps team -> namespace; `gpu_hour_prices` maps GPU pool -> (USD per device-hour, is an estimate);
    `shared_pools` are the pools whose GPUs are time-sliced or shared through MPS, `mig_pools` those cut into MIG
    slices. A device is allocated while a Running pod requests it; it is idle while allocated and its GPU's (MIG
    slice's) utilisation, averaged over `IDLE_WINDOW`, is under `idle_utilization_percent`.
    """
    team_info = " or ".join(_constant(1, {"team": team, "namespace": ns}) for team, ns in sorted(teams.items()))
    prices = " or ".join(
        _constant(usd, {"gpu_pool": pool, "estimate": str(estimate).lower()})
        for pool, (usd, estimate) in sorted(gpu_hour_prices.items())
    )
    idle_devices = _idle_devices(idle_utilization_percent, shared_pools, mig_pools)
    per_hour = 60 // CHARGEBACK_INTERVAL_MINUTES
    rules: list[alertsmanagement.PrometheusRuleArgsDict] = [_rule(TEAM_INFO, team_info)]
    if prices:
        rules.append(_rule(GPU_PRICE, prices))
    rules += [
        _rule(POD_GPUS, _pod_gpus()),
        _rule(GPUS_ALLOCATED, f"sum by (cluster, team, gpu_pool) ({POD_GPUS})"),
        _rule(GPUS_IDLE, f"sum by (cluster, team, gpu_pool) ({idle_devices})"),
        _rule(GPU_HOURS_ALLOCATED, f"sum_over_time({GPUS_ALLOCATED}[24h]) / {per_hour}"),
        _rule(GPU_HOURS_IDLE, f"sum_over_time({GPUS_IDLE}[24h]) / {per_hour}"),
    ]
    if prices:
        rules += [
            _rule(GPU_COST_ALLOCATED, f"{GPU_HOURS_ALLOCATED} * on (gpu_pool) group_left(estimate) {GPU_PRICE}"),
            _rule(GPU_COST_IDLE, f"{GPU_HOURS_IDLE} * on (gpu_pool) group_left(estimate) {GPU_PRICE}"),
        ]
    return rules
