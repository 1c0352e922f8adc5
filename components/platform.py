"""AksGpuPlatform: the whole GPU platform from one validated PlatformConfig.

Stages, in dependency order: resource group and network; Log Analytics (the Container Insights add-on
names it); the cluster; the CPU and GPU pools; the GPU stack and its smoke test; upgrade policy;
registry and monitoring; KEDA scaling; storage classes, Lustre and NetApp Files; training queues.

Every child is named `<platform name>-<role>`, so two platforms in one stack never collide. Stacks
deployed before this component existed had the same children at the top of the stack, named `<role>`:
each child carries an alias to that URN (its own children inherit it), so such a stack updates in
place instead of replacing its cluster.
"""

from collections.abc import Sequence
from typing import Any

import pulumi

from aks_gpu_platform.config.catalog.vm_sizes import cpu_size
from aks_gpu_platform.config.gpu.scheduling import gpu_tolerations
from aks_gpu_platform.config.platform import PlatformConfig

from .cluster.agent_pools import PoolPlacementArgs, pool_upgrade_settings
from .cluster.aks_cluster import AksCluster
from .cluster.azure_policy import PodSecurityPolicy, rdma_team_namespaces
from .cluster.cpu_node_pool import CpuNodePool
from .cluster.registry import Registry
from .cluster.resource_group import platform_resource_group
from .gpu.aks_managed import ManagedGpuNodePool
from .gpu.amd_stack import AMD_GPU_OPERATOR_NAMESPACE, AmdGpuStack
from .gpu.dra_driver import DRA_DRIVER_NAMESPACE
from .gpu.health import CERT_MANAGER_NAMESPACE, GpuHealth, remediation_node_labels
from .gpu.health import NAMESPACE as HEALTH_NAMESPACE
from .gpu.image_prepull import ImagePrepull
from .gpu.node_images import check_arm64_images
from .gpu.node_pool import GpuNodePool
from .gpu.nvidia_stack import GPU_OPERATOR_NAMESPACE, NETWORK_OPERATOR_NAMESPACE, OPERATOR_RUNTIME_CLASS, GpuStack
from .gpu.nvidia_stack import NAMESPACE as DEVICE_PLUGIN_NAMESPACE
from .gpu.smoke_test import GpuSmokeTest
from .gpu.validation import NAMESPACE as VALIDATION_NAMESPACE
from .gpu.validation import GpuValidation
from .inference.autoscaling import GpuAutoscaling, KedaWiringArgs
from .inference.triton_sample import GpuInferenceSample
from .monitoring.dcgm_exporter import EXPORTER_NAMESPACE
from .monitoring.gpu_monitoring import GpuMonitoring
from .monitoring.kueue_metrics import kueue_service_monitor
from .monitoring.log_workspace import LogWorkspace, container_insights_addon, managed_prometheus_profile
from .network.vnet import Network
from .shared.context import ClusterHandle
from .storage.blob_classes import BlobStorageClasses
from .storage.disk_classes import DiskStorageClasses
from .storage.lustre import CSI_DRIVER_NAMESPACE, LustreStorage
from .storage.netapp import NetAppFiles, NetAppFilesArgs
from .training.queues import JOBSET_NAMESPACE, KUEUE_NAMESPACE, TrainingQueues, TrainingQueuesArgs
from .training.team_storage import TeamStorage, TeamStorageArgs, team_lustre_class
from .training.team_tenancy import TeamTenancy
from .upgrade.policy import UpgradePolicy

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
        """Build the whole platform.

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
        cfg = config

        prefix = f"{name}-"

        def former_name(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
            # A descendant `<name>-<role>-x` was `<role>-x`; the engine joins that alias to its parent's.
            if not args.name.startswith(prefix) or args.opts.parent is self:
                return None
            alias = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=args.name.removeprefix(prefix))])
            return pulumi.ResourceTransformationResult(args.props, pulumi.ResourceOptions.merge(args.opts, alias))

        def child(role: str, *extra: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
            # Before this component, `role` sat at the top of the stack under that name: keep its URN,
            # and those of everything under it.
            previous = pulumi.ResourceOptions(
                parent=self, aliases=[pulumi.Alias(name=role, parent=None)], transformations=[former_name]
            )
            return pulumi.ResourceOptions.merge(previous, *extra) if extra else previous

        def role(suffix: str) -> str:
            return f"{name}-{suffix}"

        tags = {"environment": cfg.environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **cfg.tags}
        protect = cfg.protect_stateful
        rg = platform_resource_group(
            role("platform-rg"), cfg.resource_group, cfg.location, tags, protect=protect, opts=child("platform-rg")
        )
        self.resource_group_name = rg
        net = Network(
            role("network"),
            {"resource_group_name": rg, "location": cfg.location, "settings": cfg.network, "tags": tags},
            child("network"),
        )
        base_name = cfg.cluster.name
        logs = LogWorkspace(
            role("logs"),
            {
                "resource_group_name": rg,
                "location": cfg.location,
                "base_name": base_name,
                "settings": cfg.monitoring.logs,
                "tags": tags,
                "protect": protect,
            },
            child("logs"),
        )
        defender_workspace = cfg.security.defender_workspace_id(logs.workspace_id)
        aks = AksCluster(
            role("aks"),
            {
                "resource_group_name": rg,
                "location": cfg.location,
                "nodes_subnet_id": net.nodes_subnet_id,
                "cluster": cfg.cluster,
                "system_pool": cfg.system_pool,
                "upgrade": cfg.upgrade,
                "encryption_at_host": cfg.security.encryption_at_host,
                "workload_auto_scaler_profile": {"keda": {"enabled": cfg.autoscaling.keda_enabled}},
                "tags": tags,
                "protect": protect,
                "addon_profiles": {**container_insights_addon(logs.workspace_id), **cfg.security.addon_profiles()},  # type: ignore[dict-item]
                "azure_monitor_profile": managed_prometheus_profile(),
                **({"defender_log_analytics_workspace_id": defender_workspace} if defender_workspace else {}),
                **({"extra_authorized_ranges": api_server_sources} if api_server_sources else {}),
            },
            child("aks"),
        )
        self.cluster = aks
        handle = ClusterHandle(
            resource_group_name=rg,
            location=cfg.location,
            tags=tags,
            cluster=aks.cluster,
            cluster_name=aks.cluster_name,
            cluster_id=aks.cluster_id,
            provider=aks.provider,
            oidc_issuer_url=aks.oidc_issuer_url,
            protect=protect,
        )
        self.handle = handle
        pod_security = cfg.security.pod_security
        if pod_security.enabled:
            PodSecurityPolicy(
                role("pod-security"),
                {
                    "cluster": handle,
                    "effect": pod_security.effect_for(cfg.environment),
                    "platform_namespaces": OWN_NAMESPACES,
                    "rdma_namespaces": rdma_team_namespaces(cfg.training, cfg.gpu_pools),
                    "extra_excluded_namespaces": pod_security.excluded_namespaces,
                },
                child("pod-security"),
            )

        joins: PoolPlacementArgs = {
            "cluster": handle,
            "nodes_subnet_id": net.nodes_subnet_id,
            "kubernetes_version": cfg.cluster.kubernetes_version,
            "tracks_versions": cfg.upgrade.tracks_versions,
            "encryption_at_host": cfg.security.encryption_at_host,
        }
        cpu_pool = CpuNodePool(
            role("cpu"), {**joins, "settings": cfg.cpu_pool, "upgrade": cfg.upgrade.cpu_pool}, child("cpu")
        )
        # Labels NVSentinel's node agents select on, set through the pools so scale-from-zero nodes carry them.
        health_labels = remediation_node_labels(cfg.gpu_health)
        gpu_pools: list[GpuNodePool | ManagedGpuNodePool] = [
            ManagedGpuNodePool(  # gpuStack.mode aksManaged: AKS installs and runs the GPU stack on the node
                role(f"gpu-{pool.name}"),
                {
                    "pool": pool,
                    "cluster": handle,
                    "nodes_subnet_id": net.nodes_subnet_id,
                    "kubernetes_version": cfg.cluster.kubernetes_version,
                    "tracks_versions": cfg.upgrade.tracks_versions,
                    "upgrade_settings": pool_upgrade_settings(cfg.upgrade.gpu_pools),
                    "encryption_at_host": cfg.security.encryption_at_host,
                    "extra_node_labels": health_labels,
                },
                child(f"gpu-{pool.name}"),
            )
            if cfg.gpu_stack.mode == "aksManaged"
            else GpuNodePool(
                role(f"gpu-{pool.name}"),
                {
                    **joins,
                    "settings": pool,
                    "stack_mode": cfg.gpu_stack.mode,
                    "upgrade": cfg.upgrade.gpu_pools,
                    "extra_node_labels": health_labels,
                },
                child(f"gpu-{pool.name}"),
            )
            for pool in cfg.gpu_pools
        ]
        gpu_stack = GpuStack(
            role("gpu-stack"),
            {"settings": cfg.gpu_stack, "pools": cfg.gpu_pools, "cluster": handle},
            child("gpu-stack"),
        )
        if cfg.gpu_stack.smoke_test:
            GpuSmokeTest(
                role("gpu-smoke-test"),
                {
                    "namespace": gpu_stack.namespace,
                    # The Job's name hashes these: a change to the GPU settings reruns the test.
                    "fingerprint": {
                        "gpuPools": [p.as_settings() for p in cfg.gpu_pools],
                        "gpuStack": cfg.gpu_stack.as_settings(),
                    },
                    "gpu_pools": cfg.gpu_pools,
                    "depends_on": [*(p.agent_pool for p in gpu_pools), *gpu_stack.releases],
                    "cluster": handle,
                },
                child("gpu-smoke-test"),
            )
        if any(pool.cold_start.pre_pull_images for pool in cfg.gpu_pools):
            ImagePrepull(
                role("image-prepull"),
                {
                    "namespace": gpu_stack.namespace,
                    "gpu_pools": cfg.gpu_pools,
                    "cluster": handle,
                    "depends_on": gpu_stack.releases,
                },
                child("image-prepull"),
            )
        upgrades = UpgradePolicy(role("upgrade"), {"settings": cfg.upgrade, "cluster": handle}, child("upgrade"))

        acr = Registry(
            role("registry"),
            {
                "cluster": handle,
                "base_name": base_name,
                "settings": cfg.monitoring.registry,
                "kubelet_identity_object_id": aks.kubelet_identity_object_id,
                "private_endpoints_subnet_id": net.private_endpoints_subnet_id,
                "vnet_id": net.vnet_id,
            },
            child("registry"),
        )
        nvidia_operator = gpu_stack.gpu_release if cfg.gpu_stack.mode == "gpuOperator" else None
        monitoring = GpuMonitoring(
            role("monitoring"),
            {
                "settings": cfg.monitoring,
                "cluster": handle,
                "base_name": base_name,
                "dcgm_from_operator": cfg.gpu_stack.operator_dcgm,
                "log_analytics_workspace_id": logs.workspace_id,
                "dcgm_exporter_repository": acr.dcgm_exporter_repository,
                "gpu_pools": cfg.gpu_pools,
                "grafana_admin_group_object_ids": cfg.cluster.entra_id.admin_group_object_ids,
                "aks_managed_exporter": cfg.gpu_stack.mode == "aksManaged",
                "operator_release": nvidia_operator,
                # The operator's CDI setup leaves runc containerd's default: its RuntimeClass carries the driver.
                "exporter_runtime_class": OPERATOR_RUNTIME_CLASS if nvidia_operator is not None else None,
                "teams": cfg.training.teams if cfg.training.enabled else [],
            },
            child("monitoring"),
        )
        if any(pool.vendor == "amd" for pool in cfg.gpu_pools):
            AmdGpuStack(  # AMD pools: AMD's GPU Operator and its exporter's PodMonitor
                role("amd-gpu"),
                {
                    "pools": cfg.gpu_pools,
                    "cluster": handle,
                    "registry_name": acr.registry.name,
                    "registry_id": acr.registry_id,
                    "registry_login_server": acr.login_server,
                    "scrape_dependencies": monitoring.scrape_dependencies,
                    "scrape_interval_seconds": cfg.monitoring.dcgm_exporter.scrape_interval_seconds,
                },
                child("amd-gpu"),
            )
        # GPU health alerts (node conditions, DCGM counters) and, when enabled, NVSentinel remediation.
        GpuHealth(
            role("gpu-health"),
            {
                "settings": cfg.gpu_health,
                "gpu_pools": cfg.gpu_pools,
                "stack_mode": cfg.gpu_stack.mode,
                "operator_dcgm": cfg.gpu_stack.operator_dcgm,
                "cluster": handle,
                "action_group_id": monitoring.action_group_id,
                "monitor_workspace_id": monitoring.monitor_workspace_id,
                "cluster_id": aks.cluster_id,
                "alerts_enabled": cfg.monitoring.alerts.enabled,
                "base_name": base_name,
                "depends_on": gpu_stack.releases,
                "platform_namespaces": PLATFORM_NAMESPACES,
            },
            child("gpu-health"),
        )
        self.validation = None
        if any(pool.validation.any for pool in cfg.gpu_pools):
            self.validation = GpuValidation(
                role("gpu-validation"),
                {
                    "gpu_pools": cfg.gpu_pools,
                    "cluster": handle,
                    "depends_on": [*(p.agent_pool for p in gpu_pools), *gpu_stack.releases],
                },
                child("gpu-validation"),
            )
        keda: KedaWiringArgs = {
            "cluster": handle,
            "monitor_workspace_id": monitoring.monitor_workspace_id,
            "prometheus_query_endpoint": monitoring.prometheus_query_endpoint,
        }
        for target in cfg.autoscaling.targets:
            scaler = f"scale-{target.namespace}-{target.deployment}"
            GpuAutoscaling(
                role(scaler),
                # The identity keeps the name it had when the scaler sat at the top of the stack.
                {**keda, "settings": target, "identity_name": f"id-{scaler}-keda"},
                child(scaler),
            )
        if cfg.autoscaling.sample_inference.enabled:
            GpuInferenceSample(
                role("inference-sample"),
                {
                    **keda,
                    "settings": cfg.autoscaling.sample_inference,
                    "gpu_pools": cfg.gpu_pools,
                    # Off the pools whose GPUs the team quotas guarantee in full.
                    "pools": cfg.sample_inference_pools(),
                    "identity_name": "id-inference-sample-scaling-keda",
                },
                child("inference-sample"),
            )

        BlobStorageClasses(
            role("blob-classes"), {"settings": cfg.storage.blob_classes, "cluster": handle}, child("blob-classes")
        )
        self.lustre = None
        lustre_cfg = cfg.storage.lustre
        if lustre_cfg is not None and lustre_cfg.enabled:
            self.lustre = LustreStorage(
                role("lustre"),
                {
                    "settings": lustre_cfg,
                    "cluster": handle,
                    "lustre_subnet_id": net.lustre_subnet_id,
                    "private_endpoints_subnet_id": net.private_endpoints_subnet_id,
                    "vnet_id": net.vnet_id,
                    "gpu_pools": cfg.gpu_pools,
                },
                child("lustre"),
            )
        DiskStorageClasses(
            role("disk-classes"), {"settings": cfg.storage.disk_classes, "cluster": handle}, child("disk-classes")
        )
        self.netapp_files = None
        anf = cfg.storage.netapp_files
        if anf.enabled:
            assert net.netapp_subnet_id is not None  # PlatformConfig requires the subnet with netappFiles
            anf_args: NetAppFilesArgs = {
                "settings": anf,
                "cluster": handle,
                "subnet_id": net.netapp_subnet_id,
                "allowed_clients": [str(cfg.network.nodes_cidr)],
            }
            if self.lustre is not None and lustre_cfg is not None and lustre_cfg.training.namespace == anf.namespace:
                anf_args["namespace"] = self.lustre.namespace  # the claims join the training namespace Lustre creates
            self.netapp_files = NetAppFiles(role("netapp"), anf_args, child("netapp"))
        self.training = None
        self.team_storage = None
        if cfg.training.enabled:
            cpu_nodes = cpu_size(cfg.cpu_pool.vm_size)
            assert cpu_nodes is not None  # CpuPoolConfig accepts catalogued sizes only
            training_args: TrainingQueuesArgs = {
                "settings": cfg.training,
                "gpu_pools": cfg.gpu_pools,
                "cluster": handle,
                "cpu_metering": {
                    "flavor": cfg.cpu_pool.name,
                    "cpu": str(cfg.cpu_pool.max_count * cpu_nodes.vcpus),
                    "memory": f"{cfg.cpu_pool.max_count * cpu_nodes.memory_gib}Gi",
                },
            }
            if pod_security.enabled:  # config/cluster/security.py refuses RDMA teams without it
                training_args["memory_locking_namespaces"] = rdma_team_namespaces(cfg.training, cfg.gpu_pools)
            if self.lustre is not None and lustre_cfg is not None:
                claims = lustre_cfg.training  # each team namespace gets a claim on its own directory
                training_args["lustre"] = {
                    "storage_class_name": self.lustre.storage_class_name,
                    # The class exists once the team's directory does (TeamStorage): the claim binds after that.
                    "team_storage_classes": {t.name: team_lustre_class(t.name) for t in cfg.training.teams},
                    "claim_name": claims.pvc_name,
                    "size_gi": claims.pvc_size_gi,
                }
            self.training = TrainingQueues(role("queues"), training_args, child("queues"))
            # Shared across teams: one account per Blob class, the whole filesystem through the training class.
            shared_classes = [c.name for c in (cfg.storage.blob_classes.standard, cfg.storage.blob_classes.premium)]
            storage_args: TeamStorageArgs = {
                "settings": cfg.training,
                "namespaces": self.training.namespaces,
                "cluster": handle,
                "shared_storage_classes": shared_classes,
            }
            if pod_security.enabled:
                storage_args["memory_locking_namespaces"] = rdma_team_namespaces(cfg.training, cfg.gpu_pools)
            if self.lustre is not None and lustre_cfg is not None:
                shared_classes.append(lustre_cfg.training.storage_class_name)
                storage_args["lustre_mgs_address"] = self.lustre.mgs_address
                storage_args["lustre_root_namespace"] = self.lustre.namespace
                storage_args["lustre_root_claim"] = self.lustre.pvc_name
                storage_args["data_account_name"] = self.lustre.storage_account_name
            self.team_storage = TeamStorage(role("team-storage"), storage_args, child("team-storage"))
            TeamTenancy(
                role("teams"),
                {
                    "settings": cfg.training,
                    "namespaces": self.training.namespaces,
                    "cluster": handle,
                    "gpu_pools": cfg.gpu_pools,
                    "grafana_id": monitoring.grafana_id,
                    "submits": teams_submit_here,
                    "storage_quota": self.team_storage.storage_quota,
                    "file_servers": [
                        str(c) for c in (cfg.network.lustre_cidr, cfg.network.netapp_cidr) if c is not None
                    ],
                },
                child("teams"),
            )
            kueue_service_monitor(
                role("queues"),
                self.training.kueue_release,
                cfg.monitoring.dcgm_exporter.scrape_interval_seconds,
                monitoring.scrape_dependencies,
                handle.k8s_options(self),
            )

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
        self.network = net
        self.registry = acr
        self.registry_login_server = acr.login_server
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
        return outputs
