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


def _hsm_private_endpoint(
    name: str, cfg: LustreConfig, args: LustreStorageArgs, account: storage.StorageAccount, parent: pulumi.Resource
) -> list[pulumi.Resource]:
    """The account's blob endpoint in the Lustre VNet, when the account is private: what the filesystem waits for.

    The Lustre servers reach Blob from the Lustre subnet: privately, through this endpoint in the same VNet,
    whose DNS zone (linked to the VNet) resolves the account name, as Azure Managed Lustre requires.
    """
    endpoints_subnet_id, vnet_id = args.get("private_endpoints_subnet_id"), args.get("vnet_id")
    if cfg.blob.public_network_access or endpoints_subnet_id is None or vnet_id is None:
        return []
    handle = args["cluster"]
    return private_endpoint(
        f"{name}-hsm",
        parent=parent,
        resource_group_name=handle.resource_group_name,
        location=handle.location,
        target_id=account.id,
        target_name=account.name,
        group_id="blob",
        dns_zone=BLOB_PRIVATE_DNS_ZONE,
        subnet_id=endpoints_subnet_id,
        vnet_id=vnet_id,
        vnet_link_name=f"{cfg.blob.account_name}-vnet",
        tags=dict(handle.tags),
    ).ready


def _hsm_containers(
    name: str, cfg: LustreConfig, rg: pulumi.Input[str], account: storage.StorageAccount
) -> dict[str, storage.BlobContainer]:
    """The account's blob service settings (versioning, soft delete) and its data and logging containers."""
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
    return {
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


def _hsm_grants(name: str, cfg: LustreConfig, account: storage.StorageAccount) -> list[pulumi.Resource]:
    """The Lustre service's two roles on the account.

    The Lustre service reads and writes the containers as this principal; both grants must exist and have taken
    effect first, or the filesystem's creation fails (Azure cannot detect it beforehand): the filesystem waits
    for the grants, which hold it after their creation (first deploy only).
    """
    propagation = roles.propagation_wait(f"{name}-hsm", cfg.role_assignment_propagation_seconds)
    return [
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


def _customer_key(
    cfg: LustreConfig,
) -> tuple[
    storagecache.AmlFilesystemEncryptionSettingsArgsDict | None, storagecache.AmlFilesystemIdentityArgsDict | None
]:
    """The filesystem's encryption settings and the identity that reads the key, when a customer key is set."""
    if cfg.encryption is None:
        return None, None
    encryption: storagecache.AmlFilesystemEncryptionSettingsArgsDict = {
        "key_encryption_key": {
            "key_url": cfg.encryption.key_url,
            "source_vault": {"id": cfg.encryption.key_vault_id},
        }
    }
    identity: storagecache.AmlFilesystemIdentityArgsDict = {
        "type": storagecache.AmlFilesystemIdentityType.USER_ASSIGNED,
        "user_assigned_identities": [cfg.encryption.user_assigned_identity_id],
    }
    return encryption, identity


def _filesystem(
    name: str,
    cfg: LustreConfig,
    args: LustreStorageArgs,
    containers: dict[str, storage.BlobContainer],
    depends_on: list[pulumi.Resource],
    parent: pulumi.Resource,
) -> storagecache.AmlFilesystem:
    """The AMLFS filesystem, archiving to the data container, once `depends_on` (grants, endpoint) are ready."""
    handle, squash = args["cluster"], cfg.root_squash
    encryption, identity = _customer_key(cfg)
    return storagecache.AmlFilesystem(
        f"{name}-filesystem",
        resource_group_name=handle.resource_group_name,
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
        tags=dict(handle.tags),
        # Billed for its full size and never resizable: a replacement would drop every file on it.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on, protect=handle.protect),
    )


def _csi_driver(
    name: str, gpu_pools: Sequence[GpuPoolConfig], in_cluster: pulumi.ResourceOptions
) -> k8s.helm.v3.Release:
    """The Azure Lustre CSI driver, its node plugin on every GPU node."""
    return k8s.helm.v3.Release(
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


def _storage_class(
    name: str, cfg: LustreConfig, mgs_address: pulumi.Input[str], after_driver: pulumi.ResourceOptions
) -> k8s.storage.v1.StorageClass:
    """The StorageClass that mounts the filesystem from its management service."""
    return k8s.storage.v1.StorageClass(
        f"{name}-storage-class",
        metadata={"name": cfg.training.storage_class_name},
        provisioner=PROVISIONER,
        parameters={"mgs-ip-address": mgs_address, "fs-name": LUSTRE_FS_NAME},
        # Retain: deleting a claim must never delete training data on the filesystem.
        reclaim_policy="Retain",
        volume_binding_mode="Immediate",
        mount_options=["noatime", "flock"],
        opts=after_driver,
    )


def _training_claim(
    name: str,
    cfg: LustreConfig,
    namespace: k8s.core.v1.Namespace,
    storage_class: k8s.storage.v1.StorageClass,
    after_driver: pulumi.ResourceOptions,
) -> k8s.core.v1.PersistentVolumeClaim:
    """The ReadWriteMany claim training pods mount."""
    training = cfg.training
    return k8s.core.v1.PersistentVolumeClaim(
        f"{name}-pvc",
        metadata={"name": training.pvc_name, "namespace": namespace.metadata["name"]},
        spec={
            "access_modes": ["ReadWriteMany"],
            "storage_class_name": storage_class.metadata["name"],
            "resources": {"requests": {"storage": f"{training.pvc_size_gi}Gi"}},
        },
        opts=after_driver,
    )


def _verification_pod(
    name: str, cfg: LustreConfig, claim: k8s.core.v1.PersistentVolumeClaim, in_cluster: pulumi.ResourceOptions
) -> None:
    """The design notes' lustre-test, when asked for: lists the mount, then idles for `kubectl exec`."""
    if not cfg.training.verification_pod:
        return
    verification_pod(
        f"{name}-verification-pod",
        pod_name="lustre-test",
        namespace=claim.metadata["namespace"],
        image=cfg.training.verification_image,
        script=f"ls -al {MOUNT_PATH} && sleep 3600",
        mounts=[ClaimMount("lustre", claim.metadata["name"], MOUNT_PATH)],
        opts=in_cluster,
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
        if not cfg.blob.public_network_access and (
            args.get("private_endpoints_subnet_id") is None or args.get("vnet_id") is None
        ):
            raise ValueError("LustreStorage: a private HSM account needs private_endpoints_subnet_id and vnet_id")
        account = _hsm_account(f"{name}-hsm-account", cfg, args, self, handle.protect)
        network_ready = _hsm_private_endpoint(name, cfg, args, account, self)
        containers = _hsm_containers(name, cfg, handle.resource_group_name, account)
        grants = _hsm_grants(name, cfg, account)
        filesystem = _filesystem(name, cfg, args, containers, [*grants, *network_ready], self)
        # Auto-export of checkpoints and one-off imports, never at the same time (components/storage/lustre_tiering.py).
        blob_jobs(name, cfg, filesystem.name, handle.resource_group_name, handle.location, dict(handle.tags), self)
        self.filesystem_id = filesystem.id
        self.mgs_address = filesystem.client_info.apply(lambda info: info.mgs_address if info else "")
        self.storage_account_name = account.name
        self._mount_in_cluster(name, cfg, handle, list(args.get("gpu_pools", [])))
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

    def _mount_in_cluster(
        self, name: str, cfg: LustreConfig, handle: ClusterHandle, gpu_pools: Sequence[GpuPoolConfig]
    ) -> None:
        """The CSI driver, then the StorageClass and the training claim that bind through it."""
        in_cluster = handle.k8s_options(self)
        driver = _csi_driver(name, gpu_pools, in_cluster)
        namespace = training_namespace(f"{name}-training-namespace", cfg.training.namespace, in_cluster)
        # The class and the claim bind through the driver: create them once the driver is installed.
        after_driver = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[driver]))
        storage_class = _storage_class(name, cfg, self.mgs_address, after_driver)
        claim = _training_claim(name, cfg, namespace, storage_class, after_driver)
        _verification_pod(name, cfg, claim, in_cluster)
        self.namespace = namespace.metadata["name"]
        self.storage_class_name = storage_class.metadata["name"]
        self.pvc_name = claim.metadata["name"]
