"""The storage stage of AksGpuPlatform: Blob and Disk classes, Managed Lustre, NetApp Files."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.storage.section import StorageConfig

from ..network.vnet import Network
from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .blob_classes import BlobStorageClasses
from .disk_classes import DiskStorageClasses
from .lustre import LustreStorage
from .netapp import NetAppFiles, NetAppFilesArgs


def build_storage(
    place: Placement,
    handle: ClusterHandle,
    network: Network,
    storage: StorageConfig,
    gpu_pools: Sequence[GpuPoolConfig],
    nodes_cidr: ipaddress.IPv4Network,
) -> tuple[LustreStorage | None, NetAppFiles | None]:
    """Lustre when `storage.lustre.enabled`, NetApp Files (open to the nodes subnet `nodes_cidr`) when
    `storage.netappFiles.enabled` (None otherwise)."""
    BlobStorageClasses(
        place.role("blob-classes"),
        {"settings": storage.blob_classes, "cluster": handle},
        place.child("blob-classes"),
    )
    lustre = None
    lustre_cfg = storage.lustre
    if lustre_cfg is not None and lustre_cfg.enabled:
        lustre = LustreStorage(
            place.role("lustre"),
            {
                "settings": lustre_cfg,
                "cluster": handle,
                "lustre_subnet_id": network.lustre_subnet_id,
                "private_endpoints_subnet_id": network.private_endpoints_subnet_id,
                "vnet_id": network.vnet_id,
                "gpu_pools": gpu_pools,
            },
            place.child("lustre"),
        )
    DiskStorageClasses(
        place.role("disk-classes"),
        {"settings": storage.disk_classes, "cluster": handle},
        place.child("disk-classes"),
    )
    anf = storage.netapp_files
    if not anf.enabled:
        return lustre, None
    assert network.netapp_subnet_id is not None  # check_netapp_files_subnet (config/rules.py) requires it
    anf_args: NetAppFilesArgs = {
        "settings": anf,
        "cluster": handle,
        "subnet_id": network.netapp_subnet_id,
        "allowed_clients": [str(nodes_cidr)],
    }
    if lustre is not None and lustre_cfg is not None and lustre_cfg.training.namespace == anf.namespace:
        anf_args["namespace"] = lustre.namespace  # the claims join the training namespace Lustre creates
    return lustre, NetAppFiles(place.role("netapp"), anf_args, place.child("netapp"))
