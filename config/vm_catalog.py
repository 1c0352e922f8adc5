"""Local disk facts of the VM sizes node pools use, for the ephemeral OS disk rule.

AKS puts an ephemeral OS disk on the size's cache disk or, on sizes without one, on its temp
(resource) disk; `osDiskSizeGb` must fit there. None of the sizes listed here or in the GPU
catalog has a dedicated cache disk, so the temp disk is the limit.

CPU sizes: the "Local storage" table of the Ddsv5 size page,
https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/ddsv5-series
(MicrosoftDocs/azure-compute-docs, articles/virtual-machines/sizes/general-purpose/ddsv5-series.md).
"""

from __future__ import annotations

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


def ephemeral_os_disk_limit_gib(vm_size: str) -> int | None:
    """The largest ephemeral OS disk the size takes (its temp disk), or None when the size is not catalogued."""
    gpu = gpu_sku(vm_size)
    if gpu is not None:
        return gpu.temp_disk_gib
    return _CPU_BY_LOWER.get(vm_size.lower())
