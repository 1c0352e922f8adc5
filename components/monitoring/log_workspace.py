"""Log Analytics for Container Insights, and the cluster's monitoring add-on settings.

`LogWorkspace` comes before the cluster: the Container Insights add-on names it.
"""

from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native.containerservice as containerservice
import pulumi_azure_native.operationalinsights as operationalinsights

from aks_gpu_platform.config.gpu.scheduling import GPU_POOL_LABEL_KEY, GPU_POOL_NAME_LABEL_KEY
from aks_gpu_platform.config.monitoring.section import LogsConfig, derived_name


class LogWorkspaceArgs(TypedDict):
    resource_group_name: pulumi.Input[str]
    """Resource group of the workspace."""
    location: pulumi.Input[str]
    """Azure region."""
    base_name: str
    """Name the workspace's default name derives from (the cluster name)."""
    settings: LogsConfig
    """The `monitoring.logs` config section."""
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
        cfg = args["settings"]
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
