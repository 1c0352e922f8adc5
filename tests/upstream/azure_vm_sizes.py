"""What Azure, AKS and NVIDIA say of the VM sizes a pool may use, for the simulators, never read from config/catalog:
a wrong catalog row then shows up as a disagreement instead of agreeing with itself.

- vCPUs, memory and GPUs per VM: the cluster autoscaler's static list, kubernetes/autoscaler tag
  cluster-autoscaler-1.36.1 cloudprovider/azure/azure_instance_types.go (excerpted in
  tests/fixtures/autoscaler/azure_instance_types.json). ND GB200 v6 and ND GB300 v6 are not in that list: 4 GPUs per
  VM, their size pages (learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-gb200-v6-series and
  nd-gb300-v6-series).
- Vendor: 8 AMD Instinct MI300X on ND MI300X v5 (nd-mi300x-v5-series); every other GPU size's GPUs are NVIDIA's.
- Host: the ND GB200 v6 and GB300 v6 hosts are NVIDIA Grace, Arm64 (their size pages); the rest are x86-64.
- NVLink across VMs: a GB200 or GB300 NVL72 rack joins 72 GPUs, 18 VMs of 4, in one NVLink domain (same pages).
- MIG: AKS names a profile by its compute slices (gpuInstanceProfile MIG1g ... MIG7g, azure-aks-docs
  articles/aks/gpu-multi-instance.md), and each GPU splits into 7, 3, 2, 1 and 1 instances of the 1g, 2g, 3g, 4g
  and 7g profiles (NVIDIA's MIG user guide, "Supported MIG Profiles": the same counts on A100, H100 and H200).

Sizes compare case-insensitively, as Azure compares them.
"""

from __future__ import annotations

import json
from pathlib import Path

INSTANCE_TYPES: dict[str, dict[str, int]] = json.loads(
    (Path(__file__).parent.parent / "fixtures" / "autoscaler" / "azure_instance_types.json").read_text()
)["sizes"]
GRACE_BLACKWELL_GPUS = {"standard_nd128isr_ndr_gb200_v6": 4, "standard_nd128isr_gb300_v6": 4}
NVL72_DOMAIN_GPUS = 72
AMD_SIZES = frozenset({"standard_nd96isr_mi300x_v5"})
MIG_INSTANCES_PER_GPU = {"MIG1g": 7, "MIG2g": 3, "MIG3g": 2, "MIG4g": 1, "MIG7g": 1}
_BY_LOWER = {name.lower(): row for name, row in INSTANCE_TYPES.items()}


def gpus_per_vm(vm_size: str) -> int:
    """GPUs of one VM of the size; 0 for a CPU size."""
    size = vm_size.lower()
    if size in GRACE_BLACKWELL_GPUS:
        return GRACE_BLACKWELL_GPUS[size]
    if size not in _BY_LOWER:
        raise KeyError(f"{vm_size}: not in azure_instance_types.json; add its row from azure_instance_types.go")
    return _BY_LOWER[size]["gpu"]


def gpu_vendor(vm_size: str) -> str | None:
    """`nvidia` or `amd` for a GPU size (the value AKS gives the node's accelerator label), None for a CPU size."""
    if not gpus_per_vm(vm_size):
        return None
    return "amd" if vm_size.lower() in AMD_SIZES else "nvidia"


def host_arch(vm_size: str) -> str:
    """The host's CPU architecture, as the node's `kubernetes.io/arch` label spells it."""
    return "arm64" if vm_size.lower() in GRACE_BLACKWELL_GPUS else "amd64"


def nvlink_across_vms(vm_size: str) -> bool:
    """The size's GPUs share an NVLink domain with other VMs' (a rack)."""
    size = vm_size.lower()
    return size in GRACE_BLACKWELL_GPUS and GRACE_BLACKWELL_GPUS[size] < NVL72_DOMAIN_GPUS
