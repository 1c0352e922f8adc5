"""GPU observability: Log Analytics, managed Prometheus, DCGM exporter, Grafana and GPU alerts.

`LogWorkspace` comes before the cluster (the Container Insights add-on names it);
`GpuMonitoring` comes after (its rules and monitors attach to the running cluster).
"""

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.containerservice as containerservice
import pulumi_azure_native.dashboard as dashboard
import pulumi_azure_native.monitor as monitor
import pulumi_azure_native.operationalinsights as operationalinsights
import pulumi_kubernetes as k8s

from config.gpu import GpuPoolConfig
from config.loader import validate_section
from config.monitoring import AlertThresholdsConfig, LogsConfig, MonitoringConfig, derived_name

from . import metrics_labels as labels
from . import roles
from .aks_managed_gpu import ANCHOR_LABELS, managed_exporter_anchor
from .gpu_scheduling import GPU_POOL_LABEL_KEY, GPU_POOL_LABEL_VALUE, GPU_POOL_NAME_LABEL_KEY, gpu_pod_scheduling

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


def gpu_alert_rules(
    t: AlertThresholdsConfig, action_group_id: pulumi.Input[str], enabled: bool
) -> list[alertsmanagement.PrometheusRuleArgsDict]:
    """The GPU alerts: hardware faults first (severity 1), then heat, memory pressure and waste.

    Every label they read comes from the label contract (`metrics_labels`), the names the scrape really stores.
    """
    gpu = f"GPU {{{{ $labels.{labels.GPU} }}}} on {{{{ $labels.{labels.NODE} }}}}"
    holder = f"{{{{ $labels.{labels.WORKLOAD_NAMESPACE} }}}}/{{{{ $labels.{labels.WORKLOAD_POD} }}}}"
    memory_percent = "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) * 100"
    by_node = f"{labels.CLUSTER}, node"
    gpu_nodes = f'max by ({by_node}) (kube_node_labels{{label_{GPU_POOL_LABEL_KEY}="{GPU_POOL_LABEL_VALUE}"}})'
    reporting = f'max by ({by_node}) (label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "{labels.NODE}", "(.*)"))'
    specs: list[tuple[str, str, str, int, str]] = [
        (
            "GpuXidError",
            "DCGM_FI_DEV_XID_ERRORS > 0",
            "PT1M",
            1,
            f"{gpu} reported XID {{{{ $value }}}}; check the driver log, the node may need a reboot or repair",
        ),
        (
            "GpuDoubleBitEccErrors",
            "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0",
            "PT1M",
            1,
            f"{gpu} has uncorrectable (double-bit) ECC errors; drain the node",
        ),
        (
            "GpuTemperatureHigh",
            f"DCGM_FI_DEV_GPU_TEMP > {t.gpu_temperature_celsius}",
            f"PT{t.temperature_minutes}M",
            2,
            f"{gpu} is above {t.gpu_temperature_celsius} C and will throttle",
        ),
        (
            "GpuMemoryNearlyFull",
            f"{memory_percent} > {t.memory_used_percent}",
            f"PT{t.memory_minutes}M",
            3,
            f"{gpu} uses more than {t.memory_used_percent}% of its memory; the next allocation may fail "
            "with out-of-memory",
        ),
        (
            "GpuAllocatedButIdle",
            f'avg_over_time(DCGM_FI_DEV_GPU_UTIL{{{labels.WORKLOAD_POD}!=""}}[{t.idle_minutes}m])'
            f" < {t.idle_utilization_percent}",
            "PT5M",
            3,
            f"Pod {holder} holds a GPU below {t.idle_utilization_percent}% utilisation for {t.idle_minutes} min: "
            "paid for, unused",
        ),
        (
            "GpuNodeNotReportingMetrics",
            f"{gpu_nodes} unless on ({by_node}) {reporting}",
            f"PT{t.not_reporting_minutes}M",
            2,
            "GPU node {{ $labels.node }} sends no DCGM metrics: its GPUs are unobserved (exporter down or GPU lost)",
        ),
        (
            "DcgmExporterDown",
            f'up{{job="{labels.SCRAPE_JOB}"}} == 0',
            f"PT{t.not_reporting_minutes}M",
            2,
            f"The DCGM exporter at {{{{ $labels.{labels.TARGET_ADDRESS} }}}} cannot be scraped",
        ),
    ]
    return [
        {
            "alert": alert,
            "expression": expression,
            "for_": for_,
            "severity": severity,
            "enabled": enabled,
            "labels": {"team": "gpu-platform"},
            "annotations": {"description": description},
            "actions": [{"action_group_id": action_group_id}],
            "resolve_configuration": {"auto_resolved": True, "time_to_resolve": "PT10M"},
        }
        for alert, expression, for_, severity, description in specs
    ]


class LogWorkspaceArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the workspace."""
    location: pulumi.Input[str]
    """Azure region."""
    base_name: str
    """Name the workspace's default name derives from (the cluster name)."""
    settings: Mapping[str, Any]
    """The `monitoring.logs` config section (camelCase keys)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete the workspace and the logs in it (prod)."""


class LogWorkspace(pulumi.ComponentResource):
    """The Log Analytics workspace Container Insights writes to; exists before the cluster."""

    workspace_id: pulumi.Output[str]
    """Azure resource ID of the workspace."""

    def __init__(self, name: str, args: LogWorkspaceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:LogWorkspace", name, None, opts)
        cfg = validate_section(LogsConfig, args["settings"], source="LogWorkspace settings")
        workspace = operationalinsights.Workspace(
            f"{name}-workspace",
            resource_group_name=args["resource_group_name"],
            location=args["location"],
            workspace_name=derived_name(cfg.workspace_name, "log-", args["base_name"], 63),
            sku={"name": operationalinsights.WorkspaceSkuNameEnum.PER_GB2018},
            retention_in_days=cfg.retention_in_days,
            features={"enable_log_access_using_only_resource_permissions": True},
            tags=dict(args.get("tags", {})),
            # Logs are evidence after an incident; prod refuses to delete them with the stack.
            opts=pulumi.ResourceOptions(parent=self, protect=args.get("protect", False)),
        )
        self.workspace_id = workspace.id
        self.register_outputs({"workspace_id": self.workspace_id})


def container_insights_addon(
    workspace_id: pulumi.Input[str],
) -> dict[str, containerservice.ManagedClusterAddonProfileArgsDict]:
    """The cluster's `omsagent` add-on (Container Insights), authenticating with its managed identity."""
    return {
        "omsagent": {
            "enabled": True,
            "config": {"logAnalyticsWorkspaceResourceID": workspace_id, "useAADAuth": "true"},
        }
    }


def managed_prometheus_profile() -> containerservice.ManagedClusterAzureMonitorProfileArgsDict:
    """Managed Prometheus on the cluster; kube-state-metrics keeps the pool labels the GPU alerts join on."""
    return {
        "metrics": {
            "enabled": True,
            "kube_state_metrics": {
                "metric_labels_allowlist": f"nodes=[{GPU_POOL_LABEL_KEY},{GPU_POOL_NAME_LABEL_KEY}]",
            },
        }
    }


class GpuMonitoringArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the monitoring resources."""
    location: pulumi.Input[str]
    """Azure region."""
    base_name: str
    """Name the default resource names derive from (the cluster name)."""
    settings: Mapping[str, Any]
    """The `monitoring` config section (camelCase keys, as in the stack YAML)."""
    dcgm_from_operator: bool
    """True when the GPU Operator runs the DCGM exporter: scrape it instead of installing a second one."""
    cluster: containerservice.ManagedCluster
    """The cluster: the in-cluster objects are deleted with it."""
    cluster_id: pulumi.Input[str]
    """Cluster the data collection rules and alert rules attach to."""
    cluster_name: pulumi.Input[str]
    """Cluster name the Prometheus rule groups are bound to."""
    provider: k8s.Provider
    """Kubernetes provider of the cluster."""
    log_analytics_workspace_id: pulumi.Input[str]
    """Workspace Container Insights writes to (from LogWorkspace)."""
    dcgm_exporter_repository: pulumi.Input[str]
    """`<registry login server>/<repository>` of the DCGM exporter image."""
    gpu_pools: NotRequired[Sequence[Mapping[str, Any]]]
    """The `gpuPools` config section: the DCGM exporter tolerates all their taints (Spot's and extra ones
    included) so every GPU reports metrics. Without it, only the platform's GPU taint is tolerated."""
    grafana_admin_group_object_ids: NotRequired[Sequence[str]]
    """Grafana Admin groups used when the settings name none (the cluster's admin groups)."""
    tags: NotRequired[Mapping[str, str]]
    """Azure tags."""
    protect: NotRequired[bool]
    """Refuse to delete the Azure Monitor workspace and the metrics in it (prod)."""
    aks_managed_exporter: NotRequired[bool]
    """gpuStack.mode aksManaged: AKS runs the exporter on every GPU node; scrape it instead of installing one."""


class GpuMonitoring(pulumi.ComponentResource):
    """DCGM metrics into managed Prometheus, Container Insights, Grafana and GPU alert rules."""

    monitor_workspace_id: pulumi.Output[str]
    """Azure Monitor workspace ID (grant Monitoring Data Reader here to query it)."""
    prometheus_query_endpoint: pulumi.Output[str]
    """PromQL endpoint of the workspace (KEDA's serverAddress)."""
    grafana_endpoint: pulumi.Output[str]
    """URL of the Managed Grafana instance."""
    action_group_id: pulumi.Output[str]
    """Action group every GPU alert notifies."""
    exporter_pod_labels: dict[str, str]
    """Labels of the DCGM exporter pods the PodMonitor selects."""
    dcgm_exporter: k8s.helm.v3.Release | None
    """Our DCGM exporter release; None in GPU Operator mode (the operator runs its own) and in aksManaged mode
    (AKS runs one on every node)."""

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuMonitoring", name, None, opts)
        cfg = validate_section(MonitoringConfig, args["settings"], source="GpuMonitoring settings")
        gpu_pools = [
            validate_section(GpuPoolConfig, p, source="GpuMonitoring gpu_pools") for p in args.get("gpu_pools", [])
        ]
        tags = dict(args.get("tags", {}))
        rg = args["resource_group_name"]
        location = args["location"]
        base = args["base_name"]
        cluster_id = args["cluster_id"]
        child = pulumi.ResourceOptions(parent=self)

        # Metrics: workspace <- rule <- endpoint, associated with the cluster's managed Prometheus agent.
        workspace = monitor.AzureMonitorWorkspace(
            f"{name}-workspace",
            resource_group_name=rg,
            location=location,
            azure_monitor_workspace_name=derived_name(cfg.workspace_name, "amw-", base, 44),
            tags=tags,
            # The stored GPU and cluster metrics are history no redeploy brings back; prod refuses to delete them.
            opts=pulumi.ResourceOptions(parent=self, protect=args.get("protect", False)),
        )
        self.monitor_workspace_id = workspace.id
        self.prometheus_query_endpoint = workspace.metrics.apply(lambda m: m.prometheus_query_endpoint)

        endpoint = monitor.DataCollectionEndpoint(
            f"{name}-prometheus-dce",
            resource_group_name=rg,
            location=location,
            data_collection_endpoint_name=derived_name(None, "dce-prom-", base, 44),
            kind=monitor.KnownDataCollectionEndpointResourceKind.LINUX,
            tags=tags,
            opts=child,
        )
        prometheus_rule = monitor.DataCollectionRule(
            f"{name}-prometheus-dcr",
            resource_group_name=rg,
            location=location,
            data_collection_rule_name=derived_name(None, "dcr-prom-", base, 64),
            kind=monitor.KnownDataCollectionRuleResourceKind.LINUX,
            data_collection_endpoint_id=endpoint.id,
            data_sources={
                "prometheus_forwarder": [
                    {
                        "name": "PrometheusDataSource",
                        "streams": [monitor.KnownPrometheusForwarderDataSourceStreams.MICROSOFT_PROMETHEUS_METRICS],
                    }
                ]
            },
            destinations={"monitoring_accounts": [{"name": "MonitoringAccount1", "account_resource_id": workspace.id}]},
            data_flows=[{"streams": ["Microsoft-PrometheusMetrics"], "destinations": ["MonitoringAccount1"]}],
            tags=tags,
            opts=child,
        )
        prometheus_link = monitor.DataCollectionRuleAssociation(
            f"{name}-prometheus-dcra",
            resource_uri=cluster_id,
            association_name="ContainerInsightsMetricsExtension",
            data_collection_rule_id=prometheus_rule.id,
            description="Managed Prometheus metrics of the cluster into the Azure Monitor workspace",
            opts=child,
        )
        # The agent reads its configuration through the endpoint association (required with private links).
        monitor.DataCollectionRuleAssociation(
            f"{name}-prometheus-dce-association",
            resource_uri=cluster_id,
            association_name="configurationAccessEndpoint",
            data_collection_endpoint_id=endpoint.id,
            opts=child,
        )

        # Logs: Container Insights with managed identity authentication needs its own rule.
        logs_rule = monitor.DataCollectionRule(
            f"{name}-container-insights-dcr",
            resource_group_name=rg,
            location=location,
            data_collection_rule_name=derived_name(None, "dcr-ci-", base, 64),
            kind=monitor.KnownDataCollectionRuleResourceKind.LINUX,
            data_sources={
                "extensions": [
                    {
                        "name": "ContainerInsightsExtension",
                        "extension_name": "ContainerInsights",
                        "streams": ["Microsoft-ContainerInsights-Group-Default"],
                        "extension_settings": {
                            "dataCollectionSettings": {
                                "interval": cfg.logs.container_log_interval,
                                "namespaceFilteringMode": "Off",
                                "enableContainerLogV2": True,
                            }
                        },
                    }
                ]
            },
            destinations={
                "log_analytics": [{"name": "ciworkspace", "workspace_resource_id": args["log_analytics_workspace_id"]}]
            },
            data_flows=[{"streams": ["Microsoft-ContainerInsights-Group-Default"], "destinations": ["ciworkspace"]}],
            tags=tags,
            opts=child,
        )
        monitor.DataCollectionRuleAssociation(
            f"{name}-container-insights-dcra",
            resource_uri=cluster_id,
            association_name="ContainerInsightsExtension",
            data_collection_rule_id=logs_rule.id,
            description="Container Insights logs of the cluster into the Log Analytics workspace",
            opts=child,
        )

        # Recording rules the standard Kubernetes dashboards query.
        rule_scopes = [workspace.id, cluster_id]
        for role, rules in (("node", NODE_RECORDING_RULES), ("kubernetes", KUBERNETES_RECORDING_RULES)):
            alertsmanagement.PrometheusRuleGroup(
                f"{name}-{role}-recording-rules",
                resource_group_name=rg,
                location=location,
                rule_group_name=derived_name(None, f"{role.capitalize()}RecordingRulesRuleGroup-", base, 260),
                cluster_name=args["cluster_name"],
                scopes=rule_scopes,
                interval="PT1M",
                enabled=True,
                description=f"Microsoft's recommended {role} recording rules",
                rules=rules,
                tags=tags,
                opts=child,
            )

        # The DCGM exporter (ours, or the GPU Operator's) and the monitor managed Prometheus scrapes.
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args["provider"], deleted_with=args["cluster"])
        exporter_dependencies: list[pulumi.Resource] = []
        self.dcgm_exporter = None
        if args["dcgm_from_operator"]:
            namespace = GPU_OPERATOR_NAMESPACE
            self.exporter_pod_labels = dict(GPU_OPERATOR_EXPORTER_LABELS)
        elif args.get("aks_managed_exporter", False):
            # AKS's exporter on each node, reached through an anchor pod (components/aks_managed_gpu.py).
            namespace = EXPORTER_NAMESPACE
            exporter_namespace = k8s.core.v1.Namespace(
                f"{name}-namespace",
                metadata={"name": EXPORTER_NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}},
                opts=k8s_opts,
            )
            self.exporter_pod_labels = dict(ANCHOR_LABELS)
            exporter_dependencies = managed_exporter_anchor(
                name,
                exporter_namespace.metadata.apply(lambda m: m.name or EXPORTER_NAMESPACE),
                METRICS_PORT_NAME,
                gpu_pools,
                k8s_opts,
            )
        else:
            namespace = EXPORTER_NAMESPACE
            self.exporter_pod_labels = {
                "app.kubernetes.io/name": EXPORTER_RELEASE,
                "app.kubernetes.io/instance": EXPORTER_RELEASE,
            }
            self.dcgm_exporter = self._dcgm_exporter(name, args, cfg, gpu_pools, k8s_opts)
            exporter_dependencies = [self.dcgm_exporter]

        # PodMonitor's CRD comes with the managed Prometheus add-on: wait for the cluster and the association.
        self.pod_monitor = k8s.apiextensions.CustomResource(
            f"{name}-dcgm-pod-monitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": "dcgm-exporter", "namespace": namespace},
            spec={
                **SCRAPE_LABEL_LIMITS,
                "selector": {"matchLabels": self.exporter_pod_labels},
                "namespaceSelector": {"matchNames": [namespace]},
                "podMetricsEndpoints": [
                    {
                        "port": METRICS_PORT_NAME,
                        "path": "/metrics",
                        "interval": f"{cfg.dcgm_exporter.scrape_interval_seconds}s",
                        # The label contract: the exporter pod keeps namespace/pod, the GPU's pod is exported_*.
                        "honorLabels": labels.HONOR_LABELS,
                        # One stable job name for the alerts, whichever exporter is scraped.
                        "relabelings": [{"action": "replace", "targetLabel": "job", "replacement": SCRAPE_JOB}],
                    }
                ],
            },
            opts=pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=[args["cluster"], prometheus_link, *exporter_dependencies])
            ),
        )

        # Grafana reads the workspace with its own identity.
        grafana = dashboard.Grafana(
            f"{name}-grafana",
            resource_group_name=rg,
            location=location,
            workspace_name=derived_name(cfg.grafana.name, "grafana-", base, 23),
            sku={"name": "Standard"},
            identity={"type": dashboard.ManagedServiceIdentityType.SYSTEM_ASSIGNED},
            properties={
                "api_key": dashboard.ApiKey.DISABLED,
                "deterministic_outbound_ip": dashboard.DeterministicOutboundIP.DISABLED,
                "public_network_access": (
                    dashboard.PublicNetworkAccess.ENABLED
                    if cfg.grafana.public_network_access
                    else dashboard.PublicNetworkAccess.DISABLED
                ),
                "zone_redundancy": (
                    dashboard.ZoneRedundancy.ENABLED
                    if cfg.grafana.zone_redundancy
                    else dashboard.ZoneRedundancy.DISABLED
                ),
                "grafana_integrations": {
                    "azure_monitor_workspace_integrations": [{"azure_monitor_workspace_resource_id": workspace.id}]
                },
            },
            tags=tags,
            opts=child,
        )
        self.grafana_endpoint = grafana.properties.apply(lambda p: p.endpoint or "")
        grafana_principal = grafana.identity.apply(lambda i: i.principal_id if i else "")
        roles.assign_role(
            f"{name}-grafana-workspace-reader",
            role_guid=roles.MONITORING_DATA_READER,
            principal_id=grafana_principal,
            scope=workspace.id,
            opts=child,
        )
        roles.assign_role(
            f"{name}-grafana-logs-reader",
            role_guid=roles.MONITORING_READER,
            principal_id=grafana_principal,
            scope=args["log_analytics_workspace_id"],
            opts=child,
        )
        admins = list(cfg.grafana.admin_group_object_ids) or list(args.get("grafana_admin_group_object_ids", []))
        for i, group in enumerate(admins):
            roles.assign_role(
                f"{name}-grafana-admin-{i}",
                role_guid=roles.GRAFANA_ADMIN,
                principal_id=group,
                principal_type=authorization.PrincipalType.GROUP,
                scope=grafana.id,
                opts=child,
            )

        # GPU alerts, notifying the configured receivers.
        alerts = cfg.alerts
        action_group = monitor.ActionGroup(
            f"{name}-gpu-alerts-action-group",
            resource_group_name=rg,
            location="Global",
            action_group_name=derived_name(None, "ag-gpu-", base, 260),
            group_short_name=alerts.action_group_short_name,
            enabled=True,
            email_receivers=[
                {"name": r.name, "email_address": r.email, "use_common_alert_schema": r.use_common_alert_schema}
                for r in alerts.email_receivers
            ],
            tags=tags,
            opts=child,
        )
        self.action_group_id = action_group.id
        self.gpu_alerts = alertsmanagement.PrometheusRuleGroup(
            f"{name}-gpu-alerts",
            resource_group_name=rg,
            location=location,
            rule_group_name=derived_name(None, "GpuAlerts-", base, 260),
            cluster_name=args["cluster_name"],
            scopes=rule_scopes,
            interval="PT1M",
            enabled=True,
            description="GPU health, heat, memory pressure and waste",
            rules=gpu_alert_rules(alerts.thresholds, action_group.id, alerts.enabled),
            tags=tags,
            opts=child,
        )

        self.register_outputs(
            {
                "monitor_workspace_id": self.monitor_workspace_id,
                "prometheus_query_endpoint": self.prometheus_query_endpoint,
                "grafana_endpoint": self.grafana_endpoint,
                "action_group_id": self.action_group_id,
            }
        )

    def _dcgm_exporter(
        self,
        name: str,
        args: GpuMonitoringArgs,
        cfg: MonitoringConfig,
        gpu_pools: Sequence[GpuPoolConfig],
        k8s_opts: pulumi.ResourceOptions,
    ) -> k8s.helm.v3.Release:
        """NVIDIA's chart on every GPU node (all GPU pools' taints tolerated), image from our registry, collecting
        the platform's counters."""
        exporter = cfg.dcgm_exporter
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": EXPORTER_NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}},
            opts=k8s_opts,
        )
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
                "image": {"repository": args["dcgm_exporter_repository"], "tag": exporter.image_tag},
                "arguments": ["-f", COUNTERS_FILE],
                "extraConfigMapVolumes": [
                    {"name": "platform-counters", "configMap": {"name": "dcgm-exporter-counters"}}
                ],
                "extraVolumeMounts": [
                    {"name": "platform-counters", "mountPath": COUNTERS_FILE, "subPath": "platform-counters.csv"}
                ],
                # The chart's top-level nodeSelector/tolerations (templates/daemonset.yaml; default: none).
                **gpu_pod_scheduling(gpu_pools),
                "resources": {
                    "requests": {"cpu": r.cpu_request, "memory": r.memory_request},
                    "limits": {"cpu": r.cpu_limit, "memory": r.memory_limit},
                },
                # The chart's ServiceMonitor is monitoring.coreos.com, which managed Prometheus ignores.
                "serviceMonitor": {"enabled": False},
            },
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[namespace, counters])),
        )
