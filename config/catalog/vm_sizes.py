"""CPU VM sizes the system and CPU pools accept, with the local disk facts of every pool size.

The catalog covers the D, E and F families of the v5 and v6 generations: general purpose
(D, Dl: 4 and 2 GiB per vCPU), memory optimised (E: 8 GiB per vCPU) and compute optimised
(F v6). A size outside it is rejected with the closest catalogued names, so a typo such as
`Standard_D4dsv5` fails in the config instead of in Azure's API halfway through a deploy. Add a
row (with its source) to accept another size.

Source: the "Sizes in series" tables (Basics: vCPUs, memory; Local storage: temp disks) and the
"Ephemeral OS Disk" feature row of each series page in MicrosoftDocs/azure-compute-docs,
articles/virtual-machines/sizes/{general-purpose,memory-optimized,compute-optimized}/<series>-series.md
(https://learn.microsoft.com/azure/virtual-machines/sizes/overview), read 2026-12-02.

Ephemeral OS disks: AKS puts one on the size's local temp disk (none of these sizes has a cache
disk), so `osDiskSizeGb` must fit there. v6 sizes have NVMe temp disks, several on larger sizes;
AKS places the OS disk on one NVMe drive (azure-aks-docs, best-practices-storage-nvme.md,
"Ephemeral NVMe data disks with ephemeral OS disks"), so one drive is the limit.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from .gpu_sizes import gpu_sku


@dataclass(frozen=True)
class CpuSize:
    """One CPU VM size: what it offers a node pool."""

    vcpus: int
    memory_gib: int
    temp_disks: int
    """Local temp disks (0: the size has no local storage)."""
    temp_disk_gib: int
    """Size of each temp disk (the series tables list it per disk: total = temp_disks x temp_disk_gib)."""
    ephemeral_os_disk: bool
    """The series page lists Ephemeral OS Disk as supported."""

    @property
    def ephemeral_os_disk_limit_gib(self) -> int | None:
        """The largest ephemeral OS disk the size takes (one temp disk), None when it takes none."""
        return self.temp_disk_gib if self.ephemeral_os_disk and self.temp_disks else None


def _size(
    name: str,
    vcpus: int,
    memory_gib: int,
    temp_disks: int = 0,
    temp_disk_gib: int = 0,
    ephemeral_os_disk: bool | None = None,
) -> tuple[str, CpuSize]:
    # Every series with a local disk supports ephemeral OS disks except Edsv6 (passed explicitly).
    supported = temp_disks > 0 if ephemeral_os_disk is None else ephemeral_os_disk
    return name, CpuSize(vcpus, memory_gib, temp_disks, temp_disk_gib, supported)


CPU_SIZES: dict[str, CpuSize] = dict(
    [
        # Dv5, Dsv5 (general-purpose/dv5-series, dsv5-series): no local disk
        _size("Standard_D2_v5", 2, 8),
        _size("Standard_D4_v5", 4, 16),
        _size("Standard_D8_v5", 8, 32),
        _size("Standard_D16_v5", 16, 64),
        _size("Standard_D32_v5", 32, 128),
        _size("Standard_D48_v5", 48, 192),
        _size("Standard_D64_v5", 64, 256),
        _size("Standard_D96_v5", 96, 384),
        _size("Standard_D2s_v5", 2, 8),
        _size("Standard_D4s_v5", 4, 16),
        _size("Standard_D8s_v5", 8, 32),
        _size("Standard_D16s_v5", 16, 64),
        _size("Standard_D32s_v5", 32, 128),
        _size("Standard_D48s_v5", 48, 192),
        _size("Standard_D64s_v5", 64, 256),
        _size("Standard_D96s_v5", 96, 384),
        # Ddv5, Ddsv5, Dadsv5 (ddv5-, ddsv5-, dadsv5-series): one SCSI temp disk
        _size("Standard_D2d_v5", 2, 8, 1, 75),
        _size("Standard_D4d_v5", 4, 16, 1, 150),
        _size("Standard_D8d_v5", 8, 32, 1, 300),
        _size("Standard_D16d_v5", 16, 64, 1, 600),
        _size("Standard_D32d_v5", 32, 128, 1, 1200),
        _size("Standard_D48d_v5", 48, 192, 1, 1800),
        _size("Standard_D64d_v5", 64, 256, 1, 2400),
        _size("Standard_D96d_v5", 96, 384, 1, 3600),
        _size("Standard_D2ds_v5", 2, 8, 1, 75),
        _size("Standard_D4ds_v5", 4, 16, 1, 150),
        _size("Standard_D8ds_v5", 8, 32, 1, 300),
        _size("Standard_D16ds_v5", 16, 64, 1, 600),
        _size("Standard_D32ds_v5", 32, 128, 1, 1200),
        _size("Standard_D48ds_v5", 48, 192, 1, 1800),
        _size("Standard_D64ds_v5", 64, 256, 1, 2400),
        _size("Standard_D96ds_v5", 96, 384, 1, 3600),
        _size("Standard_D2ads_v5", 2, 8, 1, 75),
        _size("Standard_D4ads_v5", 4, 16, 1, 150),
        _size("Standard_D8ads_v5", 8, 32, 1, 300),
        _size("Standard_D16ads_v5", 16, 64, 1, 600),
        _size("Standard_D32ads_v5", 32, 128, 1, 1200),
        _size("Standard_D48ads_v5", 48, 192, 1, 1800),
        _size("Standard_D64ads_v5", 64, 256, 1, 2400),
        _size("Standard_D96ads_v5", 96, 384, 1, 3600),
        # Dasv5 (dasv5-series): no local disk
        _size("Standard_D2as_v5", 2, 8),
        _size("Standard_D4as_v5", 4, 16),
        _size("Standard_D8as_v5", 8, 32),
        _size("Standard_D16as_v5", 16, 64),
        _size("Standard_D32as_v5", 32, 128),
        _size("Standard_D48as_v5", 48, 192),
        _size("Standard_D64as_v5", 64, 256),
        _size("Standard_D96as_v5", 96, 384),
        # Dlsv5 (dlsv5-series): no local disk; Dldsv5 (dldsv5-series): one temp disk
        _size("Standard_D2ls_v5", 2, 4),
        _size("Standard_D4ls_v5", 4, 8),
        _size("Standard_D8ls_v5", 8, 16),
        _size("Standard_D16ls_v5", 16, 32),
        _size("Standard_D32ls_v5", 32, 64),
        _size("Standard_D48ls_v5", 48, 96),
        _size("Standard_D64ls_v5", 64, 128),
        _size("Standard_D96ls_v5", 96, 192),
        _size("Standard_D2lds_v5", 2, 4, 1, 75),
        _size("Standard_D4lds_v5", 4, 8, 1, 150),
        _size("Standard_D8lds_v5", 8, 16, 1, 300),
        _size("Standard_D16lds_v5", 16, 32, 1, 600),
        _size("Standard_D32lds_v5", 32, 64, 1, 1200),
        _size("Standard_D48lds_v5", 48, 96, 1, 1800),
        _size("Standard_D64lds_v5", 64, 128, 1, 2400),
        _size("Standard_D96lds_v5", 96, 192, 1, 3600),
        # Esv5, Easv5 (memory-optimized/esv5-, easv5-series): no local disk
        _size("Standard_E2s_v5", 2, 16),
        _size("Standard_E4s_v5", 4, 32),
        _size("Standard_E8s_v5", 8, 64),
        _size("Standard_E16s_v5", 16, 128),
        _size("Standard_E20s_v5", 20, 160),
        _size("Standard_E32s_v5", 32, 256),
        _size("Standard_E48s_v5", 48, 384),
        _size("Standard_E64s_v5", 64, 512),
        _size("Standard_E96s_v5", 96, 672),
        _size("Standard_E104is_v5", 104, 672),
        _size("Standard_E2as_v5", 2, 16),
        _size("Standard_E4as_v5", 4, 32),
        _size("Standard_E8as_v5", 8, 64),
        _size("Standard_E16as_v5", 16, 128),
        _size("Standard_E20as_v5", 20, 160),
        _size("Standard_E32as_v5", 32, 256),
        _size("Standard_E48as_v5", 48, 384),
        _size("Standard_E64as_v5", 64, 512),
        _size("Standard_E96as_v5", 96, 672),
        _size("Standard_E112ias_v5", 112, 672),
        # Edsv5, Eadsv5 (edsv5-, eadsv5-series): one temp disk
        _size("Standard_E2ds_v5", 2, 16, 1, 75),
        _size("Standard_E4ds_v5", 4, 32, 1, 150),
        _size("Standard_E8ds_v5", 8, 64, 1, 300),
        _size("Standard_E16ds_v5", 16, 128, 1, 600),
        _size("Standard_E20ds_v5", 20, 160, 1, 750),
        _size("Standard_E32ds_v5", 32, 256, 1, 1200),
        _size("Standard_E48ds_v5", 48, 384, 1, 1800),
        _size("Standard_E64ds_v5", 64, 512, 1, 2400),
        _size("Standard_E96ds_v5", 96, 672, 1, 3600),
        _size("Standard_E104ids_v5", 104, 672, 1, 3800),
        _size("Standard_E2ads_v5", 2, 16, 1, 75),
        _size("Standard_E4ads_v5", 4, 32, 1, 150),
        _size("Standard_E8ads_v5", 8, 64, 1, 300),
        _size("Standard_E16ads_v5", 16, 128, 1, 600),
        _size("Standard_E20ads_v5", 20, 160, 1, 750),
        _size("Standard_E32ads_v5", 32, 256, 1, 1200),
        _size("Standard_E48ads_v5", 48, 384, 1, 1800),
        _size("Standard_E64ads_v5", 64, 512, 1, 2400),
        _size("Standard_E96ads_v5", 96, 672, 1, 3600),
        _size("Standard_E112iads_v5", 112, 672, 1, 3800),
        # Dsv6 (dsv6-series), Dasv6 (dasv6-series), Dlsv6 (dlsv6-series): no local disk
        _size("Standard_D2s_v6", 2, 8),
        _size("Standard_D4s_v6", 4, 16),
        _size("Standard_D8s_v6", 8, 32),
        _size("Standard_D16s_v6", 16, 64),
        _size("Standard_D32s_v6", 32, 128),
        _size("Standard_D48s_v6", 48, 192),
        _size("Standard_D64s_v6", 64, 256),
        _size("Standard_D96s_v6", 96, 384),
        _size("Standard_D128s_v6", 128, 512),
        _size("Standard_D192s_v6", 192, 768),
        _size("Standard_D2as_v6", 2, 8),
        _size("Standard_D4as_v6", 4, 16),
        _size("Standard_D8as_v6", 8, 32),
        _size("Standard_D16as_v6", 16, 64),
        _size("Standard_D32as_v6", 32, 128),
        _size("Standard_D48as_v6", 48, 192),
        _size("Standard_D64as_v6", 64, 256),
        _size("Standard_D96as_v6", 96, 384),
        _size("Standard_D2ls_v6", 2, 4),
        _size("Standard_D4ls_v6", 4, 8),
        _size("Standard_D8ls_v6", 8, 16),
        _size("Standard_D16ls_v6", 16, 32),
        _size("Standard_D32ls_v6", 32, 64),
        _size("Standard_D48ls_v6", 48, 96),
        _size("Standard_D64ls_v6", 64, 128),
        _size("Standard_D96ls_v6", 96, 192),
        _size("Standard_D128ls_v6", 128, 256),
        # Ddsv6, Dadsv6, Dldsv6 (ddsv6-, dadsv6-, dldsv6-series): NVMe temp disks, count x GiB each
        _size("Standard_D2ds_v6", 2, 8, 1, 110),
        _size("Standard_D4ds_v6", 4, 16, 1, 220),
        _size("Standard_D8ds_v6", 8, 32, 1, 440),
        _size("Standard_D16ds_v6", 16, 64, 2, 440),
        _size("Standard_D32ds_v6", 32, 128, 4, 440),
        _size("Standard_D48ds_v6", 48, 192, 6, 440),
        _size("Standard_D64ds_v6", 64, 256, 4, 880),
        _size("Standard_D96ds_v6", 96, 384, 6, 880),
        _size("Standard_D128ds_v6", 128, 512, 4, 1760),
        _size("Standard_D2ads_v6", 2, 8, 1, 110),
        _size("Standard_D4ads_v6", 4, 16, 1, 220),
        _size("Standard_D8ads_v6", 8, 32, 1, 440),
        _size("Standard_D16ads_v6", 16, 64, 2, 440),
        _size("Standard_D32ads_v6", 32, 128, 4, 440),
        _size("Standard_D48ads_v6", 48, 192, 6, 440),
        _size("Standard_D64ads_v6", 64, 256, 4, 880),
        _size("Standard_D96ads_v6", 96, 384, 6, 880),
        _size("Standard_D2lds_v6", 2, 4, 1, 110),
        _size("Standard_D4lds_v6", 4, 8, 1, 220),
        _size("Standard_D8lds_v6", 8, 16, 1, 440),
        _size("Standard_D16lds_v6", 16, 32, 2, 440),
        _size("Standard_D32lds_v6", 32, 64, 4, 440),
        _size("Standard_D48lds_v6", 48, 96, 6, 440),
        _size("Standard_D64lds_v6", 64, 128, 4, 880),
        _size("Standard_D96lds_v6", 96, 192, 6, 880),
        _size("Standard_D128lds_v6", 128, 256, 4, 1760),
        # Esv6 (esv6-series), Easv6 (easv6-series): no local disk
        _size("Standard_E2s_v6", 2, 16),
        _size("Standard_E4s_v6", 4, 32),
        _size("Standard_E8s_v6", 8, 64),
        _size("Standard_E16s_v6", 16, 128),
        _size("Standard_E20s_v6", 20, 160),
        _size("Standard_E32s_v6", 32, 256),
        _size("Standard_E48s_v6", 48, 384),
        _size("Standard_E64s_v6", 64, 512),
        _size("Standard_E96s_v6", 96, 768),
        _size("Standard_E128s_v6", 128, 1024),
        _size("Standard_E192is_v6", 192, 1832),
        _size("Standard_E2as_v6", 2, 16),
        _size("Standard_E4as_v6", 4, 32),
        _size("Standard_E8as_v6", 8, 64),
        _size("Standard_E16as_v6", 16, 128),
        _size("Standard_E20as_v6", 20, 160),
        _size("Standard_E32as_v6", 32, 256),
        _size("Standard_E48as_v6", 48, 384),
        _size("Standard_E64as_v6", 64, 512),
        _size("Standard_E96as_v6", 96, 672),
        # Edsv6 (edsv6-series), Eadsv6 (eadsv6-series): NVMe temp disks, count x GiB each
        _size("Standard_E2ds_v6", 2, 16, 1, 110, ephemeral_os_disk=False),
        _size("Standard_E4ds_v6", 4, 32, 1, 220, ephemeral_os_disk=False),
        _size("Standard_E8ds_v6", 8, 64, 1, 440, ephemeral_os_disk=False),
        _size("Standard_E16ds_v6", 16, 128, 2, 440, ephemeral_os_disk=False),
        _size("Standard_E20ds_v6", 20, 160, 2, 550, ephemeral_os_disk=False),
        _size("Standard_E32ds_v6", 32, 256, 4, 440, ephemeral_os_disk=False),
        _size("Standard_E48ds_v6", 48, 384, 6, 440, ephemeral_os_disk=False),
        _size("Standard_E64ds_v6", 64, 512, 4, 880, ephemeral_os_disk=False),
        _size("Standard_E96ds_v6", 96, 768, 6, 880, ephemeral_os_disk=False),
        _size("Standard_E128ds_v6", 128, 1024, 4, 1760, ephemeral_os_disk=False),
        _size("Standard_E192ids_v6", 192, 1832, 6, 1760, ephemeral_os_disk=False),
        _size("Standard_E2ads_v6", 2, 16, 1, 110),
        _size("Standard_E4ads_v6", 4, 32, 1, 220),
        _size("Standard_E8ads_v6", 8, 64, 1, 440),
        _size("Standard_E16ads_v6", 16, 128, 2, 440),
        _size("Standard_E20ads_v6", 20, 160, 2, 550),
        _size("Standard_E32ads_v6", 32, 256, 4, 440),
        _size("Standard_E48ads_v6", 48, 384, 6, 440),
        _size("Standard_E64ads_v6", 64, 512, 4, 880),
        _size("Standard_E96ads_v6", 96, 672, 6, 880),
        # Fasv6, Falsv6, Famsv6 (compute-optimized/fasv6-, falsv6-, famsv6-series): no local disk
        _size("Standard_F2as_v6", 2, 8),
        _size("Standard_F4as_v6", 4, 16),
        _size("Standard_F8as_v6", 8, 32),
        _size("Standard_F16as_v6", 16, 64),
        _size("Standard_F32as_v6", 32, 128),
        _size("Standard_F48as_v6", 48, 192),
        _size("Standard_F64as_v6", 64, 256),
        _size("Standard_F2als_v6", 2, 4),
        _size("Standard_F4als_v6", 4, 8),
        _size("Standard_F8als_v6", 8, 16),
        _size("Standard_F16als_v6", 16, 32),
        _size("Standard_F32als_v6", 32, 64),
        _size("Standard_F48als_v6", 48, 96),
        _size("Standard_F64als_v6", 64, 128),
        _size("Standard_F2ams_v6", 2, 16),
        _size("Standard_F4ams_v6", 4, 32),
        _size("Standard_F8ams_v6", 8, 64),
        _size("Standard_F16ams_v6", 16, 128),
        _size("Standard_F32ams_v6", 32, 256),
        _size("Standard_F48ams_v6", 48, 384),
        _size("Standard_F64ams_v6", 64, 512),
    ]
)

_CPU_BY_LOWER = {size.lower(): (size, row) for size, row in CPU_SIZES.items()}


def cpu_size(vm_size: str) -> CpuSize | None:
    """The catalog row of a CPU size (Azure treats size names case-insensitively), or None."""
    found = _CPU_BY_LOWER.get(vm_size.lower())
    return found[1] if found else None


def closest_cpu_sizes(vm_size: str, n: int = 3) -> list[str]:
    """Catalogued CPU sizes whose names are closest to `vm_size` (for "did you mean")."""
    matches = difflib.get_close_matches(vm_size.lower(), list(_CPU_BY_LOWER), n=n, cutoff=0.6)
    return [_CPU_BY_LOWER[m][0] for m in matches]


def ephemeral_os_disk_limit_gib(vm_size: str) -> int | None:
    """The largest ephemeral OS disk a catalogued size (GPU or CPU) takes, or None when it takes none."""
    gpu = gpu_sku(vm_size)
    if gpu is not None:
        return gpu.temp_disk_gib
    cpu = cpu_size(vm_size)
    return cpu.ephemeral_os_disk_limit_gib if cpu is not None else None


# Azure's regional vCPU quota family of a size is its series name in capitals: Standard_D4ds_v5 counts
# against standardDDSv5Family, Standard_E8s_v6 against standardESv6Family (the resource SKUs API `family`
# field; e.g. microsoft/aspire AksNodeVmSizes.cs lists the pairs).
_SERIES = re.compile(r"^Standard_(?P<family>[A-Z])(?P<vcpus>\d+)(?P<features>[a-z]*)_(?P<version>v\d+)$")


def vcpus_and_quota_family(vm_size: str) -> tuple[int, str] | None:
    """(vCPUs, regional quota family) of a catalogued size, or None when the catalog lacks it."""
    gpu = gpu_sku(vm_size)
    if gpu is not None:
        return gpu.vcpus, gpu.quota_family
    found = _CPU_BY_LOWER.get(vm_size.lower())
    match = _SERIES.match(found[0]) if found else None
    if found is None or match is None:
        return None
    return found[1].vcpus, f"standard{match['family']}{match['features'].upper()}{match['version']}Family"
