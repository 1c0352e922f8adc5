"""Azure NetApp Files: one account, one capacity pool, NFSv4.1 volumes mounted through static PVs.

Limits as Microsoft documents them (checked 2026-12-02):
- https://learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-resource-limits
  (MicrosoftDocs/azure-docs articles/azure-netapp-files/azure-netapp-files-resource-limits.md, ms.date 06/10/2025):
  pool 1 TiB (all volumes on Standard network features) to 2,048 TiB; regular volume 50 GiB to 100 TiB;
  Flexible pool throughput 128 MiB/s to 5 x 128 MiB/s per TiB of pool; 5 export policy rules per volume.
- https://learn.microsoft.com/azure/azure-netapp-files/azure-netapp-files-cost-model: pools change in 1 TiB steps.
- https://learn.microsoft.com/azure/azure-netapp-files/troubleshoot-latency (ms.date 08/05/2026): MiB/s per TiB
  of volume quota by service level (auto QoS) and the NFSv4.1 mount options.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..errors import field_error

NetAppServiceLevel = Literal["Standard", "Premium", "Ultra", "Flexible"]

GIB = 1024**3
TIB = 1024**4
POOL_MIN_TIB = 1  # with Standard network features on every volume, which the platform always sets
POOL_MAX_TIB = 2048
VOLUME_MIN_GIB = 50
VOLUME_MAX_GIB = 100 * 1024  # regular volumes; large volumes (50 TiB+) are a separate kind, not built here
# Auto QoS: a volume's throughput ceiling is its quota x this rate.
MIBPS_PER_TIB: dict[str, int] = {"Standard": 16, "Premium": 64, "Ultra": 128}
FLEXIBLE_MIN_MIBPS = 128
FLEXIBLE_MAX_MIBPS_PER_TIB = 5 * 128

K8S_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Volume names become Kubernetes names too, so the Azure rule is narrowed to lowercase DNS labels.
VOLUME_NAME = r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$"
# Azure: the creation token (export path) starts with a letter; letters, digits and hyphens; at most 80.
FILE_PATH = r"^[a-zA-Z][a-zA-Z0-9-]{0,79}$"
# Azure: alphanumerics, underscores and hyphens, alphanumeric first; narrowed to lowercase for readable IDs.
ACCOUNT_OR_POOL_NAME = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class NetAppVolumeConfig(ConfigModel):
    """One NFSv4.1 volume, exported to the node subnet and bound to one ReadWriteMany claim."""

    name: str = Field(
        pattern=VOLUME_NAME,
        description="Volume name; also names its PersistentVolume (netapp-<name>) and claim (<name>)",
    )
    size_gib: int = Field(
        default=1024,
        alias="sizeGiB",
        ge=VOLUME_MIN_GIB,
        le=VOLUME_MAX_GIB,
        description=(
            "Quota in GiB, 50-102400 (Azure's regular-volume bounds). The volumes' sum must fit the pool; "
            "with auto QoS the throughput ceiling grows with it"
        ),
    )
    file_path: str | None = Field(
        default=None,
        pattern=FILE_PATH,
        description="Export path (Azure creationToken), unique per subscription and region; defaults to the name",
    )
    throughput_mibps: int | None = Field(
        default=None,
        alias="throughputMiBps",
        ge=1,
        description="Flexible pools only (manual QoS): this volume's share of the pool throughput; "
        "default is an equal share",
    )
    root_access: bool = Field(
        default=False,
        description="false squashes root in pods to nobody (like Lustre's RootOnly squash); true lets root own data",
    )
    unix_permissions: str = Field(
        default="1777",
        pattern=r"^[0-7]{4}$",
        description="Mode of the volume's root directory: 1777 (sticky, world-writable) lets non-root pods "
        "write without a chown step and keeps them from deleting each other's files",
    )

    @property
    def export_path(self) -> str:
        return self.file_path or self.name


def _default_volumes() -> list[NetAppVolumeConfig]:
    return [NetAppVolumeConfig(name="shared")]


class NetAppFilesConfig(ConfigModel):
    """Azure NetApp Files: an NFS share for HPC tools and shared POSIX data, billed for the whole pool."""

    enabled: bool = Field(default=False, description="true builds the account, pool, volumes and claims")
    account_name: str = Field(default="anf-platform", pattern=ACCOUNT_OR_POOL_NAME, description="NetApp account")
    pool_name: str = Field(default="pool1", pattern=ACCOUNT_OR_POOL_NAME, description="Capacity pool")
    service_level: NetAppServiceLevel = Field(
        default="Premium",
        description="Standard 16, Premium 64, Ultra 128 MiB/s per TiB of volume quota; Flexible sets pool "
        "throughput apart from size (preview: register Microsoft.NetApp/ANFFlexibleServiceLevel first)",
    )
    size_tib: int = Field(
        default=POOL_MIN_TIB,
        alias="sizeTiB",
        ge=POOL_MIN_TIB,
        le=POOL_MAX_TIB,
        description="Pool size in whole TiB, 1-2048 (Azure's bounds and 1 TiB step); billed in full, "
        "resizable in place",
    )
    throughput_mibps: int | None = Field(
        default=None,
        alias="throughputMiBps",
        ge=1,
        description="Flexible only: pool throughput, 128 up to 640 MiB/s per TiB of pool (default 128)",
    )
    volumes: list[NetAppVolumeConfig] = Field(
        default_factory=_default_volumes,
        min_length=1,
        description="NFSv4.1 volumes carved from the pool, each with a claim; at least one (default: shared)",
    )
    namespace: str = Field(
        default="training",
        pattern=K8S_NAME,
        max_length=63,
        description="Namespace of the claims; shared with Lustre's training namespace when the names match",
    )
    storage_class_name: str = Field(
        default="netapp-files-static",
        pattern=K8S_NAME,
        max_length=63,
        description="Class binding the static PVs to their claims (no provisioner: Pulumi owns the volumes)",
    )
    verification_pod: bool = Field(default=True, description="A pod on the CPU pool that mounts every claim")
    verification_image: str = Field(default="ubuntu:24.04", description="Image of the verification pod")

    @property
    def flexible(self) -> bool:
        return self.service_level == "Flexible"

    @property
    def pool_throughput_mibps(self) -> int:
        """Throughput the pool provides: set for Flexible, quota-driven for the others."""
        if self.flexible:
            return self.throughput_mibps or FLEXIBLE_MIN_MIBPS
        return self.size_tib * MIBPS_PER_TIB[self.service_level]

    def volume_throughput_mibps(self, volume: NetAppVolumeConfig) -> float:
        """The volume's throughput ceiling in MiB/s."""
        if self.flexible:
            if volume.throughput_mibps is not None:
                return volume.throughput_mibps
            unset = [v for v in self.volumes if v.throughput_mibps is None]
            assigned = sum(v.throughput_mibps or 0 for v in self.volumes)
            return (self.pool_throughput_mibps - assigned) // len(unset)
        return volume.size_gib / 1024 * MIBPS_PER_TIB[self.service_level]

    @model_validator(mode="after")
    def _check_pool_and_volumes(self) -> NetAppFilesConfig:
        seen: dict[str, dict[str, int]] = {"name": {}, "filePath": {}}
        for i, volume in enumerate(self.volumes):
            for key, value in (("name", volume.name), ("filePath", volume.export_path)):
                if value in seen[key]:
                    raise field_error(
                        f"volumes[{i}].{key}", value, f"must be unique; volumes[{seen[key][value]}] has it"
                    )
                seen[key][value] = i
        pool_gib = self.size_tib * 1024
        for i, volume in enumerate(self.volumes):
            if volume.size_gib > pool_gib:
                raise field_error(
                    f"volumes[{i}].sizeGiB",
                    volume.size_gib,
                    f"must fit the capacity pool (sizeTiB {self.size_tib} = {pool_gib} GiB); grow sizeTiB or "
                    "shrink the volume",
                )
        total = sum(v.size_gib for v in self.volumes)
        if total > pool_gib:
            raise field_error(
                f"volumes[{len(self.volumes) - 1}].sizeGiB",
                self.volumes[-1].size_gib,
                f"the volumes need {total} GiB in all but the pool holds {pool_gib} GiB (sizeTiB {self.size_tib})",
            )
        self._check_throughput()
        return self

    def _check_throughput(self) -> None:
        if not self.flexible:
            if self.throughput_mibps is not None:
                raise field_error(
                    "throughputMiBps", self.throughput_mibps, "only a Flexible pool takes a throughput setting"
                )
            for i, volume in enumerate(self.volumes):
                if volume.throughput_mibps is not None:
                    raise field_error(
                        f"volumes[{i}].throughputMiBps",
                        volume.throughput_mibps,
                        f"only volumes in a Flexible pool take one; {self.service_level} derives it from sizeGiB",
                    )
            return
        ceiling = FLEXIBLE_MAX_MIBPS_PER_TIB * self.size_tib
        pool = self.pool_throughput_mibps
        if not FLEXIBLE_MIN_MIBPS <= pool <= ceiling:
            raise field_error(
                "throughputMiBps",
                pool,
                f"a Flexible pool of {self.size_tib} TiB takes {FLEXIBLE_MIN_MIBPS}-{ceiling} MiB/s "
                f"(640 MiB/s per TiB)",
            )
        assigned = sum(v.throughput_mibps or 0 for v in self.volumes)
        unset = sum(1 for v in self.volumes if v.throughput_mibps is None)
        if assigned > pool or (unset and pool - assigned < unset):
            raise field_error(
                "volumes",
                f"{assigned} MiB/s assigned",
                f"the volumes' throughputMiBps must fit the pool's {pool} MiB/s, leaving at least 1 MiB/s "
                "for each volume without one",
            )
