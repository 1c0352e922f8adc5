"""Blob CSI StorageClasses: standard (bulk, cheap) and premium (small files, many transactions)."""

from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.storage.section import BlobClassesConfig

from ..shared.context import ClusterHandle

PROVISIONER = "blob.csi.azure.com"  # the AKS Blob CSI driver (cluster storageProfile.blobCSIDriver)


class BlobStorageClassesArgs(TypedDict):
    settings: BlobClassesConfig
    """The `storage.blobClasses` config section."""
    cluster: ClusterHandle
    """The cluster; the classes are deleted with it."""


class BlobStorageClasses(pulumi.ComponentResource):
    """Dynamically provisioned Blob containers; each claim gets its own container in a driver-managed account."""

    class_names: pulumi.Output[list[str]]
    """Names of the classes created."""

    def __init__(self, name: str, args: BlobStorageClassesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:BlobStorageClasses", name, None, opts)
        cfg = args["settings"]
        in_cluster = args["cluster"].k8s_options(self)
        names: list[pulumi.Output[str]] = []
        for role, blob_class in (("standard", cfg.standard), ("premium", cfg.premium)):
            if not blob_class.enabled:
                continue
            mount_options = ["-o allow_other", "--file-cache-timeout-in-seconds=120"]
            if blob_class.protocol == "nfs":
                mount_options = ["nconnect=4"]
            storage_class = k8s.storage.v1.StorageClass(
                f"{name}-{role}",
                metadata={"name": blob_class.name},
                provisioner=PROVISIONER,
                parameters={"skuName": blob_class.sku_name, "protocol": blob_class.protocol},
                # Retain: a deleted claim must not delete the container and its data.
                reclaim_policy="Retain",
                volume_binding_mode="Immediate",
                allow_volume_expansion=True,
                mount_options=mount_options,
                opts=in_cluster,
            )
            names.append(storage_class.metadata["name"])
        self.class_names = pulumi.Output.all(*names).apply(lambda n: list(n))
        self.register_outputs({"class_names": self.class_names})
