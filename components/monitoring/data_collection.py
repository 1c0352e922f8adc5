"""What Azure Monitor collects from the cluster: managed Prometheus metrics into an Azure Monitor workspace, and
Container Insights logs into the Log Analytics workspace."""

from typing import NamedTuple

import pulumi
import pulumi_azure_native.monitor as monitor

from aks_gpu_platform.config.monitoring.section import derived_name

from ..shared.context import ClusterHandle


class PrometheusPipeline(NamedTuple):
    workspace: monitor.AzureMonitorWorkspace
    """Where the metrics are stored and queried."""
    agent_link: monitor.DataCollectionRuleAssociation
    """The cluster's association with the metrics rule: the managed Prometheus add-on, and its CRDs, follow it."""


def _metrics_workspace(
    name: str, handle: ClusterHandle, base: str, workspace_name: str | None, parent: pulumi.Resource
) -> monitor.AzureMonitorWorkspace:
    return monitor.AzureMonitorWorkspace(
        f"{name}-workspace",
        resource_group_name=handle.resource_group_name,
        location=handle.location,
        azure_monitor_workspace_name=derived_name(workspace_name, "amw-", base, 44),
        tags=dict(handle.tags),
        # The stored GPU and cluster metrics are history no redeploy brings back; prod refuses to delete them.
        opts=pulumi.ResourceOptions(parent=parent, protect=handle.protect),
    )


def _prometheus_rule(
    name: str,
    handle: ClusterHandle,
    base: str,
    endpoint: monitor.DataCollectionEndpoint,
    workspace: monitor.AzureMonitorWorkspace,
    child: pulumi.ResourceOptions,
) -> monitor.DataCollectionRule:
    """The rule that forwards the agent's Prometheus metrics, through `endpoint`, into `workspace`."""
    return monitor.DataCollectionRule(
        f"{name}-prometheus-dcr",
        resource_group_name=handle.resource_group_name,
        location=handle.location,
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
        tags=dict(handle.tags),
        opts=child,
    )


def prometheus_pipeline(
    name: str, handle: ClusterHandle, base: str, workspace_name: str | None, parent: pulumi.Resource
) -> PrometheusPipeline:
    """Workspace <- rule <- endpoint, associated with the cluster's managed Prometheus agent."""
    child = pulumi.ResourceOptions(parent=parent)
    workspace = _metrics_workspace(name, handle, base, workspace_name, parent)
    endpoint = monitor.DataCollectionEndpoint(
        f"{name}-prometheus-dce",
        resource_group_name=handle.resource_group_name,
        location=handle.location,
        data_collection_endpoint_name=derived_name(None, "dce-prom-", base, 44),
        kind=monitor.KnownDataCollectionEndpointResourceKind.LINUX,
        tags=dict(handle.tags),
        opts=child,
    )
    rule = _prometheus_rule(name, handle, base, endpoint, workspace, child)
    agent_link = monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus-dcra",
        resource_uri=handle.cluster_id,
        association_name="ContainerInsightsMetricsExtension",
        data_collection_rule_id=rule.id,
        description="Managed Prometheus metrics of the cluster into the Azure Monitor workspace",
        opts=child,
    )
    # The agent reads its configuration through the endpoint association (required with private links).
    monitor.DataCollectionRuleAssociation(
        f"{name}-prometheus-dce-association",
        resource_uri=handle.cluster_id,
        association_name="configurationAccessEndpoint",
        data_collection_endpoint_id=endpoint.id,
        opts=child,
    )
    return PrometheusPipeline(workspace, agent_link)


def container_insights(
    name: str,
    handle: ClusterHandle,
    base: str,
    log_interval: str,
    log_analytics_workspace_id: pulumi.Input[str],
    parent: pulumi.Resource,
) -> None:
    """Container Insights with managed identity authentication: its own rule, associated with the cluster."""
    child = pulumi.ResourceOptions(parent=parent)
    rule = monitor.DataCollectionRule(
        f"{name}-container-insights-dcr",
        resource_group_name=handle.resource_group_name,
        location=handle.location,
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
                            "interval": log_interval,
                            "namespaceFilteringMode": "Off",
                            "enableContainerLogV2": True,
                        }
                    },
                }
            ]
        },
        destinations={"log_analytics": [{"name": "ciworkspace", "workspace_resource_id": log_analytics_workspace_id}]},
        data_flows=[{"streams": ["Microsoft-ContainerInsights-Group-Default"], "destinations": ["ciworkspace"]}],
        tags=dict(handle.tags),
        opts=child,
    )
    monitor.DataCollectionRuleAssociation(
        f"{name}-container-insights-dcra",
        resource_uri=handle.cluster_id,
        association_name="ContainerInsightsExtension",
        data_collection_rule_id=rule.id,
        description="Container Insights logs of the cluster into the Log Analytics workspace",
        opts=child,
    )
