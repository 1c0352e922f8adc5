"""Shared shape of autoscaled node pools, and the system and CPU pools."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .base import ConfigModel
from .errors import field_error
from .types import HashedPoolName, PoolName, Zone
from .vm_catalog import CPU_TEMP_DISK_GIB, ephemeral_os_disk_limit_gib

OsSku = Literal["Ubuntu", "Ubuntu2204", "AzureLinux"]
OsDiskType = Literal["Ephemeral", "Managed"]

RESERVED_LABEL_KEYS = frozenset({"pool", "gpu-pool", "kubernetes.azure.com/mode"})


class AutoscaledPoolConfig(ConfigModel):
    """Fields every autoscaled pool has; the cluster autoscaler owns the node count."""

    name: PoolName
    vm_size: str = Field(pattern=r"^Standard_[A-Za-z0-9_]+$", description="Azure VM size, e.g. Standard_D8ds_v5")
    zones: list[Zone] = Field(default_factory=lambda: ["1", "2", "3"], description="Availability zones")
    min_count: int = Field(ge=0, le=1000)
    max_count: int = Field(ge=1, le=1000)
    os_sku: OsSku = "Ubuntu"
    os_disk_size_gb: int = Field(default=128, ge=30, le=2048)
    os_disk_type: OsDiskType = Field(
        default="Managed",
        description="Ephemeral: the OS disk lives on the VM's local temp disk (faster, free, gone on reimage); "
        "osDiskSizeGb must fit on it",
    )
    max_pods: int = Field(default=110, ge=10, le=250)
    labels: dict[str, str] = Field(default_factory=dict, description="Extra Kubernetes node labels")

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
    def _check_ephemeral_os_disk(self) -> AutoscaledPoolConfig:
        if self.os_disk_type != "Ephemeral":
            return self
        limit = ephemeral_os_disk_limit_gib(self.vm_size)
        if limit is None:
            raise field_error(
                "osDiskType",
                self.os_disk_type,
                f"Ephemeral needs the local disk size of {self.vm_size}, which the catalog lacks; use a GPU catalog "
                f"size or one of {sorted(CPU_TEMP_DISK_GIB)}, or osDiskType Managed",
            )
        if self.os_disk_size_gb > limit:
            raise field_error(
                "osDiskType",
                self.os_disk_type,
                f"an Ephemeral OS disk of osDiskSizeGb {self.os_disk_size_gb} does not fit the {limit} GiB temp disk "
                f"of {self.vm_size}; lower osDiskSizeGb to {limit} or less, or use osDiskType Managed",
            )
        return self


class SystemPoolConfig(AutoscaledPoolConfig):
    """The pool inside the ManagedCluster; tainted CriticalAddonsOnly so only system pods land there."""

    name: PoolName = "system"
    vm_size: str = Field(default="Standard_D4ds_v5", pattern=r"^Standard_[A-Za-z0-9_]+$")
    min_count: int = Field(default=1, ge=1, le=1000, description="System pools keep at least one node")
    max_count: int = Field(default=3, ge=1, le=1000)


class CpuPoolConfig(AutoscaledPoolConfig):
    """User pool for monitoring, log collection, API servers and preprocessing (label pool=cpu)."""

    name: HashedPoolName = "cpu"
    vm_size: str = Field(default="Standard_D8ds_v5", pattern=r"^Standard_[A-Za-z0-9_]+$")
    min_count: int = Field(default=1, ge=0, le=1000)
    max_count: int = Field(default=5, ge=1, le=1000)
