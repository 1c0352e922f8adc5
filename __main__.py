"""aks-gpu-platform: load and validate config, compose the components, export outputs."""

import pulumi

from components.aks_cluster import AksCluster
from components.aks_managed_gpu import ManagedGpuNodePool
from components.blob_storage_classes import BlobStorageClasses
from components.context import ClusterHandle
from components.cpu_node_pool import CpuNodePool
from components.gpu_autoscaling import GpuAutoscaling, KedaWiringArgs
from components.gpu_health import GpuHealth, remediation_node_labels
from components.gpu_inference_sample import GpuInferenceSample
from components.gpu_monitoring import GpuMonitoring, LogWorkspace, container_insights_addon, managed_prometheus_profile
from components.gpu_node_pool import GpuNodePool
from components.gpu_scheduling import gpu_tolerations
from components.gpu_smoke_test import GpuSmokeTest
from components.gpu_stack import GpuStack
from components.gpu_validation import GpuValidation
from components.lustre_storage import LustreStorage
from components.netapp_files import NetAppFiles, NetAppFilesArgs
from components.network import Network
from components.registry import Registry
from components.resource_group import platform_resource_group
from components.storage_classes import DiskStorageClasses
from components.training_queues import TrainingQueues, TrainingQueuesArgs
from components.upgrade_policy import (
    UpgradePolicy,
    cpu_pool_upgrade_settings,
    gpu_pool_upgrade_settings,
    system_pool_upgrade_settings,
)
from config import load_deployment_config


def main() -> None:
    cfg = load_deployment_config()  # raises a clean ConfigError (bad values, placeholders) before any resource exists
    upgrade = cfg.upgrade.as_settings()
    tags = {"environment": cfg.environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **cfg.tags}

    rg = platform_resource_group("platform-rg", cfg.resource_group, cfg.location, tags, protect=cfg.protect_stateful)
    net = Network(
        "network",
        {"resource_group_name": rg, "location": cfg.location, "settings": cfg.network.as_settings(), "tags": tags},
    )
    mon, base_name = cfg.monitoring, cfg.cluster.name
    logs = LogWorkspace(
        "logs",
        {
            "resource_group_name": rg,
            "location": cfg.location,
            "base_name": base_name,
            "settings": mon.logs.as_settings(),
            "tags": tags,
            "protect": cfg.protect_stateful,
        },
    )
    aks = AksCluster(
        "aks",
        {
            "resource_group_name": rg,
            "location": cfg.location,
            "nodes_subnet_id": net.nodes_subnet_id,
            "cluster": cfg.cluster.as_settings(),
            "system_pool": cfg.system_pool.as_settings(),
            "upgrade": upgrade,
            "system_pool_upgrade_settings": system_pool_upgrade_settings(upgrade),
            "encryption_at_host": cfg.security.encryption_at_host,
            "workload_auto_scaler_profile": {"keda": {"enabled": cfg.autoscaling.keda_enabled}},
            "tags": tags,
            "protect": cfg.protect_stateful,
            "addon_profiles": {**container_insights_addon(logs.workspace_id), **cfg.security.addon_profiles()},  # type: ignore[dict-item]
            "azure_monitor_profile": managed_prometheus_profile(),
            **(
                {"defender_log_analytics_workspace_id": defender_ws}
                if (defender_ws := cfg.security.defender_workspace_id(logs.workspace_id))
                else {}
            ),
        },
    )
    handle = ClusterHandle(
        resource_group_name=rg,
        location=cfg.location,
        tags=tags,
        cluster=aks.cluster,
        cluster_name=aks.cluster_name,
        provider=aks.provider,
        oidc_issuer_url=aks.oidc_issuer_url,
        protect=cfg.protect_stateful,
    )
    cpu_pool = CpuNodePool(
        "cpu",
        {
            "resource_group_name": rg,
            "cluster_name": aks.cluster_name,
            "nodes_subnet_id": net.nodes_subnet_id,
            "settings": cfg.cpu_pool.as_settings(),
            "kubernetes_version": cfg.cluster.kubernetes_version,
            "tracks_versions": cfg.upgrade.tracks_versions,
            "upgrade_settings": cpu_pool_upgrade_settings(upgrade),
            "encryption_at_host": cfg.security.encryption_at_host,
            "tags": tags,
        },
    )
    # Labels NVSentinel's node agents select on, set through the pools so scale-from-zero nodes carry them.
    health_labels = remediation_node_labels(cfg.gpu_health)
    gpu_pools: list[GpuNodePool | ManagedGpuNodePool] = [
        (
            ManagedGpuNodePool(  # gpuStack.mode aksManaged: AKS installs and runs the GPU stack on the node
                f"gpu-{pool.name}",
                {
                    "pool": pool,
                    "cluster": handle,
                    "nodes_subnet_id": net.nodes_subnet_id,
                    "kubernetes_version": cfg.cluster.kubernetes_version,
                    "tracks_versions": cfg.upgrade.tracks_versions,
                    "upgrade_settings": gpu_pool_upgrade_settings(upgrade),
                    "encryption_at_host": cfg.security.encryption_at_host,
                    "extra_node_labels": health_labels,
                },
            )
            if cfg.gpu_stack.mode == "aksManaged"
            else GpuNodePool(
                f"gpu-{pool.name}",
                {
                    "resource_group_name": rg,
                    "cluster_name": aks.cluster_name,
                    "nodes_subnet_id": net.nodes_subnet_id,
                    "settings": pool.as_settings(),
                    "stack_mode": cfg.gpu_stack.mode,
                    "kubernetes_version": cfg.cluster.kubernetes_version,
                    "tracks_versions": cfg.upgrade.tracks_versions,
                    "upgrade_settings": gpu_pool_upgrade_settings(upgrade),
                    "encryption_at_host": cfg.security.encryption_at_host,
                    "tags": tags,
                    "extra_node_labels": health_labels,
                },
            )
        )
        for pool in cfg.gpu_pools
    ]
    pools = [p.as_settings() for p in cfg.gpu_pools]
    gpu_stack = GpuStack(
        "gpu-stack",
        {"settings": cfg.gpu_stack.as_settings(), "pools": pools, "provider": aks.provider, "cluster": aks.cluster},
    )
    if cfg.gpu_stack.smoke_test:
        GpuSmokeTest(
            "gpu-smoke-test",
            {
                "namespace": gpu_stack.namespace,
                "fingerprint": {"gpuPools": pools, "gpuStack": cfg.gpu_stack.as_settings()},
                "gpu_pools": pools,
                "depends_on": [*(p.agent_pool for p in gpu_pools), *gpu_stack.releases],
                "provider": aks.provider,
                "cluster": aks.cluster,
            },
        )
    upgrades = UpgradePolicy(
        "upgrade",
        {
            "resource_group_name": rg,
            "cluster_name": aks.cluster_name,
            "settings": upgrade,
            "provider": aks.provider,
            "cluster": aks.cluster,
        },
    )
    acr = Registry(
        "registry",
        {
            "resource_group_name": rg,
            "location": cfg.location,
            "base_name": base_name,
            "tags": tags,
            "settings": mon.registry.as_settings(),
            "kubelet_identity_object_id": aks.kubelet_identity_object_id,
            "private_endpoints_subnet_id": net.private_endpoints_subnet_id,
            "vnet_id": net.vnet_id,
            "protect": cfg.protect_stateful,
        },
    )
    monitoring = GpuMonitoring(
        "monitoring",
        {
            "resource_group_name": rg,
            "location": cfg.location,
            "base_name": base_name,
            "tags": tags,
            "settings": mon.as_settings(),
            "dcgm_from_operator": cfg.gpu_stack.operator_dcgm,
            "cluster": aks.cluster,
            "cluster_id": aks.cluster_id,
            "cluster_name": aks.cluster_name,
            "provider": aks.provider,
            "log_analytics_workspace_id": logs.workspace_id,
            "dcgm_exporter_repository": acr.dcgm_exporter_repository,
            "gpu_pools": pools,
            "grafana_admin_group_object_ids": cfg.cluster.entra_id.admin_group_object_ids,
            "protect": cfg.protect_stateful,
            "aks_managed_exporter": cfg.gpu_stack.mode == "aksManaged",
        },
    )
    # GPU health alerts (node conditions, DCGM counters) and, when enabled, NVSentinel remediation.
    GpuHealth(
        "gpu-health",
        {
            "settings": cfg.gpu_health,
            "gpu_pools": cfg.gpu_pools,
            "stack_mode": cfg.gpu_stack.mode,
            "operator_dcgm": cfg.gpu_stack.operator_dcgm,
            "cluster": handle,
            "action_group_id": monitoring.action_group_id,
            "monitor_workspace_id": monitoring.monitor_workspace_id,
            "cluster_id": aks.cluster_id,
            "alerts_enabled": mon.alerts.enabled,
            "base_name": base_name,
            "depends_on": gpu_stack.releases,
        },
    )
    if any(pool.validation.any for pool in cfg.gpu_pools):
        validation = GpuValidation(
            "gpu-validation",
            {
                "gpu_pools": cfg.gpu_pools,
                "cluster": handle,
                "depends_on": [*(p.agent_pool for p in gpu_pools), *gpu_stack.releases],
            },
        )
        pulumi.export("gpuValidation", validation.results)
    keda: KedaWiringArgs = {
        "resource_group_name": rg,
        "location": cfg.location,
        "oidc_issuer_url": aks.oidc_issuer_url,
        "monitor_workspace_id": monitoring.monitor_workspace_id,
        "prometheus_query_endpoint": monitoring.prometheus_query_endpoint,
        "provider": aks.provider,
        "cluster": aks.cluster,
    }
    for target in cfg.autoscaling.targets:
        GpuAutoscaling(
            f"scale-{target.namespace}-{target.deployment}", {**keda, "settings": target.as_settings(), "tags": tags}
        )
    if cfg.autoscaling.sample_inference.enabled:
        GpuInferenceSample(
            "inference-sample",
            {**keda, "settings": cfg.autoscaling.sample_inference.as_settings(), "tags": tags, "gpu_pools": pools},
        )

    BlobStorageClasses(
        "blob-classes",
        {"settings": cfg.storage.blob_classes.as_settings(), "provider": aks.provider, "cluster": aks.cluster},
    )
    lustre: LustreStorage | None = None
    if cfg.storage.lustre is not None and cfg.storage.lustre.enabled:
        lustre = LustreStorage(
            "lustre",
            {
                "resource_group_name": rg,
                "location": cfg.location,
                "lustre_subnet_id": net.lustre_subnet_id,
                "private_endpoints_subnet_id": net.private_endpoints_subnet_id,
                "vnet_id": net.vnet_id,
                "settings": cfg.storage.lustre.as_settings(),
                "provider": aks.provider,
                "cluster": aks.cluster,
                "protect": cfg.protect_stateful,
                "tags": tags,
                "gpu_pools": pools,
            },
        )
        pulumi.export("lustreMgsAddress", lustre.mgs_address)
        pulumi.export("lustreNamespace", lustre.namespace)
        pulumi.export("lustrePvcName", lustre.pvc_name)
        pulumi.export("lustreStorageClass", lustre.storage_class_name)

    DiskStorageClasses("disk-classes", {"settings": cfg.storage.disk_classes, "cluster": handle})
    anf = cfg.storage.netapp_files
    if anf.enabled:
        assert net.netapp_subnet_id is not None  # PlatformConfig requires the subnet with netappFiles
        anf_args: NetAppFilesArgs = {
            "settings": anf,
            "cluster": handle,
            "subnet_id": net.netapp_subnet_id,
            "allowed_clients": [str(cfg.network.nodes_cidr)],
        }
        if (
            lustre is not None
            and cfg.storage.lustre is not None
            and cfg.storage.lustre.training.namespace == anf.namespace
        ):
            anf_args["namespace"] = lustre.namespace  # the claims join the training namespace Lustre creates
        netapp_files = NetAppFiles("netapp", anf_args)
        pulumi.export("netappMountAddresses", netapp_files.mount_addresses)
        pulumi.export("netappClaims", netapp_files.claim_names)
    if cfg.training.enabled:
        training_args: TrainingQueuesArgs = {"settings": cfg.training, "gpu_pools": cfg.gpu_pools, "cluster": handle}
        if lustre is not None and cfg.storage.lustre is not None:
            claims = cfg.storage.lustre.training  # each team namespace gets a claim like the training one
            training_args["lustre"] = {
                "storage_class_name": lustre.storage_class_name,
                "claim_name": claims.pvc_name,
                "size_gi": claims.pvc_size_gi,
            }
        training = TrainingQueues("queues", training_args)
        pulumi.export("trainingTeams", training.teams)

    pulumi.export("resourceGroupName", rg)
    pulumi.export("clusterName", aks.cluster_name)
    pulumi.export("clusterId", aks.cluster_id)
    pulumi.export("oidcIssuerUrl", aks.oidc_issuer_url)
    pulumi.export("kubeletIdentityObjectId", aks.kubelet_identity_object_id)
    pulumi.export("kubeconfig", aks.kubeconfig)
    pulumi.export("cpuPoolName", cpu_pool.pool_name)
    pulumi.export("gpuPoolNames", pulumi.Output.all(*(p.pool_name for p in gpu_pools)))
    # What a GPU workload must tolerate to land on any GPU pool (consumer stacks read it).
    pulumi.export("gpuTolerations", gpu_tolerations(cfg.gpu_pools))
    pulumi.export("maintenanceConfigurations", upgrades.maintenance_configuration_names)
    pulumi.export("disruptionBudgets", upgrades.disruption_budget_names)
    pulumi.export("registryLoginServer", acr.login_server)
    pulumi.export("monitorWorkspaceId", monitoring.monitor_workspace_id)
    pulumi.export("prometheusQueryEndpoint", monitoring.prometheus_query_endpoint)
    pulumi.export("grafanaEndpoint", monitoring.grafana_endpoint)


main()
