"""Storage section: Azure Managed Lustre with Blob integration and storage classes."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..catalog.lustre_skus import AMLFS_SKUS, AmlfsSku, AmlfsSkuName
from ..errors import field_error
from ..types import Guid, ResourceId, Zone
from .lustre_tiering import LustreImportJobConfig
from .netapp import NetAppFilesConfig

DayOfWeek = Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
SquashMode = Literal["None", "RootOnly", "All"]
BlobAccountSku = Literal["Standard_LRS", "Standard_ZRS", "Standard_GZRS"]
BlobClassSku = Literal["Standard_LRS", "Standard_ZRS", "Premium_LRS", "Premium_ZRS"]
BlobProtocol = Literal["fuse2", "nfs"]

K8S_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
CONTAINER_NAME = r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$"
BLOB_PREFIX = r"^/[^\s]*$"

# Node OS SKUs the Lustre client (kernel modules) of the CSI driver supports on AKS.
LUSTRE_CLIENT_OS_SKUS = ("Ubuntu", "Ubuntu2204")


class MaintenanceWindowConfig(ConfigModel):
    """The 30-minute weekly window Azure patches the filesystem in (required by Azure)."""

    day_of_week: DayOfWeek = Field(description="Day of the weekly maintenance window")
    time_of_day_utc: str = Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description="HH:MM in UTC")


_NID = re.compile(r"^([^.@]+)\.([^.@]+)\.([^.@]+)\.([^.@]+)@tcp\d*$")


def _octet_values(part: str) -> set[int] | None:
    """The values one octet of a Lustre NID expression matches: `10`, `*`, or `[0-15]` / `[1,3,5-7]`."""
    if part == "*":
        return set(range(256))
    if part.isdigit():
        return {int(part)}
    if not (part.startswith("[") and part.endswith("]")):
        return None
    values: set[int] = set()
    for item in part[1:-1].split(","):
        low, _, high = item.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        values |= set(range(int(low), int(high or low) + 1))
    return values


def nid_list_covers(nid_lists: str, cidr: ipaddress.IPv4Network) -> bool:
    """Whether one entry of a Lustre NID list (`;` or space separated, e.g. `10.50.[0-15].[0-255]@tcp`) matches
    every address of `cidr` (a CIDR is a product of per-octet ranges, so one entry can)."""
    first, last = cidr.network_address.packed, cidr.broadcast_address.packed
    needed = [set(range(first[i], last[i] + 1)) for i in range(4)]
    for entry in re.split(r"[;\s]+", nid_lists.strip()):
        match = _NID.match(entry)
        if match is None:
            continue
        octets = [_octet_values(part) for part in match.groups()]
        if all(values is not None and need <= values for values, need in zip(octets, needed, strict=True)):
            return True
    return False


def nid_list_for(cidr: ipaddress.IPv4Network) -> str:
    """The Lustre NID expression of every address of `cidr`."""
    first, last = cidr.network_address.packed, cidr.broadcast_address.packed
    parts = [str(a) if a == b else f"[{a}-{b}]" for a, b in zip(first, last, strict=True)]
    return ".".join(parts) + "@tcp"


class RootSquashConfig(ConfigModel):
    """How root on a client maps on the filesystem; RootOnly keeps containers' root from owning data."""

    mode: SquashMode = Field(
        default="RootOnly", description="RootOnly maps root to squashUid/squashGid; All maps every user; None: off"
    )
    no_squash_nid_lists: str = Field(default="", description="Lustre NIDs exempt from squashing, e.g. 10.0.0.4@tcp")
    squash_uid: int = Field(
        default=65534, ge=1, le=4294967295, description="UID squashed users get (65534: nobody); 1 to 2^32-1, not root"
    )
    squash_gid: int = Field(
        default=65534, ge=1, le=4294967295, description="GID squashed users get (65534: nogroup); 1 to 2^32-1, not root"
    )


class LustreEncryptionConfig(ConfigModel):
    """Customer-managed key; without it Azure encrypts with a platform-managed key."""

    key_url: str = Field(
        pattern=r"^https://[a-z0-9-]+\.vault\.azure\.net/keys/[^/]+(/[0-9a-f]{32})?$",
        description="Key Vault key URL, optionally with its version: https://<vault>.vault.azure.net/keys/<name>",
    )
    key_vault_id: ResourceId = Field(description="Resource ID of the Key Vault holding the key")
    user_assigned_identity_id: ResourceId = Field(description="Identity the filesystem reads the key as")


class BlobIntegrationConfig(ConfigModel):
    """The HSM storage account: cold data is imported from, and checkpoints exported to, Blob."""

    account_name: str = Field(pattern=r"^[a-z0-9]{3,24}$", description="Globally unique storage account name")
    sku: BlobAccountSku = Field(
        default="Standard_LRS", description="Redundancy of the HSM account: LRS, or ZRS/GZRS to survive a zone loss"
    )
    data_container: str = Field(
        default="lustre-data",
        pattern=CONTAINER_NAME,
        description="Container the filesystem imports from and exports to (3-63 lowercase letters, digits, '-')",
    )
    logging_container: str = Field(
        default="lustre-logs",
        pattern=CONTAINER_NAME,
        description="Container for import/export job logs; must differ from dataContainer",
    )
    import_prefix: str = Field(default="/", pattern=BLOB_PREFIX, description="Blob path imported at creation")
    auto_export: bool = Field(default=False, description="Copy new and changed files back to Blob continuously")
    auto_export_prefix: str = Field(default="/", pattern=BLOB_PREFIX, description="Filesystem path auto-exported")
    soft_delete_days: int = Field(
        default=14, ge=1, le=365, description="Days deleted blobs and containers can be restored (Azure: 1-365)"
    )
    public_network_access: bool = Field(
        default=True,
        description="false: the account is reachable only through a private endpoint in the private-endpoints subnet",
    )
    import_job: LustreImportJobConfig | None = Field(
        default=None,
        description="A one-off import from Blob on this deploy (restore checkpoints). Azure runs one Blob job per "
        "filesystem at a time, so with autoExport on the deploy pauses auto-export (admin status Disable) before the "
        "import starts; the next deploy without importJob resumes it",
    )

    @model_validator(mode="after")
    def _check_containers(self) -> BlobIntegrationConfig:
        if self.data_container == self.logging_container:
            raise field_error("loggingContainer", self.logging_container, "must differ from dataContainer")
        return self


class LustreTrainingConfig(ConfigModel):
    """Where training pods find the filesystem: a namespace and a ReadWriteMany claim."""

    namespace: str = Field(
        default="training",
        pattern=K8S_NAME,
        max_length=63,
        description="Namespace of the claim (a Kubernetes name: at most 63 lowercase letters, digits, '-')",
    )
    storage_class_name: str = Field(
        default="azurelustre-static",
        pattern=K8S_NAME,
        max_length=63,
        description="StorageClass pointing at this filesystem (a Kubernetes name, at most 63)",
    )
    pvc_name: str = Field(
        default="lustre-pvc",
        pattern=K8S_NAME,
        max_length=63,
        description="ReadWriteMany claim training pods mount (a Kubernetes name, at most 63)",
    )
    pvc_size_gi: int = Field(default=100, ge=1, description="Nominal; every claim sees the whole filesystem")
    verification_pod: bool = Field(default=False, description="A pod that mounts the claim at /mnt/lustre")
    verification_image: str = Field(default="ubuntu:24.04", description="Image of the verification pod")


class LustreConfig(ConfigModel):
    """One Azure Managed Lustre filesystem; it cannot be resized and is billed for its full size."""

    enabled: bool = Field(
        default=True, description="false: keep the settings but create no filesystem (it is billed in full)"
    )
    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,78}[A-Za-z0-9]$",
        description="Filesystem name: 2-80 letters, digits, '_' or '-', alphanumeric at both ends",
    )
    sku: AmlfsSkuName = Field(description="Throughput tier (MB/s per TiB); sets the size range and step")
    capacity_tib: int = Field(
        alias="capacityTiB", ge=1, description="Capacity in TiB: a multiple of the SKU's step, min..max"
    )
    zone: Zone = Field(description="The filesystem lives in one zone; put the GPU pools near it")
    maintenance_window: MaintenanceWindowConfig = Field(
        description="Weekly 30-minute window Azure patches the filesystem in (required)"
    )
    root_squash: RootSquashConfig = Field(
        default_factory=RootSquashConfig, description="How root on a client maps on the filesystem"
    )
    encryption: LustreEncryptionConfig | None = Field(
        default=None, description="Customer-managed key (only at creation); unset: platform-managed key"
    )
    throughput_target_mbps: int | None = Field(
        default=None, alias="throughputTargetMBps", ge=1, description="Reject sizes below this MB/s"
    )
    hpc_cache_provider_object_id: Guid = Field(
        description="Object ID of the 'HPC Cache Resource Provider' service principal in this tenant"
    )
    role_assignment_propagation_seconds: int = Field(
        default=300,
        ge=0,
        le=1800,
        description="Wait after that principal's grants on the HSM account are first created, before the "
        "filesystem: creation fails if the grants have not taken effect, which Azure Managed Lustre documents can "
        "take up to five minutes; 0 skips the wait; at most 30 minutes",
    )
    blob: BlobIntegrationConfig = Field(description="The Blob (HSM) storage account behind the filesystem")
    training: LustreTrainingConfig = Field(
        default_factory=LustreTrainingConfig, description="Namespace, storage class and claim for training pods"
    )

    @property
    def sku_rules(self) -> AmlfsSku:
        return AMLFS_SKUS[self.sku]

    @property
    def throughput_mbps(self) -> int:
        return self.sku_rules.throughput_mbps(self.capacity_tib)

    @model_validator(mode="after")
    def _check_size(self) -> LustreConfig:
        rules = self.sku_rules
        if not rules.allows(self.capacity_tib):
            raise field_error(
                "capacityTiB",
                self.capacity_tib,
                f"{self.sku} takes {rules.min_tib}-{rules.max_tib} TiB in steps of {rules.step_tib} TiB",
            )
        target = self.throughput_target_mbps
        if target is not None and self.throughput_mbps < target:
            size = rules.smallest_size_for(target)
            others = [
                f"{name} at {s} TiB"
                for name, sku in AMLFS_SKUS.items()
                if name != self.sku and (s := sku.smallest_size_for(target)) is not None
            ]
            fix = (
                f"capacityTiB {size} would"
                if size is not None
                else f"no {self.sku} size can; "
                + (f"try {', '.join(others)}" if others else "no single filesystem can")
            )
            raise field_error(
                "capacityTiB",
                self.capacity_tib,
                f"gives {self.throughput_mbps} MB/s, below throughputTargetMBps {target}; {fix}",
            )
        return self


class BlobClassConfig(ConfigModel):
    """One Blob CSI StorageClass (dynamically provisioned containers)."""

    enabled: bool = Field(default=True, description="false: do not create this class")
    name: str = Field(pattern=K8S_NAME, max_length=63, description="StorageClass name (a Kubernetes name, at most 63)")
    sku_name: BlobClassSku = Field(description="Storage account SKU of provisioned volumes")
    protocol: BlobProtocol = Field(
        default="fuse2", description="How pods mount the container: fuse2 (BlobFuse2) or nfs (NFSv3)"
    )


def _standard_class() -> BlobClassConfig:
    return BlobClassConfig(name="blob-standard", sku_name="Standard_LRS", protocol="fuse2")


def _premium_class() -> BlobClassConfig:
    return BlobClassConfig(name="blob-premium", sku_name="Premium_LRS", protocol="fuse2")


class BlobClassesConfig(ConfigModel):
    """Blob CSI classes: standard for bulk, cheap data; premium for small files and many transactions."""

    standard: BlobClassConfig = Field(
        default_factory=_standard_class, description="Standard_* class (default blob-standard, Standard_LRS)"
    )
    premium: BlobClassConfig = Field(
        default_factory=_premium_class, description="Premium_* class (default blob-premium, Premium_LRS)"
    )

    @model_validator(mode="after")
    def _check_tiers(self) -> BlobClassesConfig:
        if not self.standard.sku_name.startswith("Standard"):
            raise field_error("standard.skuName", self.standard.sku_name, "must be a Standard_* SKU")
        if not self.premium.sku_name.startswith("Premium"):
            raise field_error("premium.skuName", self.premium.sku_name, "must be a Premium_* SKU")
        if self.standard.name == self.premium.name:
            raise field_error("premium.name", self.premium.name, "must differ from standard.name")
        return self

    @property
    def read_write_many_class(self) -> str | None:
        """The class a cache many pods read claims (a served model's weights): the premium class the stack creates
        (a start reads many shards), else its standard one; None when neither is created."""
        for blob_class in (self.premium, self.standard):
            if blob_class.enabled:
                return blob_class.name
        return None


ZoneRedundantDiskSku = Literal["Premium_ZRS", "StandardSSD_ZRS"]


class ZoneRedundantDiskClassConfig(ConfigModel):
    """An Azure Disk class pinned to ZRS, so a pod's disk follows it to a node in any zone."""

    enabled: bool = Field(default=False, description="prod turns it on; dev's single-zone pools do not need it")
    name: str = Field(
        default="managed-csi-premium-zrs",
        pattern=K8S_NAME,
        max_length=63,
        description="StorageClass name (a Kubernetes name, at most 63)",
    )
    sku_name: ZoneRedundantDiskSku = Field(
        default="Premium_ZRS", description="Premium_ZRS (SSD, production) or StandardSSD_ZRS (cheaper)"
    )


class DiskClassesConfig(ConfigModel):
    """Azure Disk classes the platform adds to AKS's built-in ones (managed-csi, managed-csi-premium)."""

    zone_redundant: ZoneRedundantDiskClassConfig = Field(
        default_factory=ZoneRedundantDiskClassConfig, description="A Premium or Standard SSD ZRS disk class"
    )


class StorageConfig(ConfigModel):
    """Shared storage for training: Lustre and NetApp Files, Blob classes for bulk data, ZRS disks."""

    lustre: LustreConfig | None = Field(default=None, description="Absent or enabled: false plans without Lustre")
    blob_classes: BlobClassesConfig = Field(
        default_factory=BlobClassesConfig, description="Blob CSI storage classes, standard and premium"
    )
    disk_classes: DiskClassesConfig = Field(
        default_factory=DiskClassesConfig, description="Azure Disk classes added to AKS's built-in ones"
    )
    netapp_files: NetAppFilesConfig = Field(
        default_factory=NetAppFilesConfig, description="Azure NetApp Files (NFSv4.1); off unless enabled"
    )
