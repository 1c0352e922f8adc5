"""Microsoft's recommended recording rules for managed Prometheus, as data (the names the Azure Monitor
and Grafana Kubernetes dashboards query)."""

import pulumi_azure_native.alertsmanagement as alertsmanagement


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
