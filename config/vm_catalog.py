"""Local disk facts of the VM sizes node pools use, for the ephemeral OS disk rule.

AKS puts an ephemeral OS disk on the size's cache disk or, on sizes without one, on its temp
(resource) disk; `osDiskSizeGb` must fit there. None of the sizes listed here or in the GPU
catalog has a dedicated cache disk, so the temp disk is the limit.

CPU sizes: the "Local storage" table of the Ddsv5 size page,
https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/ddsv5-series
(MicrosoftDocs/azure-compute-docs, articles/virtual-machines/sizes/general-purpose/ddsv5-series.md).
Their vCPUs are the digits of the size name (the same page's "Sizes in series" table), and every
Ddsv5 size counts against one regional vCPU quota family, `standardDDSv5Family` (resource SKUs
API family, as in microsoft/aspire AksNodeVmSizes.cs at 5bd693ae).
"""

from __future__ import annotations

import re

from .gpu_catalog import gpu_sku

CPU_TEMP_DISK_GIB: dict[str, int] = {
    "Standard_D2ds_v5": 75,
    "Standard_D4ds_v5": 150,
    "Standard_D8ds_v5": 300,
    "Standard_D16ds_v5": 600,
    "Standard_D32ds_v5": 1200,
    "Standard_D48ds_v5": 1800,
    "Standard_D64ds_v5": 2400,
    "Standard_D96ds_v5": 3600,
}

_CPU_BY_LOWER = {size.lower(): gib for size, gib in CPU_TEMP_DISK_GIB.items()}
CPU_QUOTA_FAMILY = "standardDDSv5Family"
_DDSV5 = re.compile(r"^standard_d(?P<vcpus>[0-9]+)ds_v5$")


def vcpus_and_quota_family(vm_size: str) -> tuple[int, str] | None:
    """(vCPUs, regional quota family) of a catalogued size, or None when the catalog lacks it."""
    gpu = gpu_sku(vm_size)
    if gpu is not None:
        return gpu.vcpus, gpu.quota_family
    if vm_size.lower() not in _CPU_BY_LOWER:
        return None
    match = _DDSV5.match(vm_size.lower())
    assert match is not None, f"{vm_size}: every catalogued CPU size is a Ddsv5 size"
    return int(match["vcpus"]), CPU_QUOTA_FAMILY


def ephemeral_os_disk_limit_gib(vm_size: str) -> int | None:
    """The largest ephemeral OS disk the size takes (its temp disk), or None when the size is not catalogued."""
    gpu = gpu_sku(vm_size)
    if gpu is not None:
        return gpu.temp_disk_gib
    return _CPU_BY_LOWER.get(vm_size.lower())
