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
from typing import Any, NamedTuple

import pulumi

from aks_gpu_platform.config.catalog.images import pulled_through
from aks_gpu_platform.config.gpu.scheduling import gpu_tolerations
from aks_gpu_platform.config.inference.streamed_weights import account_endpoint_range, streams_weights
from aks_gpu_platform.config.platform import PlatformConfig

from .addons import ADDONS, own_namespaces, platform_dashboards, undrained_namespaces
from .cluster.aks_cluster import AksCluster
from .cluster.cpu_node_pool import CpuNodePool
from .cluster.stage import Site, build_cluster, build_cpu_pool, build_pod_security, build_site, pool_placement
from .gpu.aks_managed import ManagedGpuNodePool
from .gpu.node_images import check_arm64_images
from .gpu.node_pool import GpuNodePool
from .gpu.stage import build_gpu_operations, build_gpu_pools, build_gpu_software
from .gpu.validation import GpuValidation
from .inference.serving import ModelServing
from .inference.stage import build_inference
from .monitoring.gpu_monitoring import GpuMonitoring
from .monitoring.grafana import team_dashboard_title
from .monitoring.log_workspace import LogWorkspace
from .monitoring.registry import Registry, login_server_of
from .monitoring.stage import build_logs, build_monitoring, build_registry
from .network.vnet import Network
from .shared.context import ClusterHandle
from .shared.placement import Placement
from .storage.lustre import LustreStorage
from .storage.netapp import NetAppFiles
from .storage.stage import build_storage
from .training.platform_info import team_platform_info
from .training.queues import TrainingQueues
from .training.stage import build_training
from .training.team_storage import TeamStorage
from .upgrade.policy import UpgradePolicy
from .upgrade.stage import build_upgrade

# The namespaces of the add-ons every stack counts, whatever its config (components/addons.py; the platform itself
# uses `undrained_namespaces` and `own_namespaces`, which add those a stack's config brings).
PLATFORM_NAMESPACES = tuple(dict.fromkeys(a.namespace for a in ADDONS if a.active is None and a.undrained))
"""Namespaces the platform's own components run in: GPU remediation never drains their pods."""
OWN_NAMESPACES = tuple(dict.fromkeys(a.namespace for a in ADDONS if a.active is None))
"""Every namespace the platform installs its own pods in: the pod security policy leaves them out."""


class _Cluster(NamedTuple):
    """What the stages before any in-cluster object build: where the cluster lives, the cluster and its pools."""

    site: Site
    logs: LogWorkspace
    aks: AksCluster
    handle: ClusterHandle
    """The cluster handle whose in-cluster objects wait for the pulls through the registry."""
    cpu_pool: CpuNodePool
    gpu_pools: list[GpuNodePool | ManagedGpuNodePool]
    registry: Registry


class _InCluster(NamedTuple):
    """What the stages after the cluster build: GPU software, upgrades, monitoring, storage, training, serving."""

    upgrades: UpgradePolicy
    monitoring: GpuMonitoring
    validation: GpuValidation | None
    lustre: LustreStorage | None
    netapp_files: NetAppFiles | None
    training: TrainingQueues | None
    team_storage: TeamStorage | None
    model_serving: ModelServing | None


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
        place = Placement(self, name)
        cluster = _build_cluster(config, place, api_server_sources)
        # Every image of an in-cluster object is rewritten to the registry's pull-through cache.
        with pulled_through(login_server_of(config.monitoring.registry, config.cluster.name)):
            in_cluster = _build_in_cluster(config, place, cluster, teams_submit_here)
        self._keep_outputs(config, cluster, in_cluster)
        self.register_outputs(self.stack_outputs())

    def _keep_outputs(self, cfg: PlatformConfig, cluster: _Cluster, in_cluster: _InCluster) -> None:
        """The typed outputs consumer programs read (documented on the class)."""
        aks, registry, monitoring = cluster.aks, cluster.registry, in_cluster.monitoring
        self.resource_group_name = cluster.site.resource_group_name
        self.network, self.cluster, self.handle, self.registry = cluster.site.network, aks, cluster.handle, registry
        self.lustre, self.netapp_files = in_cluster.lustre, in_cluster.netapp_files
        self.training, self.team_storage = in_cluster.training, in_cluster.team_storage
        self.validation, self.model_serving = in_cluster.validation, in_cluster.model_serving
        self.cluster_name = aks.cluster_name
        self.cluster_id = aks.cluster_id
        self.oidc_issuer_url = aks.oidc_issuer_url
        self.kubelet_identity_object_id = aks.kubelet_identity_object_id
        self.kubeconfig = aks.kubeconfig
        self.cpu_pool_name = cluster.cpu_pool.pool_name
        self.gpu_pool_names = pulumi.Output.all(*(p.pool_name for p in cluster.gpu_pools)).apply(list)
        self.gpu_tolerations = gpu_tolerations(cfg.gpu_pools)
        self.maintenance_configurations = in_cluster.upgrades.maintenance_configuration_names
        self.disruption_budgets = in_cluster.upgrades.disruption_budget_names
        self.registry_login_server = registry.login_server
        self.monitor_workspace_id = monitoring.monitor_workspace_id
        self.prometheus_query_endpoint = monitoring.prometheus_query_endpoint
        self.grafana_endpoint = monitoring.grafana_endpoint

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


def _build_cluster(cfg: PlatformConfig, place: Placement, api_server_sources: Sequence[pulumi.Input[str]]) -> _Cluster:
    """Resource group, network and Log Analytics; the cluster, its pools, and the registry every image comes through.
    Each stage takes what it builds on, then the settings it reads."""
    site = build_site(
        place, cfg.environment, cfg.location, cfg.resource_group, cfg.network, cfg.tags, cfg.protect_stateful
    )
    logs, cluster_monitoring = build_logs(place, site, cfg.monitoring.logs, cfg.cluster.name)
    aks, handle = build_cluster(
        place,
        site,
        cluster_monitoring,
        cfg.cluster,
        cfg.system_pool,
        cfg.upgrade,
        cfg.security,
        keda_enabled=cfg.autoscaling.keda_enabled,
        api_server_sources=api_server_sources,
    )
    # The pod security policy leaves every add-on's namespace (components/addons.py) to its own Pod Security level.
    build_pod_security(
        place, handle, cfg.security, cfg.environment, own_namespaces(cfg), cfg.training, cfg.gpu_pools, cfg.inference
    )
    joins = pool_placement(handle, site.network, cfg.cluster, cfg.upgrade, cfg.security)
    cpu_pool = build_cpu_pool(place, joins, cfg.cpu_pool, cfg.upgrade)
    gpu_pools = build_gpu_pools(place, joins, cfg.gpu_pools, cfg.gpu_stack, cfg.gpu_health, cfg.upgrade)
    registry = build_registry(place, handle, site, aks, cfg.monitoring.registry, cfg.cluster.name)
    # Every in-cluster object waits for the pulls through the registry.
    handle = dataclasses.replace(handle, image_pulls=registry.pulls_ready)
    return _Cluster(site, logs, aks, handle, cpu_pool, gpu_pools, registry)


def _build_in_cluster(cfg: PlatformConfig, place: Placement, cluster: _Cluster, teams_submit_here: bool) -> _InCluster:
    """The stages on the running cluster, in dependency order."""
    handle, gpu_pools, registry = cluster.handle, cluster.gpu_pools, cluster.registry
    gpu_stack = build_gpu_software(place, handle, gpu_pools, cfg.gpu_stack, cfg.gpu_pools)
    upgrades = build_upgrade(place, handle, cfg.upgrade)
    monitoring = build_monitoring(
        place,
        handle,
        registry,
        cluster.logs,
        gpu_stack.driver_runtime,
        cfg.monitoring,
        cfg.cluster,
        cfg.gpu_stack,
        cfg.gpu_pools,
        cfg.training,
    )
    for board in platform_dashboards(cfg):
        monitoring.add_dashboard(place.role(board.role), board.json)
    # GPU remediation never drains the add-ons that replace and check nodes (components/addons.py).
    validation = build_gpu_operations(
        place,
        handle,
        gpu_pools,
        gpu_stack,
        registry,
        monitoring,
        undrained_namespaces(cfg),
        cfg.gpu_pools,
        cfg.gpu_stack,
        cfg.gpu_health,
        cfg.monitoring,
        cfg.cluster.name,
    )
    lustre, netapp_files = build_storage(
        place, handle, cluster.site.network, cfg.storage, cfg.gpu_pools, cfg.network.nodes_cidr
    )
    training, team_storage, model_serving = _build_workloads(cfg, place, handle, lustre, monitoring, teams_submit_here)
    return _InCluster(upgrades, monitoring, validation, lustre, netapp_files, training, team_storage, model_serving)


def _build_workloads(
    cfg: PlatformConfig,
    place: Placement,
    handle: ClusterHandle,
    lustre: LustreStorage | None,
    monitoring: GpuMonitoring,
    teams_submit_here: bool,
) -> tuple[TrainingQueues | None, TeamStorage | None, ModelServing | None]:
    """Training queues and teams, served models, and each team's `platform-info`."""
    training, team_storage = build_training(
        place,
        handle,
        lustre,
        monitoring,
        cfg.training,
        cfg.gpu_pools,
        cfg.cpu_pool,
        cfg.security,
        cfg.storage,
        cfg.network,
        cfg.monitoring,
        teams_submit_here=teams_submit_here,
    )
    model_serving = build_inference(
        place,
        handle,
        monitoring,
        training.namespaces if training is not None else None,
        cfg.autoscaling,
        cfg.inference,
        cfg.gpu_pools,
        cfg.training,
        cfg.cpu_pool,
        cfg.monitoring,
        cfg.storage.blob_classes,
        cfg.hugging_face_token,
        sample_pools=cfg.sample_inference_pools(),
        team_containers=team_storage.containers() if team_storage is not None else None,
        weights_endpoint_range=(
            account_endpoint_range(cfg.storage, cfg.network)
            if any(streams_weights(m) for m in cfg.inference.models)
            else None
        ),
    )
    if training is not None and team_storage is not None and cfg.training.teams:
        _team_platform_info(cfg, place, handle, monitoring, training, team_storage, model_serving)
    return training, team_storage, model_serving


def _team_platform_info(
    cfg: PlatformConfig,
    place: Placement,
    handle: ClusterHandle,
    monitoring: GpuMonitoring,
    training: TrainingQueues,
    team_storage: TeamStorage,
    model_serving: ModelServing | None,
) -> None:
    """Each team namespace's `platform-info` ConfigMap: its queue, pools, models, dashboard and data."""
    team_platform_info(
        place.role("platform-info"),
        {
            "settings": cfg.training,
            "namespaces": training.namespaces,
            "teams": training.teams,
            "team_data": team_storage.data,
            "endpoints": model_serving.endpoints if model_serving is not None else {},
            "cluster": handle,
            "grafana_endpoint": monitoring.grafana_endpoint,
            "dashboard_titles": {t.name: team_dashboard_title(t.name) for t in cfg.training.teams},
        },
        pulumi.ResourceOptions(parent=place.owner),
    )
