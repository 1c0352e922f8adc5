"""Azure NetApp Files: account, capacity pool and NFSv4.1 volumes, exposed to pods as static ReadWriteMany PVs.

Why static PVs and not Trident: Microsoft's "Configure Azure NetApp Files for AKS" (learn.microsoft.com/azure/aks/
azure-netapp-files, checked 2026-12-02) offers both; Trident is its choice for many per-claim volumes created from
Kubernetes. Here the volumes are a few long-lived shared POSIX trees the platform owns: Pulumi creates them, so
prod protects them, the export policy and size are reviewed config, and resizing is a config change Azure applies
online. Static PVs need no in-cluster controller, no CRDs and no Azure credentials in the cluster. The limits
Microsoft lists for static volumes (not expandable from Kubernetes, sized up front) are how this platform manages
them anyway. Per-claim dynamic volumes would need Trident (NetApp's chart and a TridentBackendConfig).
"""

from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_azure_native.netapp as netapp
import pulumi_azure_native.resources as resources
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.storage.netapp import GIB, TIB, NetAppFilesConfig, NetAppVolumeConfig

from ..shared.context import ClusterHandle
from ..shared.workloads import ClaimMount, training_namespace, verification_pod

# The typed CapacityPool of pulumi-azure-native 3.29 sends NetApp API 2024-09-01, which has no Flexible service
# level and no pool throughput. Flexible pools go through the generic resource at the first stable API version
# whose PoolProperties has both: Azure/azure-rest-api-specs specification/netapp/resource-manager/Microsoft.NetApp/
# NetApp/stable/2025-06-01/netapp.json (commit 03e9486) lists `Flexible` in serviceLevel and has
# `customThroughputMibps`; stable 2025-01-01 has neither, so ARM would refuse the level and drop the throughput.
FLEXIBLE_POOL_API_VERSION = "2025-06-01"
# Microsoft's recommended NFSv4.1 options (learn.microsoft.com/azure/azure-netapp-files/troubleshoot-latency,
# ms.date 08/05/2026): hard mounts, 256 KiB transfers, TCP.
MOUNT_OPTIONS = ["vers=4.1", "hard", "rsize=262144", "wsize=262144", "tcp"]
NO_PROVISIONER = "kubernetes.io/no-provisioner"  # binding only: Pulumi, not a CSI driver, creates the volumes
MOUNT_ROOT = "/mnt/netapp"
# checkov skips on the verification pod, each with its reason (tests/storage/test_netapp.py scans it).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=the ubuntu tag is multi-arch and pinned by release; a digest would pin one arch",
    "checkov.io/skip2": "CKV_K8S_8=a one-shot mount check that then idles; nothing for a liveness probe to test",
    "checkov.io/skip3": "CKV_K8S_9=a one-shot mount check that then idles; no traffic waits on its readiness",
    "checkov.io/skip4": "CKV2_K8S_6=opens no port and calls nothing; the NFS mount is the kubelet's, not the pod's",
}


class NetAppFilesArgs(TypedDict):
    settings: NetAppFilesConfig
    """The validated `storage.netappFiles` section."""
    cluster: ClusterHandle
    """The cluster the claims live in, and the resource group, region, tags and protection."""
    subnet_id: pulumi.Input[str]
    """The VNet's subnet delegated to Microsoft.Netapp/volumes."""
    allowed_clients: Sequence[str]
    """CIDRs the export policy admits: the node subnet (CNI overlay pods reach NFS as their node)."""
    namespace: NotRequired[pulumi.Input[str]]
    """An existing namespace for the claims (Lustre's training namespace); without it one is created."""


class NetAppFiles(pulumi.ComponentResource):
    """One NetApp account and pool with NFSv4.1 volumes, each bound to a ReadWriteMany claim."""

    account_name: pulumi.Output[str]
    """The NetApp account."""
    pool_id: pulumi.Output[str]
    """Azure ID of the capacity pool."""
    mount_addresses: pulumi.Output[dict[str, str]]
    """Volume name -> `server:/path` that NFS clients mount."""
    namespace: pulumi.Output[str]
    """Namespace of the claims."""
    claim_names: pulumi.Output[list[str]]
    """ReadWriteMany claims, one per volume."""

    def __init__(self, name: str, args: NetAppFilesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:NetAppFiles", name, None, opts)
        cfg, handle = args["settings"], args["cluster"]
        if not args["allowed_clients"]:
            raise ValueError("NetAppFiles: allowed_clients must name the node subnet; an empty export admits no one")
        account = self._account(name, cfg, handle)
        pool = self._pool(name, cfg, handle, account)
        volumes = [self._volume(name, cfg, v, handle, pool, args) for v in cfg.volumes]

        self.account_name = pulumi.Output.from_input(cfg.account_name)
        self.pool_id = pool.id
        addresses = {v.name: _mount_address(vol).apply(lambda ip, v=v: f"{ip}:/{v.export_path}") for v, vol in volumes}
        self.mount_addresses = pulumi.Output.all(**addresses).apply(lambda a: dict(a))
        namespace, claims = self._claims(name, cfg, handle, volumes, args.get("namespace"))
        self.namespace = pulumi.Output.from_input(namespace)
        self.claim_names = pulumi.Output.all(*(c.metadata["name"] for c in claims)).apply(lambda n: list(n))
        self.register_outputs(
            {
                "account_name": self.account_name,
                "pool_id": self.pool_id,
                "mount_addresses": self.mount_addresses,
                "namespace": self.namespace,
                "claim_names": self.claim_names,
            }
        )

    def _account(self, name: str, cfg: NetAppFilesConfig, handle: ClusterHandle) -> netapp.Account:
        return netapp.Account(
            f"{name}-account",
            resource_group_name=handle.resource_group_name,
            location=handle.location,
            account_name=cfg.account_name,
            tags=dict(handle.tags),
            # Deleting the account deletes every pool and volume under it.
            opts=pulumi.ResourceOptions(parent=self, protect=handle.protect),
        )

    def _claims(
        self,
        name: str,
        cfg: NetAppFilesConfig,
        handle: ClusterHandle,
        volumes: list[tuple[NetAppVolumeConfig, netapp.CapacityPoolVolume]],
        namespace: pulumi.Input[str] | None,
    ) -> tuple[pulumi.Input[str], list[k8s.core.v1.PersistentVolumeClaim]]:
        """The class, a claim per volume (in `namespace`, or a namespace of its own) and the verification pod."""
        in_cluster = handle.k8s_options(self)
        if namespace is None:
            namespace = training_namespace(f"{name}-namespace", cfg.namespace, in_cluster).metadata["name"]
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-storage-class",
            metadata={"name": cfg.storage_class_name},
            provisioner=NO_PROVISIONER,
            # Retain: deleting a claim must never delete the data; the volume is Pulumi's, protected in prod.
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            opts=in_cluster,
        )
        claims = [self._claim(name, cfg, v, vol, storage_class, namespace, in_cluster) for v, vol in volumes]
        if cfg.verification_pod:
            self._verification_pod(name, cfg, claims, in_cluster)
        return namespace, claims

    def _pool(
        self, name: str, cfg: NetAppFilesConfig, handle: ClusterHandle, account: netapp.Account
    ) -> pulumi.CustomResource:
        # The pool holds every volume; a replacement would have to move or drop them all.
        opts = pulumi.ResourceOptions(parent=self, depends_on=[account], protect=handle.protect)
        size = cfg.size_tib * TIB
        if cfg.flexible:
            return resources.Resource(
                f"{name}-pool",
                resource_group_name=handle.resource_group_name,
                location=handle.location,
                api_version=FLEXIBLE_POOL_API_VERSION,
                resource_provider_namespace="Microsoft.NetApp",
                parent_resource_path=f"netAppAccounts/{cfg.account_name}",
                resource_type="capacityPools",
                resource_name_=cfg.pool_name,
                properties={
                    "serviceLevel": "Flexible",
                    "size": size,
                    "qosType": "Manual",  # Flexible pools are manual QoS only
                    "customThroughputMibps": cfg.pool_throughput_mibps,
                },
                tags=dict(handle.tags),
                opts=opts,
            )
        return netapp.CapacityPool(
            f"{name}-pool",
            resource_group_name=handle.resource_group_name,
            location=handle.location,
            account_name=cfg.account_name,
            pool_name=cfg.pool_name,
            service_level=netapp.ServiceLevel(cfg.service_level),
            size=float(size),
            # Auto QoS: each volume's throughput follows its quota.
            qos_type=netapp.QosType.AUTO,
            tags=dict(handle.tags),
            opts=opts,
        )

    def _volume(
        self,
        name: str,
        cfg: NetAppFilesConfig,
        volume: NetAppVolumeConfig,
        handle: ClusterHandle,
        pool: pulumi.CustomResource,
        args: NetAppFilesArgs,
    ) -> tuple[NetAppVolumeConfig, netapp.CapacityPoolVolume]:
        created = netapp.CapacityPoolVolume(
            f"{name}-volume-{volume.name}",
            resource_group_name=handle.resource_group_name,
            location=handle.location,
            account_name=cfg.account_name,
            pool_name=cfg.pool_name,
            volume_name=volume.name,
            creation_token=volume.export_path,
            subnet_id=args["subnet_id"],
            usage_threshold=float(volume.size_gib * GIB),
            protocol_types=["NFSv4.1"],
            # Standard network features: the 1 TiB pool minimum and NSGs/UDRs on the delegated subnet need them.
            network_features=netapp.NetworkFeatures.STANDARD,
            security_style=netapp.SecurityStyle.UNIX,
            unix_permissions=volume.unix_permissions,
            throughput_mibps=float(cfg.volume_throughput_mibps(volume)) if cfg.flexible else None,
            export_policy={
                "rules": [
                    {
                        "rule_index": 1,
                        "allowed_clients": ",".join(args["allowed_clients"]),
                        "nfsv3": False,
                        "nfsv41": True,
                        "cifs": False,
                        "unix_read_write": True,
                        "unix_read_only": False,
                        "has_root_access": volume.root_access,
                        "chown_mode": netapp.ChownMode.RESTRICTED,
                    }
                ]
            },
            tags=dict(handle.tags),
            # The volume is the data: a replacement starts empty.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[pool], protect=handle.protect),
        )
        return volume, created

    def _claim(
        self,
        name: str,
        cfg: NetAppFilesConfig,
        volume: NetAppVolumeConfig,
        created: netapp.CapacityPoolVolume,
        storage_class: k8s.storage.v1.StorageClass,
        namespace: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> k8s.core.v1.PersistentVolumeClaim:
        size = f"{volume.size_gib}Gi"
        pv_name = f"netapp-{volume.name}"
        k8s.core.v1.PersistentVolume(
            f"{name}-pv-{volume.name}",
            metadata={"name": pv_name, "labels": {"netapp-volume": volume.name}},
            spec={
                "capacity": {"storage": size},
                "access_modes": ["ReadWriteMany"],
                "persistent_volume_reclaim_policy": "Retain",
                "storage_class_name": storage_class.metadata["name"],
                "mount_options": MOUNT_OPTIONS,
                "nfs": {"server": _mount_address(created), "path": f"/{volume.export_path}"},
                # Reserved for its claim: no other claim of the class can bind it.
                "claim_ref": {"namespace": namespace, "name": volume.name},
            },
            # Kubernetes refuses to change a PV's NFS source in place: a new mount target means a new PV.
            opts=pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(replace_on_changes=["spec.nfs"], delete_before_replace=True)
            ),
        )
        return k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc-{volume.name}",
            metadata={"name": volume.name, "namespace": namespace},
            spec={
                "access_modes": ["ReadWriteMany"],
                "storage_class_name": storage_class.metadata["name"],
                "volume_name": pv_name,
                "resources": {"requests": {"storage": size}},
            },
            opts=opts,
        )

    def _verification_pod(
        self,
        name: str,
        cfg: NetAppFilesConfig,
        claims: list[k8s.core.v1.PersistentVolumeClaim],
        opts: pulumi.ResourceOptions,
    ) -> None:
        """Mounts every claim on the CPU pool, shows the NFS mounts and writes a marker file as nobody."""
        mounts = [f"{MOUNT_ROOT}/{v.name}" for v in cfg.volumes]
        script = " && ".join(
            [f"df -h {' '.join(mounts)}", *(f"touch {m}/.mounted-by-$(hostname)" for m in mounts), "sleep 3600"]
        )
        verification_pod(
            f"{name}-verification-pod",
            pod_name="netapp-test",
            namespace=claims[0].metadata["namespace"],
            image=cfg.verification_image,
            script=script,
            mounts=[
                ClaimMount(v.name, c.metadata["name"], m) for v, c, m in zip(cfg.volumes, claims, mounts, strict=True)
            ],
            opts=opts,
            annotations=CHECKOV_SKIPS,
            pull_always=True,
        )


def _mount_address(volume: netapp.CapacityPoolVolume) -> pulumi.Output[str]:
    """The volume's mount target address in the delegated subnet."""
    return volume.mount_targets.apply(lambda targets: targets[0].ip_address if targets else "")
