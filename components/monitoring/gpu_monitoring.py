"""GPU observability after the cluster exists: the managed Prometheus pipeline and Container Insights rule,
the DCGM exporter and its PodMonitor, Grafana and the GPU alerts.

What each part builds lives in its own module (log_workspace, recording_rules, dcgm_exporter, gpu_alerts);
this component composes them on the running cluster.
"""

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.dashboard as dashboard
import pulumi_azure_native.monitor as monitor
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.prices import gpu_hour_price
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.monitoring.section import MonitoringConfig, derived_name
from aks_gpu_platform.config.training.section import TeamConfig, gpus_per_node

from ..gpu.aks_managed import ANCHOR_LABELS, managed_exporter_anchor
from ..network.policies import platform_ingress
from ..shared import roles
from ..shared.context import ClusterHandle
from . import metrics_labels as labels
from .alerts import gpu_alert_rules
from .dcgm_exporter import (
    EXPORTER_NAMESPACE,
    EXPORTER_RELEASE,
    GPU_OPERATOR_EXPORTER_LABELS,
    GPU_OPERATOR_NAMESPACE,
    METRICS_PORT_NAME,
    NODE_LABEL_RELABELINGS,
    SCRAPE_JOB,
    SCRAPE_LABEL_LIMITS,
    dcgm_exporter_release,
)
from .grafana import GrafanaDashboards
from .recording_rules import (
    CHARGEBACK_INTERVAL_MINUTES,
    KUBERNETES_RECORDING_RULES,
    NODE_RECORDING_RULES,
    chargeback_rules,
)


class GpuMonitoringArgs(TypedDict):
    settings: MonitoringConfig
    """The `monitoring` config section."""
    cluster: ClusterHandle
    """The cluster the pipeline, rules and monitors attach to."""
    base_name: str
    """Name the default resource names derive from (the cluster name)."""
    dcgm_from_operator: bool
    """True when the GPU Operator runs the DCGM exporter: scrape it instead of installing a second one."""
    log_analytics_workspace_id: pulumi.Input[str]
    """Workspace Container Insights writes to (from LogWorkspace)."""
    dcgm_exporter_repository: pulumi.Input[str]
    """`<registry login server>/<repository>` of the DCGM exporter image."""
    gpu_pools: NotRequired[Sequence[GpuPoolConfig]]
    """The GPU pools: the DCGM exporter tolerates all their taints (Spot's and extra ones included) so every
    GPU reports metrics. Without them, only the platform's GPU taint is tolerated."""
    grafana_admin_group_object_ids: NotRequired[Sequence[str]]
    """Grafana Admin groups used when the settings name none (the cluster's admin groups)."""
    aks_managed_exporter: NotRequired[bool]
    """gpuStack.mode aksManaged: AKS runs the exporter on every GPU node; scrape it instead of installing one."""
    operator_release: NotRequired[pulumi.Resource | None]
    """The GPU Operator release (gpuOperator mode): it creates the namespace of its own exporter's PodMonitor, or the
    RuntimeClass ours runs with."""
    exporter_runtime_class: NotRequired[str | None]
    """RuntimeClass of our DCGM exporter: the GPU Operator's where its driver serves the nodes (containerd's default
    runtime there is runc); None where AKS makes NVIDIA's runtime the default (driver Install)."""
    teams: NotRequired[Sequence[TeamConfig]]
    """Training teams: chargeback recording rules per team and the team dashboard (Kueue queues, GPU-hours)."""


class GpuMonitoring(pulumi.ComponentResource):
    """DCGM metrics into managed Prometheus, Container Insights, Grafana and GPU alert rules."""

    monitor_workspace_id: pulumi.Output[str]
    """Azure Monitor workspace ID (grant Monitoring Data Reader here to query it)."""
    prometheus_query_endpoint: pulumi.Output[str]
    """PromQL endpoint of the workspace (KEDA's serverAddress)."""
    grafana_endpoint: pulumi.Output[str]
    """URL of the Managed Grafana instance."""
    grafana_id: pulumi.Output[str]
    """Azure resource ID of the Managed Grafana instance (scope for Grafana role assignments)."""
    action_group_id: pulumi.Output[str]
    """Action group every GPU alert notifies."""
    exporter_pod_labels: dict[str, str]
    """Labels of the DCGM exporter pods the PodMonitor selects."""
    dcgm_exporter: k8s.helm.v3.Release | None
    """Our DCGM exporter release; None in GPU Operator mode (the operator runs its own) and in aksManaged mode
    (AKS runs one on every node)."""

    def __init__(self, name: str, args: GpuMonitoringArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuMonitoring", name, None, opts)
        cfg, handle = args["settings"], args["cluster"]
        gpu_pools = list(args.get("gpu_pools", []))
        tags = dict(handle.tags)
        rg = handle.resource_group_name
        location = handle.location
        base = args["base_name"]
        cluster_id = handle.cluster_id
        child = pulumi.ResourceOptions(parent=self)

        # Metrics: workspace <- rule <- endpoint, associated with the cluster's managed Prometheus agent.
        workspace = monitor.AzureMonitorWorkspace(
            f"{name}-workspace",
            resource_group_name=rg,
            location=location,
            azure_monitor_workspace_name=derived_name(cfg.workspace_name, "amw-", base, 44),
            tags=tags,
            # The stored GPU and cluster metrics are history no redeploy brings back; prod refuses to delete them.
            opts=pulumi.ResourceOptions(parent=self, protect=handle.protect),
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
                cluster_name=handle.cluster_name,
                scopes=rule_scopes,
                interval="PT1M",
                enabled=True,
                description=f"Microsoft's recommended {role} recording rules",
                rules=rules,
                tags=tags,
                opts=child,
            )

        teams = list(args.get("teams", []))
        if teams:
            # Teams are charged per GPU device they request: a MIG slice or shared replica costs its share.
            prices = {
                pool.name: (price.usd, price.estimate)
                for pool in gpu_pools
                if (price := gpu_hour_price(pool.vm_size, gpus_per_node(pool))) is not None
            }
            alertsmanagement.PrometheusRuleGroup(
                f"{name}-chargeback-recording-rules",
                resource_group_name=rg,
                location=location,
                rule_group_name=derived_name(None, "ChargebackRecordingRulesRuleGroup-", base, 260),
                cluster_name=handle.cluster_name,
                scopes=rule_scopes,
                interval=f"PT{CHARGEBACK_INTERVAL_MINUTES}M",
                enabled=True,
                description="GPU-hours allocated and idle per team and GPU pool, priced per GPU-hour",
                rules=chargeback_rules(
                    {t.name: t.namespace_name for t in teams},
                    prices,
                    cfg.alerts.thresholds.idle_utilization_percent,
                    [pool.name for pool in gpu_pools if pool.sharing is not None],
                    [pool.name for pool in gpu_pools if pool.mig_profile is not None],
                ),
                tags=tags,
                opts=child,
            )

        # The DCGM exporter (ours, or the GPU Operator's) and the monitor managed Prometheus scrapes.
        k8s_opts = handle.k8s_options(self)
        exporter_dependencies: list[pulumi.Resource] = []
        self.dcgm_exporter = None
        if args["dcgm_from_operator"]:
            namespace = GPU_OPERATOR_NAMESPACE
            self.exporter_pod_labels = dict(GPU_OPERATOR_EXPORTER_LABELS)
            # A PodMonitor sent before the release has created its namespace fails the first `pulumi up`.
            operator_release = args.get("operator_release")
            exporter_dependencies = [operator_release] if operator_release is not None else []
        elif args.get("aks_managed_exporter", False):
            # AKS's exporter on each node, reached through an anchor pod (components/gpu/aks_managed.py).
            namespace = EXPORTER_NAMESPACE
            exporter_namespace = k8s.core.v1.Namespace(
                f"{name}-namespace",
                metadata={"name": EXPORTER_NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}},
                opts=k8s_opts,
            )
            platform_ingress(name, exporter_namespace.metadata["name"], k8s_opts)
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
            operator_release = args.get("operator_release")
            self.dcgm_exporter = dcgm_exporter_release(
                name,
                cfg.dcgm_exporter,
                args["dcgm_exporter_repository"],
                gpu_pools,
                k8s_opts,
                runtime_class=args.get("exporter_runtime_class"),
                depends_on=[operator_release] if operator_release is not None else [],
            )
            exporter_dependencies = [self.dcgm_exporter]

        # PodMonitor's CRD comes with the managed Prometheus add-on: wait for the cluster and the association.
        self.scrape_dependencies: list[pulumi.Resource] = [handle.cluster, prometheus_link]
        """What a PodMonitor/ServiceMonitor waits for: the cluster and the add-on whose CRDs it needs."""
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
                        "metricRelabelings": NODE_LABEL_RELABELINGS,
                    }
                ],
            },
            opts=pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=[*self.scrape_dependencies, *exporter_dependencies])
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
        self.grafana_id = grafana.id
        self._dashboards = GrafanaDashboards(
            f"{name}-dashboards",
            {
                "grafana_id": grafana.id,
                "grafana_endpoint": self.grafana_endpoint,
                "dashboards": ["gpu-overview", *(["gpu-teams"] if teams else [])],
                "teams": [{"name": t.name, "member_groups": t.members} for t in teams],
                # The idle panel counts what the idle alert fires on.
                "constants": {
                    "idle_threshold": str(cfg.alerts.thresholds.idle_utilization_percent),
                    "idle_window": f"{cfg.alerts.thresholds.idle_minutes}m",
                },
            },
            child,
        )
        grafana_principal = grafana.identity.apply(lambda i: i.principal_id if i else "")
        roles.assign_role(
            f"{name}-grafana-workspace-reader",
            role_guid=roles.MONITORING_DATA_READER,
            principal_id=grafana_principal,
            scope=workspace.id,
            opts=child,
        )
        if cfg.grafana.container_logs:
            # Grafana queries logs as itself: every Grafana user, team members included, then reads every namespace.
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
            cluster_name=handle.cluster_name,
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
                "grafana_id": self.grafana_id,
                "action_group_id": self.action_group_id,
            }
        )

    def add_dashboard(self, resource: str, board: dict[str, Any]) -> None:
        """Another dashboard in the platform's Grafana folder, from the concern that owns its series."""
        self._dashboards.add(resource, board)
