"""Azure Disk classes the platform states explicitly, beside AKS's built-in ones.

AKS creates `managed-csi` (StandardSSD), `managed-csi-premium` (Premium SSD), `azurefile-csi` and
`azurefile-csi-premium`. Since Kubernetes 1.29 the disk built-ins switch to ZRS only when the cluster was created
across several zones (learn.microsoft.com/azure/aks/availability-zones-overview, checked 2026-12-02). The class
here pins ZRS, so a stateful pod's disk can follow it to a node in any zone whatever the cluster's history.
"""

from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.storage.section import DiskClassesConfig

from ..shared.context import ClusterHandle

DISK_PROVISIONER = "disk.csi.azure.com"  # the AKS Azure Disk CSI driver


class DiskStorageClassesArgs(TypedDict):
    settings: DiskClassesConfig
    """The validated `storage.diskClasses` section."""
    cluster: ClusterHandle
    """The cluster the classes live in."""


class DiskStorageClasses(pulumi.ComponentResource):
    """A zone-redundant Azure Disk class (Premium_ZRS by default) when enabled."""

    class_names: pulumi.Output[list[str]]
    """Names of the classes created."""

    def __init__(self, name: str, args: DiskStorageClassesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:DiskStorageClasses", name, None, opts)
        zrs = args["settings"].zone_redundant
        names: list[pulumi.Output[str]] = []
        if zrs.enabled:
            storage_class = k8s.storage.v1.StorageClass(
                f"{name}-zone-redundant",
                metadata={"name": zrs.name},
                provisioner=DISK_PROVISIONER,
                parameters={"skuName": zrs.sku_name},
                # Retain: deleting a claim must not delete the disk and its data.
                reclaim_policy="Retain",
                # The disk is created once the pod has a node; ZRS lets it attach in any zone later.
                volume_binding_mode="WaitForFirstConsumer",
                allow_volume_expansion=True,
                opts=args["cluster"].k8s_options(self),
            )
            names.append(storage_class.metadata["name"])
        self.class_names = pulumi.Output.all(*names).apply(lambda n: list(n))
        self.register_outputs({"class_names": self.class_names})
