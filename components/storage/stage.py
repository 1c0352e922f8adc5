"""The storage stage of AksGpuPlatform: Blob and Disk classes, Managed Lustre, NetApp Files."""

from __future__ import annotations

from aks_gpu_platform.config.platform import PlatformConfig

from ..network.vnet import Network
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .blob_classes import BlobStorageClasses
from .disk_classes import DiskStorageClasses
from .lustre import LustreStorage
from .netapp import NetAppFiles, NetAppFilesArgs


def build_storage(
    cfg: PlatformConfig, place: Placement, handle: ClusterHandle, network: Network
) -> tuple[LustreStorage | None, NetAppFiles | None]:
    """Lustre when `storage.lustre.enabled`, NetApp Files when `storage.netappFiles.enabled` (None otherwise)."""
    BlobStorageClasses(
        place.role("blob-classes"),
        {"settings": cfg.storage.blob_classes, "cluster": handle},
        place.child("blob-classes"),
    )
    lustre = None
    lustre_cfg = cfg.storage.lustre
    if lustre_cfg is not None and lustre_cfg.enabled:
        lustre = LustreStorage(
            place.role("lustre"),
            {
                "settings": lustre_cfg,
                "cluster": handle,
                "lustre_subnet_id": network.lustre_subnet_id,
                "private_endpoints_subnet_id": network.private_endpoints_subnet_id,
                "vnet_id": network.vnet_id,
                "gpu_pools": cfg.gpu_pools,
            },
            place.child("lustre"),
        )
    DiskStorageClasses(
        place.role("disk-classes"),
        {"settings": cfg.storage.disk_classes, "cluster": handle},
        place.child("disk-classes"),
    )
    anf = cfg.storage.netapp_files
    if not anf.enabled:
        return lustre, None
    assert network.netapp_subnet_id is not None  # PlatformConfig requires the subnet with netappFiles
    anf_args: NetAppFilesArgs = {
        "settings": anf,
        "cluster": handle,
        "subnet_id": network.netapp_subnet_id,
        "allowed_clients": [str(cfg.network.nodes_cidr)],
    }
    if lustre is not None and lustre_cfg is not None and lustre_cfg.training.namespace == anf.namespace:
        anf_args["namespace"] = lustre.namespace  # the claims join the training namespace Lustre creates
    return lustre, NetAppFiles(place.role("netapp"), anf_args, place.child("netapp"))
