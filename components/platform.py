"""AksGpuPlatform: the whole GPU platform from one validated PlatformConfig.

Stages, in dependency order, each built by its concern (`components/<concern>/stage.py`): resource group,
network and Log Analytics (the Container Insights add-on names it); the cluster; the CPU and GPU pools; the GPU
software and its smoke test; upgrade policy; registry and monitoring; AMD, GPU health and validation; KEDA
scaling; storage classes, Lustre and NetApp Files; training queues and teams.

Every child is named `<platform name>-<role>` (components/shared/placement.py), so two platforms in one stack
never collide, and keeps the URN it had when it sat at the top of the stack.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import pulumi

from aks_gpu_platform.config.catalog.images import pulled_through
from aks_gpu_platform.config.gpu.scheduling import gpu_tolerations
from aks_gpu_platform.config.platform import PlatformConfig

from .cluster.aks_cluster import AksCluster
from .cluster.stage import build_cluster, build_cpu_pool, build_site, pool_placement
from .gpu.amd_stack import AMD_GPU_OPERATOR_NAMESPACE
from .gpu.dra_driver import DRA_DRIVER_NAMESPACE
from .gpu.health import CERT_MANAGER_NAMESPACE
from .gpu.health import NAMESPACE as HEALTH_NAMESPACE
from .gpu.node_images import check_arm64_images
from .gpu.nvidia_stack import GPU_OPERATOR_NAMESPACE, NETWORK_OPERATOR_NAMESPACE
from .gpu.nvidia_stack import NAMESPACE as DEVICE_PLUGIN_NAMESPACE
from .gpu.stage import build_gpu_operations, build_gpu_pools, build_gpu_software
from .gpu.validation import NAMESPACE as VALIDATION_NAMESPACE
from .gpu.validation import GpuValidation
from .inference.stage import build_inference, serving_namespaces
from .monitoring.dcgm_exporter import EXPORTER_NAMESPACE
from .monitoring.grafana import team_dashboard_title
from .monitoring.registry import Registry, login_server_of
from .monitoring.stage import build_logs, build_monitoring, build_registry
from .network.vnet import Network
from .shared.context import ClusterHandle
from .shared.placement import Placement
from .storage.lustre import CSI_DRIVER_NAMESPACE, LustreStorage
from .storage.netapp import NetAppFiles
from .storage.stage import build_storage
from .training.platform_info import team_platform_info
from .training.queues import JOBSET_NAMESPACE, KUEUE_NAMESPACE, TrainingQueues
from .training.stage import build_training
from .training.team_storage import TeamStorage
from .upgrade.stage import build_upgrade

# Namespaces the platform's own components run in: GPU remediation never drains their pods.
PLATFORM_NAMESPACES = (
    DEVICE_PLUGIN_NAMESPACE,
    GPU_OPERATOR_NAMESPACE,
    NETWORK_OPERATOR_NAMESPACE,
    EXPORTER_NAMESPACE,
    VALIDATION_NAMESPACE,
    KUEUE_NAMESPACE,
    JOBSET_NAMESPACE,
    CSI_DRIVER_NAMESPACE,
)
# Every namespace the platform installs its own pods in: the pod security policy leaves them out.
OWN_NAMESPACES = (
    *PLATFORM_NAMESPACES,
    HEALTH_NAMESPACE,
    CERT_MANAGER_NAMESPACE,
    AMD_GPU_OPERATOR_NAMESPACE,
    DRA_DRIVER_NAMESPACE,
)


class AksGpuPlatform(pulumi.ComponentResource):
    """AKS with CPU and GPU pools, the GPU software stack, monitoring, autoscaling, storage and upgrades.

    Outputs (typed attributes; each documented where it is declared):
    resource_group_name, cluster, network, handle, cluster_name, cluster_id, oidc_issuer_url,
    kubelet_identity_object_id, kubeconfig (secret), cpu_pool_name, gpu_pool_names, gpu_tolerations,
    maintenance_configurations, disruption_budgets, registry, registry_login_server, monitor_workspace_id,
    prometheus_query_endpoint, grafana_endpoint, lustre, netapp_files, training, team_storage,
    validation.
    """

    resource_group_name: pulumi.Output[str]
    """Resource group every Azure resource of the platform lives in."""
    cluster: AksCluster
    """The AKS cluster (ManagedCluster, identities, Kubernetes provider)."""
    network: Network
    """The VNet and its subnets (`vnet_id`, `nodes_subnet_id`, `lustre_subnet_id`, ...), created or handed in."""
    handle: ClusterHandle
    """What components built on this cluster need from it: pass it to your own components."""
    cluster_name: pulumi.Output[str]
    """Azure name of the cluster."""
    cluster_id: pulumi.Output[str]
    """Azure resource ID of the cluster."""
    oidc_issuer_url: pulumi.Output[str]
    """The cluster's OIDC issuer (workload identity federation)."""
    kubelet_identity_object_id: pulumi.Output[str]
    """Principal the nodes pull images as."""
    kubeconfig: pulumi.Output[str]
    """Secret, non-interactive kubeconfig (kubelogin)."""
    cpu_pool_name: pulumi.Output[str]
    """Azure name of the CPU pool."""
    gpu_pool_names: pulumi.Output[list[str]]
    """Azure names of the GPU pools (configured name + hash of the fields fixed at creation)."""
    gpu_tolerations: list[dict[str, str]]
    """Tolerations a GPU workload needs to land on any GPU pool (Spot's and extra taints included)."""
    maintenance_configurations: list[str]
    """Maintenance configurations created (one per active upgrade channel)."""
    disruption_budgets: list[str]
    """namespace/name of every PodDisruptionBudget created."""
    registry: Registry
    """The platform's container registry (`registry_id`, `login_server`), for your own pulls and pushes."""
    registry_login_server: pulumi.Output[str]
    """Login server of the platform's container registry."""
    monitor_workspace_id: pulumi.Output[str]
    """Azure Monitor workspace holding the GPU metrics."""
    prometheus_query_endpoint: pulumi.Output[str]
    """PromQL endpoint of that workspace."""
    grafana_endpoint: pulumi.Output[str]
    """URL of Managed Grafana."""
    lustre: LustreStorage | None
    """Azure Managed Lustre and its claim, when `storage.lustre.enabled`."""
    netapp_files: NetAppFiles | None
    """Azure NetApp Files volumes and claims, when `storage.netappFiles.enabled`."""
    training: TrainingQueues | None
    """Kueue team queues, when `training` is enabled."""
    team_storage: TeamStorage | None
    """Each team's own storage (Lustre directory, Blob data, identity policy), when `training` is enabled."""
    validation: GpuValidation | None
    """Post-provision GPU checks, when a pool opts in (`gpuPools[].validation`)."""

    def __init__(
        self,
        name: str,
        config: PlatformConfig,
        opts: pulumi.ResourceOptions | None = None,
        *,
        api_server_sources: Sequence[pulumi.Input[str]] = (),
        teams_submit_here: bool = True,
    ) -> None:
        """Build the whole platform, one stage per concern in dependency order.

        :param name: Prefix of every child's name (`<name>-<role>`): two platforms in one stack never collide.
        :param config: The validated settings, from `load_deployment_config()` (the stack's
            `aks-gpu-platform:*` keys) or `load_platform_config(dict)`.
        :param opts: Options of the component (e.g. `parent`, `providers`); its children inherit them.
        :param api_server_sources: Ranges admitted to the API server besides the configured ones, known only at
            deploy time (a fleet manager's egress /32).
        :param teams_submit_here: False on a fleet member: teams submit on the MultiKueue manager and only read here.
        """
        # Before anything is registered: an Arm64 pool must not get an x86-only platform image.
        check_arm64_images(config)
        super().__init__("aks-gpu-platform:index:AksGpuPlatform", name, None, opts)
        cfg, place = config, Placement(self, name)

        serving_controllers, serving_own = serving_namespaces(cfg)
        undrained = (*PLATFORM_NAMESPACES, *serving_controllers)
        site = build_site(cfg, place)
        logs, cluster_monitoring = build_logs(cfg, place, site)
        aks, handle = build_cluster(
            cfg, place, site, cluster_monitoring, api_server_sources, (*OWN_NAMESPACES, *serving_own)
        )
        joins = pool_placement(cfg, handle, site.network)
        cpu_pool = build_cpu_pool(cfg, place, joins)
        gpu_pools = build_gpu_pools(cfg, place, joins)
        registry = build_registry(cfg, place, handle, site, aks)
        # Every in-cluster object waits for the pulls through the registry; every image is rewritten to it.
        handle = dataclasses.replace(handle, image_pulls=registry.pulls_ready)
        with pulled_through(login_server_of(cfg.monitoring.registry, cfg.cluster.name)):
            gpu_stack = build_gpu_software(cfg, place, handle, gpu_pools)
            upgrades = build_upgrade(cfg, place, handle)
            monitoring = build_monitoring(cfg, place, handle, registry, logs, gpu_stack.driver_runtime)
            validation = build_gpu_operations(
                cfg, place, handle, aks, gpu_pools, gpu_stack, registry, monitoring, undrained
            )
            lustre, netapp_files = build_storage(cfg, place, handle, site.network)
            training, team_storage = build_training(
                cfg, place, handle, lustre, monitoring, teams_submit_here=teams_submit_here
            )
            self.model_serving = build_inference(
                cfg,
                place,
                handle,
                monitoring,
                training.namespaces if training is not None else None,
                team_storage.containers() if team_storage is not None else None,
            )
            if training is not None and team_storage is not None and cfg.training.teams:
                team_platform_info(
                    place.role("platform-info"),
                    {
                        "settings": cfg.training,
                        "namespaces": training.namespaces,
                        "teams": training.teams,
                        "team_data": team_storage.data,
                        "endpoints": self.model_serving.endpoints if self.model_serving is not None else {},
                        "cluster": handle,
                        "grafana_endpoint": monitoring.grafana_endpoint,
                        "dashboard_titles": {t.name: team_dashboard_title(t.name) for t in cfg.training.teams},
                    },
                    pulumi.ResourceOptions(parent=self),
                )

        self.resource_group_name = site.resource_group_name
        self.network, self.cluster, self.handle, self.registry = site.network, aks, handle, registry
        self.lustre, self.netapp_files, self.training, self.team_storage = lustre, netapp_files, training, team_storage
        self.validation = validation
        self.cluster_name = aks.cluster_name
        self.cluster_id = aks.cluster_id
        self.oidc_issuer_url = aks.oidc_issuer_url
        self.kubelet_identity_object_id = aks.kubelet_identity_object_id
        self.kubeconfig = aks.kubeconfig
        self.cpu_pool_name = cpu_pool.pool_name
        self.gpu_pool_names = pulumi.Output.all(*(p.pool_name for p in gpu_pools)).apply(list)
        self.gpu_tolerations = gpu_tolerations(cfg.gpu_pools)
        self.maintenance_configurations = upgrades.maintenance_configuration_names
        self.disruption_budgets = upgrades.disruption_budget_names
        self.registry_login_server = registry.login_server
        self.monitor_workspace_id = monitoring.monitor_workspace_id
        self.prometheus_query_endpoint = monitoring.prometheus_query_endpoint
        self.grafana_endpoint = monitoring.grafana_endpoint
        self.register_outputs(self.stack_outputs())

    def stack_outputs(self) -> dict[str, Any]:
        """The platform's outputs under the stack-output names consumer stacks read (kubeconfig stays secret)."""
        outputs: dict[str, Any] = {
            "resourceGroupName": self.resource_group_name,
            "clusterName": self.cluster_name,
            "clusterId": self.cluster_id,
            "oidcIssuerUrl": self.oidc_issuer_url,
            "kubeletIdentityObjectId": self.kubelet_identity_object_id,
            "kubeconfig": self.kubeconfig,
            "cpuPoolName": self.cpu_pool_name,
            "gpuPoolNames": self.gpu_pool_names,
            "gpuTolerations": self.gpu_tolerations,
            "maintenanceConfigurations": self.maintenance_configurations,
            "disruptionBudgets": self.disruption_budgets,
            "vnetId": self.network.vnet_id,
            "nodesSubnetId": self.network.nodes_subnet_id,
            "registryId": self.registry.registry_id,
            "registryLoginServer": self.registry_login_server,
            "monitorWorkspaceId": self.monitor_workspace_id,
            "prometheusQueryEndpoint": self.prometheus_query_endpoint,
            "grafanaEndpoint": self.grafana_endpoint,
        }
        if self.lustre is not None:
            outputs |= {
                "lustreMgsAddress": self.lustre.mgs_address,
                "lustreNamespace": self.lustre.namespace,
                "lustrePvcName": self.lustre.pvc_name,
                "lustreStorageClass": self.lustre.storage_class_name,
            }
        if self.netapp_files is not None:
            outputs |= {
                "netappMountAddresses": self.netapp_files.mount_addresses,
                "netappClaims": self.netapp_files.claim_names,
            }
        if self.training is not None:
            outputs["trainingTeams"] = self.training.teams
        if self.team_storage is not None:
            outputs["teamData"] = self.team_storage.data
        if self.validation is not None:
            outputs["gpuValidation"] = self.validation.results
        if self.model_serving is not None:
            outputs["modelEndpoints"] = self.model_serving.endpoints
        return outputs
