"""Shared shape of autoscaled node pools, and the system and CPU pools."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..catalog.gpu_sizes import gpu_sku
from ..catalog.vm_sizes import CPU_SIZES, closest_cpu_sizes, cpu_size, ephemeral_os_disk_limit_gib
from ..errors import field_error
from ..types import HashedPoolName, PoolName, Zone

OsSku = Literal["Ubuntu", "Ubuntu2204", "AzureLinux"]
OsDiskType = Literal["Ephemeral", "Managed"]

RESERVED_LABEL_KEYS = frozenset({"pool", "gpu-pool", "kubernetes.azure.com/mode"})

VM_SIZE_PATTERN = r"^Standard_[A-Za-z0-9_]+$"
CPU_VM_SIZE = "CPU VM size from the catalog (config/catalog/vm_sizes.py: D, E and F v5/v6); fixed at pool creation"
# AKS caps a node pool at 1,000 nodes.
MIN_COUNT = "Fewest nodes the cluster autoscaler keeps (AKS: 0-1000 per pool)"
MAX_COUNT = "Most nodes the cluster autoscaler adds (AKS: 1-1000 per pool); each needs a node-subnet address"


class AutoscaledPoolConfig(ConfigModel):
    """Fields every autoscaled pool has; the cluster autoscaler owns the node count."""

    cpu_sizes_only: ClassVar[bool] = False
    """CPU pools take sizes of the CPU catalog; GPU pools check theirs against the GPU catalog."""

    name: PoolName
    vm_size: str = Field(pattern=VM_SIZE_PATTERN, description="Azure VM size, e.g. Standard_D8ds_v5")
    zones: list[Zone] = Field(
        default_factory=lambda: ["1", "2", "3"],
        description="Availability zones the pool spreads over; fixed at creation",
    )
    min_count: int = Field(ge=0, le=1000, description=MIN_COUNT)
    max_count: int = Field(ge=1, le=1000, description=MAX_COUNT)
    os_sku: OsSku = Field(
        default="Ubuntu",
        description="Node OS; pools that mount Lustre need Ubuntu or Ubuntu2204 (the Lustre CSI client's kernels)",
    )
    os_disk_size_gb: int = Field(
        default=128,
        ge=30,
        le=2048,
        description="OS disk size; AKS takes 30 GB (its smallest node image) to 2048 GB; fixed at creation",
    )
    os_disk_type: OsDiskType = Field(
        default="Managed",
        description="Ephemeral: the OS disk lives on the VM's local temp disk (faster, free, gone on reimage); "
        "osDiskSizeGb must fit on it",
    )
    max_pods: int = Field(
        default=110, ge=10, le=250, description="Pods per node; AKS with Azure CNI allows 10-250; fixed at creation"
    )
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra Kubernetes node labels (pool, gpu-pool and the AKS mode are set)"
    )

    @model_validator(mode="after")
    def _check_counts(self) -> AutoscaledPoolConfig:
        if self.min_count > self.max_count:
            raise field_error("minCount", self.min_count, f"must not exceed maxCount ({self.max_count})")
        if len(set(self.zones)) != len(self.zones):
            raise field_error("zones", self.zones, "each zone may appear once")
        clash = sorted(RESERVED_LABEL_KEYS & self.labels.keys())
        if clash:
            raise field_error("labels", clash, f"keys {sorted(RESERVED_LABEL_KEYS)} are set by the platform")
        return self

    @model_validator(mode="after")
    def _check_cpu_size(self) -> AutoscaledPoolConfig:
        if not self.cpu_sizes_only or cpu_size(self.vm_size) is not None:
            return self
        close = closest_cpu_sizes(self.vm_size)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise field_error(
            "vmSize",
            self.vm_size,
            f"not a CPU size of the catalog; {hint}The catalog (config/catalog/vm_sizes.py, from Microsoft's size "
            "pages) "
            "lists the D, E and F v5/v6 families; add a row with its source to use another size",
        )

    @model_validator(mode="after")
    def _check_ephemeral_os_disk(self) -> AutoscaledPoolConfig:
        if self.os_disk_type != "Ephemeral":
            return self
        if gpu_sku(self.vm_size) is None and cpu_size(self.vm_size) is None:
            raise field_error(
                "osDiskType",
                self.os_disk_type,
                f"Ephemeral needs the local disk size of {self.vm_size}, which the catalogs lack "
                "(config/catalog/gpu_sizes.py, config/catalog/vm_sizes.py); use a catalogued size, or osDiskType "
                "Managed",
            )
        limit = ephemeral_os_disk_limit_gib(self.vm_size)
        if limit is None:
            raise field_error(
                "osDiskType",
                self.os_disk_type,
                f"{self.vm_size} takes no ephemeral OS disk (its series page in the catalog, "
                "config/catalog/vm_sizes.py, "
                "lists no local temp disk or no ephemeral OS disk support); use osDiskType Managed"
                + "".join(f", or {size}" for size in self._ephemeral_alternatives()),
            )
        if self.os_disk_size_gb > limit:
            raise field_error(
                "osDiskType",
                self.os_disk_type,
                f"an Ephemeral OS disk of osDiskSizeGb {self.os_disk_size_gb} does not fit the {limit} GiB temp disk "
                f"of {self.vm_size}; lower osDiskSizeGb to {limit} or less, or use osDiskType Managed",
            )
        return self

    def _ephemeral_alternatives(self) -> list[str]:
        """Catalogued CPU sizes with the same vCPUs and memory whose temp disk holds this OS disk."""
        current = cpu_size(self.vm_size)
        if current is None:
            return []
        return [
            name
            for name, size in CPU_SIZES.items()
            if (size.vcpus, size.memory_gib) == (current.vcpus, current.memory_gib)
            and (size.ephemeral_os_disk_limit_gib or 0) >= self.os_disk_size_gb
        ][:2]


class SystemPoolConfig(AutoscaledPoolConfig):
    """The pool inside the ManagedCluster; tainted CriticalAddonsOnly so only system pods land there."""

    cpu_sizes_only: ClassVar[bool] = True
    name: PoolName = "system"
    vm_size: str = Field(default="Standard_D4ds_v5", pattern=VM_SIZE_PATTERN, description=CPU_VM_SIZE)
    min_count: int = Field(
        default=1, ge=1, le=1000, description="System pools keep at least one node (AKS: 1-1000 per pool)"
    )
    max_count: int = Field(default=3, ge=1, le=1000, description=MAX_COUNT)


class CpuPoolConfig(AutoscaledPoolConfig):
    """User pool for monitoring, log collection, API servers and preprocessing (label pool=cpu)."""

    cpu_sizes_only: ClassVar[bool] = True
    name: HashedPoolName = "cpu"
    vm_size: str = Field(default="Standard_D8ds_v5", pattern=VM_SIZE_PATTERN, description=CPU_VM_SIZE)
    min_count: int = Field(default=1, ge=0, le=1000, description=MIN_COUNT)
    max_count: int = Field(default=5, ge=1, le=1000, description=MAX_COUNT)
