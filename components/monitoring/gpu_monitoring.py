"""GPU observability after the cluster exists: the managed Prometheus pipeline and Container Insights rule,
the DCGM exporter and its PodMonitor, recording rules, Grafana and the GPU alerts.

The constructor reads as its stages, in order; what a stage builds from lives in its own module (data_collection,
recording_rules, dcgm_exporter, grafana, alerts).
"""

from collections.abc import Sequence
from typing import Any, NamedTuple, NotRequired, TypedDict

import pulumi
import pulumi_azure_native.alertsmanagement as alertsmanagement
import pulumi_azure_native.authorization as authorization
import pulumi_azure_native.dashboard as dashboard
import pulumi_azure_native.monitor as monitor
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.prices import gpu_hour_price
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.monitoring.section import (
    AlertsConfig,
    AlertThresholdsConfig,
    GrafanaConfig,
    MonitoringConfig,
    derived_name,
)
from aks_gpu_platform.config.training.section import TeamConfig, gpus_per_node

from ..network.policies import platform_ingress
from ..shared import roles
from ..shared.context import ClusterHandle
from ..shared.workloads import pod_security_labels
from . import metrics_labels as labels
from .aks_exporter import ANCHOR_LABELS, managed_exporter_anchor
from .alerts import gpu_alert_rules
from .data_collection import container_insights, prometheus_pipeline
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
from .grafana import GrafanaDashboards, with_constants
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
        cfg, handle, base = args["settings"], args["cluster"], args["base_name"]
        gpu_pools = list(args.get("gpu_pools", []))
        teams = list(args.get("teams", []))
        log_workspace_id = args["log_analytics_workspace_id"]

        metrics = prometheus_pipeline(name, handle, base, cfg.workspace_name, self)
        self.monitor_workspace_id = metrics.workspace.id
        self.prometheus_query_endpoint = metrics.workspace.metrics.apply(lambda m: m.prometheus_query_endpoint)
        container_insights(name, handle, base, cfg.logs.container_log_interval, log_workspace_id, self)

        # Every rule group evaluates the workspace's series of this cluster.
        rule_scopes = [metrics.workspace.id, handle.cluster_id]
        self._recording_rules(name, handle, base, rule_scopes, teams, gpu_pools, cfg.alerts.thresholds)

        k8s_opts = handle.k8s_options(self)
        exporter = _exporter(name, args, gpu_pools, k8s_opts)
        self.exporter_pod_labels, self.dcgm_exporter = exporter.pod_labels, exporter.release
        # PodMonitor's CRD comes with the managed Prometheus add-on: wait for the cluster and the association.
        self.scrape_dependencies: list[pulumi.Resource] = [handle.cluster, metrics.agent_link]
        """What a PodMonitor/ServiceMonitor waits for: the cluster and the add-on whose CRDs it needs."""
        self.pod_monitor = _pod_monitor(
            name, exporter, cfg.dcgm_exporter.scrape_interval_seconds, self.scrape_dependencies, k8s_opts
        )

        admins = list(cfg.grafana.admin_group_object_ids) or list(args.get("grafana_admin_group_object_ids", []))
        self.grafana_id, self.grafana_endpoint = self._grafana(
            name, cfg, handle, base, metrics.workspace.id, log_workspace_id, admins, teams
        )
        self.action_group_id, self.gpu_alerts = self._alerts(name, cfg.alerts, handle, base, rule_scopes)

        self.register_outputs(
            {
                "monitor_workspace_id": self.monitor_workspace_id,
                "prometheus_query_endpoint": self.prometheus_query_endpoint,
                "grafana_endpoint": self.grafana_endpoint,
                "grafana_id": self.grafana_id,
                "action_group_id": self.action_group_id,
            }
        )

    def _recording_rules(
        self,
        name: str,
        handle: ClusterHandle,
        base: str,
        scopes: Sequence[pulumi.Input[str]],
        teams: Sequence[TeamConfig],
        gpu_pools: Sequence[GpuPoolConfig],
        thresholds: AlertThresholdsConfig,
    ) -> None:
        """The recording rules the standard Kubernetes dashboards query, and the teams' chargeback."""
        for role, rules in (("node", NODE_RECORDING_RULES), ("kubernetes", KUBERNETES_RECORDING_RULES)):
            self._rule_group(
                f"{name}-{role}-recording-rules",
                handle,
                scopes,
                derived_name(None, f"{role.capitalize()}RecordingRulesRuleGroup-", base, 260),
                "PT1M",
                f"Microsoft's recommended {role} recording rules",
                rules,
            )
        if not teams:
            return
        # Teams are charged per GPU device they request: a MIG slice or shared replica costs its share.
        prices = {
            pool.name: (price.usd, price.estimate)
            for pool in gpu_pools
            if (price := gpu_hour_price(pool.vm_size, gpus_per_node(pool), pool.priority == "Spot")) is not None
        }
        self._rule_group(
            f"{name}-chargeback-recording-rules",
            handle,
            scopes,
            derived_name(None, "ChargebackRecordingRulesRuleGroup-", base, 260),
            f"PT{CHARGEBACK_INTERVAL_MINUTES}M",
            "GPU-hours allocated and idle per team and GPU pool, priced per GPU-hour",
            chargeback_rules(
                {t.name: t.namespace_name for t in teams},
                prices,
                thresholds.idle_utilization_percent,
                [pool.name for pool in gpu_pools if pool.sharing is not None],
                [pool.name for pool in gpu_pools if pool.mig_profile is not None],
            ),
        )

    def _rule_group(
        self,
        resource_name: str,
        handle: ClusterHandle,
        scopes: Sequence[pulumi.Input[str]],
        group_name: str,
        interval: str,
        description: str,
        rules: Sequence[alertsmanagement.PrometheusRuleArgsDict],
    ) -> alertsmanagement.PrometheusRuleGroup:
        """A rule group of this cluster, evaluated every `interval` (ISO 8601) over `scopes`."""
        return alertsmanagement.PrometheusRuleGroup(
            resource_name,
            resource_group_name=handle.resource_group_name,
            location=handle.location,
            rule_group_name=group_name,
            cluster_name=handle.cluster_name,
            scopes=scopes,
            interval=interval,
            enabled=True,
            description=description,
            rules=rules,
            tags=dict(handle.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _grafana(
        self,
        name: str,
        cfg: MonitoringConfig,
        handle: ClusterHandle,
        base: str,
        metrics_workspace_id: pulumi.Output[str],
        log_workspace_id: pulumi.Input[str],
        admins: Sequence[str],
        teams: Sequence[TeamConfig],
    ) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
        """Managed Grafana reading the workspace with its own identity, the teams' folders and who administers it.
        Returns its ID and endpoint."""
        child = pulumi.ResourceOptions(parent=self)
        grafana = _grafana_instance(f"{name}-grafana", cfg.grafana, handle, base, metrics_workspace_id, child)
        endpoint = grafana.properties.apply(lambda p: p.endpoint or "")
        # The idle panel counts what the idle alert fires on.
        thresholds = cfg.alerts.thresholds
        self._dashboard_constants = {
            "idle_threshold": str(thresholds.idle_utilization_percent),
            "idle_window": f"{thresholds.idle_minutes}m",
        }
        # The platform folder's dashboards come from the add-ons (add_dashboard); teams get their own folders here.
        self._dashboards = GrafanaDashboards(
            f"{name}-dashboards",
            {
                "grafana_id": grafana.id,
                "grafana_endpoint": endpoint,
                "dashboards": [],
                "teams": [{"name": t.name, "member_groups": t.members} for t in teams],
                "constants": self._dashboard_constants,
            },
            child,
        )
        principal = grafana.identity.apply(lambda i: i.principal_id if i else "")
        _grafana_roles(name, cfg.grafana, principal, grafana.id, metrics_workspace_id, log_workspace_id, admins, child)
        return grafana.id, endpoint

    def _alerts(
        self, name: str, alerts: AlertsConfig, handle: ClusterHandle, base: str, scopes: Sequence[pulumi.Input[str]]
    ) -> tuple[pulumi.Output[str], alertsmanagement.PrometheusRuleGroup]:
        """The GPU alerts and the action group they notify. Returns the action group's ID and the alert rules."""
        child = pulumi.ResourceOptions(parent=self)
        action_group = monitor.ActionGroup(
            f"{name}-gpu-alerts-action-group",
            resource_group_name=handle.resource_group_name,
            location="Global",
            action_group_name=derived_name(None, "ag-gpu-", base, 260),
            group_short_name=alerts.action_group_short_name,
            enabled=True,
            email_receivers=[
                {"name": r.name, "email_address": r.email, "use_common_alert_schema": r.use_common_alert_schema}
                for r in alerts.email_receivers
            ],
            tags=dict(handle.tags),
            opts=child,
        )
        rules = self._rule_group(
            f"{name}-gpu-alerts",
            handle,
            scopes,
            derived_name(None, "GpuAlerts-", base, 260),
            "PT1M",
            "GPU health, heat, memory pressure and waste",
            gpu_alert_rules(alerts.thresholds, action_group.id, alerts.enabled),
        )
        return action_group.id, rules

    def add_dashboard(self, resource: str, board: dict[str, Any]) -> None:
        """A dashboard in the platform's Grafana folder, its hidden constants set to the stack's thresholds
        (AksGpuPlatform adds every add-on's: components/addons.py)."""
        self._dashboards.add(resource, with_constants(board, self._dashboard_constants))


def _grafana_instance(
    resource_name: str,
    settings: GrafanaConfig,
    handle: ClusterHandle,
    base: str,
    metrics_workspace_id: pulumi.Output[str],
    child: pulumi.ResourceOptions,
) -> dashboard.Grafana:
    """Managed Grafana with its own identity, reading the metrics workspace."""
    return dashboard.Grafana(
        resource_name,
        resource_group_name=handle.resource_group_name,
        location=handle.location,
        workspace_name=derived_name(settings.name, "grafana-", base, 23),
        sku={"name": "Standard"},
        identity={"type": dashboard.ManagedServiceIdentityType.SYSTEM_ASSIGNED},
        properties={
            "api_key": dashboard.ApiKey.DISABLED,
            "deterministic_outbound_ip": dashboard.DeterministicOutboundIP.DISABLED,
            "public_network_access": (
                dashboard.PublicNetworkAccess.ENABLED
                if settings.public_network_access
                else dashboard.PublicNetworkAccess.DISABLED
            ),
            "zone_redundancy": (
                dashboard.ZoneRedundancy.ENABLED if settings.zone_redundancy else dashboard.ZoneRedundancy.DISABLED
            ),
            "grafana_integrations": {
                "azure_monitor_workspace_integrations": [{"azure_monitor_workspace_resource_id": metrics_workspace_id}]
            },
        },
        tags=dict(handle.tags),
        opts=child,
    )


def _grafana_roles(
    name: str,
    settings: GrafanaConfig,
    principal: pulumi.Output[str],
    grafana_id: pulumi.Output[str],
    metrics_workspace_id: pulumi.Output[str],
    log_workspace_id: pulumi.Input[str],
    admins: Sequence[str],
    child: pulumi.ResourceOptions,
) -> None:
    """What Grafana's identity reads (the metrics, and with `containerLogs` the logs) and who administers it."""
    roles.assign_role(
        f"{name}-grafana-workspace-reader",
        role_guid=roles.MONITORING_DATA_READER,
        principal_id=principal,
        scope=metrics_workspace_id,
        opts=child,
    )
    if settings.container_logs:
        # Grafana queries logs as itself: every Grafana user, team members included, then reads every namespace.
        roles.assign_role(
            f"{name}-grafana-logs-reader",
            role_guid=roles.MONITORING_READER,
            principal_id=principal,
            scope=log_workspace_id,
            opts=child,
        )
    for i, group in enumerate(admins):
        roles.assign_role(
            f"{name}-grafana-admin-{i}",
            role_guid=roles.GRAFANA_ADMIN,
            principal_id=group,
            principal_type=authorization.PrincipalType.GROUP,
            scope=grafana_id,
            opts=child,
        )


class _Exporter(NamedTuple):
    namespace: str
    """Namespace of the exporter pods (and of their PodMonitor)."""
    pod_labels: dict[str, str]
    """Labels the PodMonitor selects the exporter pods by."""
    release: k8s.helm.v3.Release | None
    """Our own exporter release, if we install one."""
    dependencies: list[pulumi.Resource]
    """What must exist before the PodMonitor: whatever creates the namespace and the pods it selects."""


def _exporter(
    name: str, args: GpuMonitoringArgs, gpu_pools: Sequence[GpuPoolConfig], k8s_opts: pulumi.ResourceOptions
) -> _Exporter:
    """The DCGM exporter managed Prometheus scrapes: the GPU Operator's, AKS's (through an anchor pod) or ours."""
    operator_release = args.get("operator_release")
    after_operator: list[pulumi.Resource] = [operator_release] if operator_release is not None else []
    if args["dcgm_from_operator"]:
        # A PodMonitor sent before the release has created its namespace fails the first `pulumi up`.
        return _Exporter(GPU_OPERATOR_NAMESPACE, dict(GPU_OPERATOR_EXPORTER_LABELS), None, after_operator)
    if args.get("aks_managed_exporter", False):
        # AKS's exporter on each node, reached through an anchor pod (components/gpu/aks_managed.py).
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": EXPORTER_NAMESPACE, "labels": pod_security_labels("privileged")},
            opts=k8s_opts,
        )
        platform_ingress(name, namespace.metadata["name"], k8s_opts)
        anchor = managed_exporter_anchor(
            name,
            namespace.metadata.apply(lambda m: m.name or EXPORTER_NAMESPACE),
            METRICS_PORT_NAME,
            gpu_pools,
            k8s_opts,
        )
        return _Exporter(EXPORTER_NAMESPACE, dict(ANCHOR_LABELS), None, anchor)
    release = dcgm_exporter_release(
        name,
        args["settings"].dcgm_exporter,
        args["dcgm_exporter_repository"],
        gpu_pools,
        k8s_opts,
        runtime_class=args.get("exporter_runtime_class"),
        depends_on=after_operator,
    )
    pod_labels = {"app.kubernetes.io/name": EXPORTER_RELEASE, "app.kubernetes.io/instance": EXPORTER_RELEASE}
    return _Exporter(EXPORTER_NAMESPACE, pod_labels, release, [release])


def _pod_monitor(
    name: str,
    exporter: _Exporter,
    scrape_interval_seconds: int,
    scrape_dependencies: Sequence[pulumi.Resource],
    k8s_opts: pulumi.ResourceOptions,
) -> k8s.apiextensions.CustomResource:
    """The PodMonitor through which managed Prometheus scrapes the exporter, once its CRD and its pods exist."""
    return k8s.apiextensions.CustomResource(
        f"{name}-dcgm-pod-monitor",
        api_version="azmonitoring.coreos.com/v1",
        kind="PodMonitor",
        metadata={"name": "dcgm-exporter", "namespace": exporter.namespace},
        spec={
            **SCRAPE_LABEL_LIMITS,
            "selector": {"matchLabels": exporter.pod_labels},
            "namespaceSelector": {"matchNames": [exporter.namespace]},
            "podMetricsEndpoints": [
                {
                    "port": METRICS_PORT_NAME,
                    "path": "/metrics",
                    "interval": f"{scrape_interval_seconds}s",
                    # The label contract: the exporter pod keeps namespace/pod, the GPU's pod is exported_*.
                    "honorLabels": labels.HONOR_LABELS,
                    # One stable job name for the alerts, whichever exporter is scraped.
                    "relabelings": [{"action": "replace", "targetLabel": "job", "replacement": SCRAPE_JOB}],
                    "metricRelabelings": NODE_LABEL_RELABELINGS,
                }
            ],
        },
        opts=pulumi.ResourceOptions.merge(
            k8s_opts, pulumi.ResourceOptions(depends_on=[*scrape_dependencies, *exporter.dependencies])
        ),
    )
