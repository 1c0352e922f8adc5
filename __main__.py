"""aks-gpu-platform: load and validate config, compose the components, export outputs."""

import pulumi

from components.aks_cluster import AksCluster
from components.blob_storage_classes import BlobStorageClasses
from components.cpu_node_pool import CpuNodePool
from components.gpu_node_pool import GpuNodePool
from components.gpu_smoke_test import GpuSmokeTest
from components.gpu_stack import GpuStack
from components.lustre_storage import LustreStorage
from components.network import Network
from components.resource_group import platform_resource_group
from config import load_platform_config


def main() -> None:
    cfg = load_platform_config()  # raises a clean ConfigError before any resource exists
    tags = {"environment": cfg.environment, "managedBy": "pulumi", "project": "aks-gpu-platform", **cfg.tags}

    rg = platform_resource_group("platform-rg", cfg.resource_group, cfg.location, tags, protect=cfg.protect_stateful)
    net = Network(
        "network",
        {"resource_group_name": rg, "location": cfg.location, "settings": cfg.network.as_settings(), "tags": tags},
    )
    aks = AksCluster(
        "aks",
        {
            "resource_group_name": rg,
            "location": cfg.location,
            "nodes_subnet_id": net.nodes_subnet_id,
            "cluster": cfg.cluster.as_settings(),
            "system_pool": cfg.system_pool.as_settings(),
            "upgrade": cfg.upgrade.as_settings(),
            "tags": tags,
            "protect": cfg.protect_stateful,
        },
    )
    CpuNodePool(
        "cpu",
        {
            "resource_group_name": rg,
            "cluster_name": aks.cluster_name,
            "nodes_subnet_id": net.nodes_subnet_id,
            "settings": cfg.cpu_pool.as_settings(),
            "kubernetes_version": cfg.cluster.kubernetes_version,
            "tracks_versions": cfg.upgrade.tracks_versions,
            "tags": tags,
        },
    )
    gpu_pools = [
        GpuNodePool(
            f"gpu-{pool.name}",
            {
                "resource_group_name": rg,
                "cluster_name": aks.cluster_name,
                "nodes_subnet_id": net.nodes_subnet_id,
                "settings": pool.as_settings(),
                "stack_mode": cfg.gpu_stack.mode,
                "kubernetes_version": cfg.cluster.kubernetes_version,
                "tracks_versions": cfg.upgrade.tracks_versions,
                "tags": tags,
            },
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
                "depends_on": [*(p.agent_pool for p in gpu_pools), *gpu_stack.releases],
                "provider": aks.provider,
                "cluster": aks.cluster,
            },
        )

    BlobStorageClasses(
        "blob-classes",
        {"settings": cfg.storage.blob_classes.as_settings(), "provider": aks.provider, "cluster": aks.cluster},
    )
    if cfg.storage.lustre is not None and cfg.storage.lustre.enabled:
        lustre = LustreStorage(
            "lustre",
            {
                "resource_group_name": rg,
                "location": cfg.location,
                "lustre_subnet_id": net.lustre_subnet_id,
                "settings": cfg.storage.lustre.as_settings(),
                "provider": aks.provider,
                "cluster": aks.cluster,
                "protect": cfg.protect_stateful,
                "tags": tags,
            },
        )
        pulumi.export("lustreMgsAddress", lustre.mgs_address)
        pulumi.export("lustreNamespace", lustre.namespace)
        pulumi.export("lustrePvcName", lustre.pvc_name)
        pulumi.export("lustreStorageClass", lustre.storage_class_name)

    pulumi.export("resourceGroupName", rg)
    pulumi.export("clusterName", aks.cluster_name)
    pulumi.export("clusterId", aks.cluster_id)
    pulumi.export("oidcIssuerUrl", aks.oidc_issuer_url)
    pulumi.export("kubeletIdentityObjectId", aks.kubelet_identity_object_id)
    pulumi.export("kubeconfig", aks.kubeconfig)
    pulumi.export("gpuPoolNames", pulumi.Output.all(*(p.pool_name for p in gpu_pools)))


main()
