"""Azure Managed Lustre with Blob (HSM) integration, its CSI driver, StorageClass and training claim."""

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native.storage as storage
import pulumi_azure_native.storagecache as storagecache
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.lustre_skus import LUSTRE_STARTUP_TAINT_KEY
from aks_gpu_platform.config.gpu.scheduling import gpu_tolerations
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.storage.section import LustreConfig

from ..network.private_endpoint import private_endpoint
from ..shared import roles
from ..shared.context import ClusterHandle
from ..shared.scan_exceptions import arm_scan_exception
from ..shared.workloads import ClaimMount, training_namespace, verification_pod
from .lustre_tiering import blob_jobs

arm_scan_exception(
    "azure-native:storage:StorageAccount",
    "CKV_AZURE_206",
    "the Lustre HSM account's redundancy is storage.lustre.blob.sku, kept in the region here (prod: ZRS, three "
    "copies across zones); the check wants a paired-region copy, which Standard_GZRS (accepted by the config) "
    "adds at about twice the storage price: a per-stack call on what losing the region's checkpoints costs",
    when=lambda inputs: str(inputs.get("sku", {}).get("name")) in ("Standard_LRS", "Standard_ZRS"),
)

# The only released chart version as of 2026-12-02 (kubernetes-sigs/azurelustre-csi-driver
# charts/README.md "Released chart versions"; packaged from charts/latest/azurelustre-csi-driver).
CSI_DRIVER_CHART = "oci://mcr.microsoft.com/microsoft.azuremanagedlustre/azurelustre-csi-driver"
CSI_DRIVER_VERSION = "0.6.0"
CSI_DRIVER_NAMESPACE = "kube-system"
PROVISIONER = "azurelustre.csi.azure.com"
# Helm's wait for the CSI release: each node plugin's lustre-loader installs the Lustre client first, and its
# startupProbe allows it 10 + 120 x 5 s (charts/latest node-daemonset-*.yaml), well past the 300 s default.
CSI_DRIVER_TIMEOUT_SECONDS = 900
BLOB_PRIVATE_DNS_ZONE = "privatelink.blob.core.windows.net"
LUSTRE_FS_NAME = "lustrefs"  # every Azure Managed Lustre filesystem is named lustrefs
MOUNT_PATH = "/mnt/lustre"
# The node plugin removes this taint from its node once Lustre is ready (--remove-not-ready-taint, default on).
LUSTRE_STARTUP_TOLERATION = {"key": LUSTRE_STARTUP_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


class LustreStorageArgs(TypedDict):
    settings: LustreConfig
    """The `storage.lustre` config section."""
    cluster: ClusterHandle
    """The cluster that mounts the filesystem (resource group, region, tags, protection of stateful data)."""
    lustre_subnet_id: pulumi.Input[str]
    """Dedicated subnet of the filesystem, sized for its capacity."""
    private_endpoints_subnet_id: NotRequired[pulumi.Input[str]]
    """Subnet of the account's blob private endpoint (needed when `blob.publicNetworkAccess` is false)."""
    vnet_id: NotRequired[pulumi.Input[str]]
    """VNet of the Lustre subnet, linked to the blob privatelink DNS zone (needed with the private endpoint)."""
    gpu_pools: NotRequired[Sequence[GpuPoolConfig]]
    """The GPU pools: the CSI node plugin tolerates all their taints (Spot's and extra ones included) so every
    GPU node can mount Lustre. Without them, only the platform's GPU taint is tolerated."""


def _hsm_account(
    name: str, cfg: LustreConfig, args: LustreStorageArgs, parent: pulumi.Resource, protect: bool
) -> storage.StorageAccount:
    return storage.StorageAccount(
        name,
        resource_group_name=args["cluster"].resource_group_name,
        location=args["cluster"].location,
        account_name=cfg.blob.account_name,
        kind=storage.Kind.STORAGE_V2,
        sku={"name": cfg.blob.sku},
        access_tier=storage.AccessTier.HOT,
        enable_https_traffic_only=True,
        minimum_tls_version=storage.MinimumTlsVersion.TLS1_2,
        allow_blob_public_access=False,
        # Azure Managed Lustre's blob integration requires storage account key access to stay enabled.
        allow_shared_key_access=True,
        public_network_access=(
            storage.PublicNetworkAccess.ENABLED
            if cfg.blob.public_network_access
            else storage.PublicNetworkAccess.DISABLED
        ),
        # Private: deny the public endpoint; trusted Azure services keep their exception should it be re-enabled.
        network_rule_set=None
        if cfg.blob.public_network_access
        else {"default_action": storage.DefaultAction.DENY, "bypass": storage.Bypass.AZURE_SERVICES},
        tags=dict(args["cluster"].tags),
        # The account holds the cold copy of the training data and every exported checkpoint.
        opts=pulumi.ResourceOptions(parent=parent, protect=protect),
    )


class LustreStorage(pulumi.ComponentResource):
    """An AMLFS filesystem in one zone, backed by Blob, mounted in the cluster through a RWX claim."""

    filesystem_id: pulumi.Output[str]
    """Azure resource ID of the filesystem."""
    mgs_address: pulumi.Output[str]
    """IP address of the Lustre management service that clients mount."""
    storage_account_name: pulumi.Output[str]
    """HSM storage account (data and logging containers)."""
    namespace: pulumi.Output[str]
    """Namespace of the training claim."""
    storage_class_name: pulumi.Output[str]
    """StorageClass of the filesystem."""
    pvc_name: pulumi.Output[str]
    """ReadWriteMany claim training pods mount."""

    def __init__(self, name: str, args: LustreStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:LustreStorage", name, None, opts)
        cfg, handle = args["settings"], args["cluster"]
        gpu_pools = list(args.get("gpu_pools", []))
        protect = handle.protect
        rg = handle.resource_group_name
        tags = dict(handle.tags)

        private = not cfg.blob.public_network_access
        endpoints_subnet_id, vnet_id = args.get("private_endpoints_subnet_id"), args.get("vnet_id")
        if private and (endpoints_subnet_id is None or vnet_id is None):
            raise ValueError("LustreStorage: a private HSM account needs private_endpoints_subnet_id and vnet_id")
        account = _hsm_account(f"{name}-hsm-account", cfg, args, self, protect)
        # The Lustre servers reach Blob from the Lustre subnet: privately, through this endpoint in the same VNet,
        # whose DNS zone (linked to the VNet) resolves the account name, as Azure Managed Lustre requires.
        network_ready: list[pulumi.Resource] = []
        if private and endpoints_subnet_id is not None and vnet_id is not None:
            network_ready = private_endpoint(
                f"{name}-hsm",
                parent=self,
                resource_group_name=rg,
                location=handle.location,
                target_id=account.id,
                target_name=account.name,
                group_id="blob",
                dns_zone=BLOB_PRIVATE_DNS_ZONE,
                subnet_id=endpoints_subnet_id,
                vnet_id=vnet_id,
                vnet_link_name=f"{cfg.blob.account_name}-vnet",
                tags=tags,
            ).ready
        blob_service = storage.BlobServiceProperties(
            f"{name}-hsm-blob-service",
            resource_group_name=rg,
            account_name=account.name,
            blob_services_name="default",
            is_versioning_enabled=True,
            delete_retention_policy={"enabled": True, "days": cfg.blob.soft_delete_days},
            container_delete_retention_policy={"enabled": True, "days": cfg.blob.soft_delete_days},
            opts=pulumi.ResourceOptions(parent=account),
        )
        containers = {
            role: storage.BlobContainer(
                f"{name}-hsm-{role}",
                resource_group_name=rg,
                account_name=account.name,
                container_name=container,
                public_access=storage.PublicAccess.NONE,
                opts=pulumi.ResourceOptions(parent=account, depends_on=[blob_service]),
            )
            for role, container in (("data", cfg.blob.data_container), ("logging", cfg.blob.logging_container))
        }
        # The Lustre service reads and writes the containers as this principal; both grants must exist and have taken
        # effect first, or the filesystem's creation fails (Azure cannot detect it beforehand): the filesystem waits
        # for the grants, which hold it after their creation (first deploy only).
        propagation = roles.propagation_wait(f"{name}-hsm", cfg.role_assignment_propagation_seconds)
        grants = [
            roles.assign_role(
                f"{name}-hsm-{role}",
                role_guid=guid,
                principal_id=cfg.hpc_cache_provider_object_id,
                scope=account.id,
                wait=propagation,
                opts=pulumi.ResourceOptions(parent=account),
            )
            for role, guid in (
                ("account-contributor", roles.STORAGE_ACCOUNT_CONTRIBUTOR),
                ("blob-data-contributor", roles.STORAGE_BLOB_DATA_CONTRIBUTOR),
            )
        ]

        encryption: storagecache.AmlFilesystemEncryptionSettingsArgsDict | None = None
        identity: storagecache.AmlFilesystemIdentityArgsDict | None = None
        if cfg.encryption is not None:
            encryption = {
                "key_encryption_key": {
                    "key_url": cfg.encryption.key_url,
                    "source_vault": {"id": cfg.encryption.key_vault_id},
                }
            }
            identity = {
                "type": storagecache.AmlFilesystemIdentityType.USER_ASSIGNED,
                "user_assigned_identities": [cfg.encryption.user_assigned_identity_id],
            }
        squash = cfg.root_squash
        filesystem = storagecache.AmlFilesystem(
            f"{name}-filesystem",
            resource_group_name=rg,
            location=handle.location,
            aml_filesystem_name=cfg.name,
            sku={"name": cfg.sku},
            storage_capacity_ti_b=float(cfg.capacity_tib),
            zones=[cfg.zone],
            filesystem_subnet=args["lustre_subnet_id"],
            maintenance_window={
                "day_of_week": storagecache.MaintenanceDayOfWeekType(cfg.maintenance_window.day_of_week),
                "time_of_day_utc": cfg.maintenance_window.time_of_day_utc,
            },
            hsm={
                "settings": {
                    "container": containers["data"].id,
                    "logging_container": containers["logging"].id,
                    "import_prefix": cfg.blob.import_prefix,
                }
            },
            root_squash_settings={
                "mode": storagecache.AmlFilesystemSquashMode(squash.mode),
                "no_squash_nid_lists": squash.no_squash_nid_lists,
                "squash_uid": float(squash.squash_uid),
                "squash_gid": float(squash.squash_gid),
            },
            encryption_settings=encryption,
            identity=identity,
            tags=tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*grants, *network_ready],
                # Billed for its full size and never resizable: a replacement would drop every file on it.
                protect=protect,
            ),
        )
        # Auto-export of checkpoints and one-off imports, never at the same time (components/storage/lustre_tiering.py).
        blob_jobs(name, cfg, filesystem.name, rg, handle.location, tags, self)

        self.filesystem_id = filesystem.id
        self.mgs_address = filesystem.client_info.apply(lambda info: info.mgs_address if info else "")
        self.storage_account_name = account.name

        in_cluster = handle.k8s_options(self)
        driver = k8s.helm.v3.Release(
            f"{name}-csi-driver",
            name="azurelustre",
            chart=CSI_DRIVER_CHART,
            version=CSI_DRIVER_VERSION,
            namespace=CSI_DRIVER_NAMESPACE,
            timeout=CSI_DRIVER_TIMEOUT_SECONDS,
            # `node.tolerations` is the node DaemonSets' whole list (the chart's default is replaced): the GPU
            # pools' taints, so the plugin runs on every GPU node; the CPU pool is untainted; the system pool's
            # CriticalAddonsOnly stays untolerated, as the chart intends. Plus the driver's own startup taint: a
            # node born with it (a node initialization taint) waits for this very plugin to lift it.
            values={"node": {"tolerations": [*gpu_tolerations(gpu_pools), LUSTRE_STARTUP_TOLERATION]}},
            opts=in_cluster,
        )
        training = cfg.training
        namespace = training_namespace(f"{name}-training-namespace", training.namespace, in_cluster)
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata={"name": training.storage_class_name},
            provisioner=PROVISIONER,
            parameters={"mgs-ip-address": self.mgs_address, "fs-name": LUSTRE_FS_NAME},
            # Retain: deleting a claim must never delete training data on the filesystem.
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            mount_options=["noatime", "flock"],
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[driver])),
        )
        claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata={"name": training.pvc_name, "namespace": namespace.metadata["name"]},
            spec={
                "access_modes": ["ReadWriteMany"],
                "storage_class_name": storage_class.metadata["name"],
                "resources": {"requests": {"storage": f"{training.pvc_size_gi}Gi"}},
            },
            # The claim binds through the driver: create it once the driver is installed.
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[driver])),
        )
        if training.verification_pod:
            # The design notes' lustre-test: lists the mount, then idles for `kubectl exec`.
            verification_pod(
                f"{name}-verification-pod",
                pod_name="lustre-test",
                namespace=claim.metadata["namespace"],
                image=training.verification_image,
                script=f"ls -al {MOUNT_PATH} && sleep 3600",
                mounts=[ClaimMount("lustre", claim.metadata["name"], MOUNT_PATH)],
                opts=in_cluster,
            )

        self.namespace = namespace.metadata["name"]
        self.storage_class_name = storage_class.metadata["name"]
        self.pvc_name = claim.metadata["name"]
        self.register_outputs(
            {
                "filesystem_id": self.filesystem_id,
                "mgs_address": self.mgs_address,
                "storage_account_name": self.storage_account_name,
                "namespace": self.namespace,
                "storage_class_name": self.storage_class_name,
                "pvc_name": self.pvc_name,
            }
        )
