"""The Azure GPU VM sizes the platform supports, with the facts the config rules need.

MIG profiles are the `gpuInstanceProfile` values AKS accepts for the size; sizes whose GPUs
AKS does not partition list none. AKS supports MIG on its A100, H100 and H200 sizes
(https://learn.microsoft.com/azure/aks/gpu-multi-instance, "Prerequisites and limitations",
page dated 2026-05-22), ND H100 v5 and ND H200 v5 included. AKS names a profile by its compute
slices only (`MIG1g` ... `MIG7g`, the GPUInstanceProfile enum of the AKS API); each maps to the
GPU's NVIDIA profile of that many slices (MIG1g on an A100 40GB is 7 x `1g.5gb`, the example in
the AKS page). Slice names per GPU: NVIDIA's "Supported MIG Profiles",
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html. NVIDIA's
extra 1g profiles with doubled memory (e.g. 1g.20gb on H100 80GB, 4 per GPU) have no AKS name.

InfiniBand sizes carry one IB fabric per scale set, so a pool of them must stay in one zone.

vCPUs and memory per size and the regional vCPU quota family each size counts against (the family name
`az vm list-usage` and the quota blade report) come from the resource SKUs API as generated into
Aspire's AKS node size list (microsoft/aspire src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs at
5bd693ae, published as https://aspire.dev/reference/api/csharp/aspire.hosting.azure.kubernetes/, read
2026-12-02). A Spot pool counts against the regional low-priority vCPU quota instead of the family.

Temp disk sizes (GiB) are the "Local storage" tables of Microsoft's size pages,
https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/<series>-series
(MicrosoftDocs/azure-compute-docs, articles/virtual-machines/sizes/gpu-accelerated/). None of
these sizes has a dedicated cache disk, so AKS places an ephemeral OS disk on the temp disk.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

MigProfile = str
GpuVendor = Literal["nvidia", "amd"]


@dataclass(frozen=True)
class MigSlice:
    """What one AKS gpuInstanceProfile makes of one GPU."""

    profile: MigProfile
    """The AKS name (`gpuInstanceProfile`), e.g. MIG1g."""
    nvidia_profile: str
    """NVIDIA's name of each instance, e.g. 1g.10gb (the mixed strategy's `nvidia.com/mig-<this>`)."""
    per_gpu: int
    """Instances each GPU is split into."""


def _mig_slices(one: int, two: int, three: int, four: int, seven: int) -> tuple[MigSlice, ...]:
    """The five AKS profiles of a GPU, from the memory (GB) of its 1g, 2g, 3g, 4g and 7g instances."""
    return (
        MigSlice("MIG1g", f"1g.{one}gb", 7),
        MigSlice("MIG2g", f"2g.{two}gb", 3),
        MigSlice("MIG3g", f"3g.{three}gb", 2),
        MigSlice("MIG4g", f"4g.{four}gb", 1),
        MigSlice("MIG7g", f"7g.{seven}gb", 1),
    )


A100_40GB_MIG = _mig_slices(5, 10, 20, 20, 40)
# A100 80GB and H100 80GB (SXM5 and PCIe) share the profile names.
GPU_80GB_MIG = _mig_slices(10, 20, 40, 40, 80)
H100_NVL_MIG = _mig_slices(12, 24, 47, 47, 94)
H200_MIG = _mig_slices(18, 35, 71, 71, 141)


@dataclass(frozen=True)
class GpuSku:
    family: str
    """Azure series name, as the quota blade lists it."""
    gpu_model: str
    """GPU model; also the `gpu-model` node label value."""
    gpus_per_vm: int
    gpu_memory_gib: int
    """Memory of one GPU."""
    infiniband: bool
    """Has an InfiniBand (RDMA) interconnect between VMs."""
    temp_disk_gib: int
    """Local temp (resource) disk: the most an ephemeral OS disk can take on this size."""
    vcpus: int
    """vCPUs of one VM: what it takes from the vCPU quota."""
    quota_family: str
    """Regional vCPU quota family the size counts against (Regular priority)."""
    mig: tuple[MigSlice, ...] = ()
    """MIG instance profiles AKS can apply to the pool and what each makes of a GPU (empty: no MIG)."""
    arch: str = "amd64"
    """CPU architecture of the host, as the node's `kubernetes.io/arch` label spells it."""
    nvlink_domain_gpus: int = 0
    """GPUs one NVLink domain spans across VMs (a rack); 0: NVLink stays inside the VM."""
    nvme_disk_gib: int = 0
    """Local NVMe capacity of one VM (all its NVMe disks), for caches; 0: none."""
    vendor: GpuVendor = "nvidia"
    """Who makes the GPUs: decides the driver, device plugin, extended resource and metrics exporter."""
    grid_driver: bool = False
    """The VM reaches its GPU through NVIDIA's GRID (vGPU guest) driver, which AKS installs in its "converged" build;
    NVIDIA's public driver containers are the passthrough (datacenter) driver, which does not install here."""
    memory_gib: int = 0
    """Memory of one VM (GiB): what the team quotas' default CPU memory is a share of."""

    def mig_slice(self, profile: MigProfile) -> MigSlice | None:
        return next((s for s in self.mig if s.profile == profile), None)

    @property
    def multi_node_nvlink(self) -> bool:
        """GPUs of several VMs share one NVLink domain: jobs reach it through a ComputeDomain (NVIDIA's DRA driver)."""
        return self.nvlink_domain_gpus > self.gpus_per_vm


def _t4(gpus: int, vcpus: int, memory_gib: int, temp_disk_gib: int) -> GpuSku:
    return GpuSku(
        "NCasT4_v3", "T4", gpus, 16, False, temp_disk_gib, vcpus, "standardNCASv3_T4Family", memory_gib=memory_gib
    )


def _a10(gpus: int, vcpus: int, memory_gib: int, temp_disk_gib: int) -> GpuSku:
    # Azure/AgentBaker 06836ee2 pkg/agent/datamodel/gpu_components.go ConvergedGPUDriverSizes: every NVads A10 v5
    # size takes the converged GRID driver ("installing vanilla cuda drivers will fail to install with opaque errors").
    return GpuSku(
        "NVadsA10_v5",
        "A10",
        gpus,
        24,
        False,
        temp_disk_gib,
        vcpus,
        "StandardNVADSA10v5Family",
        grid_driver=True,
        memory_gib=memory_gib,
    )


def _a100_pcie(gpus: int, vcpus: int, memory_gib: int, temp_disk_gib: int) -> GpuSku:
    return GpuSku(
        "NCads_A100_v4",
        "A100-80GB",
        gpus,
        80,
        False,
        temp_disk_gib,
        vcpus,
        "StandardNCADSA100v4Family",
        GPU_80GB_MIG,
        memory_gib=memory_gib,
    )


def _h100_nvl(gpus: int, vcpus: int, memory_gib: int, temp_disk_gib: int) -> GpuSku:
    return GpuSku(
        "NCads_H100_v5",
        "H100-NVL",
        gpus,
        94,
        False,
        temp_disk_gib,
        vcpus,
        "StandardNCadsH100v5Family",
        H100_NVL_MIG,
        memory_gib=memory_gib,
    )


def _grace_blackwell(family: str, gpu_model: str, gpu_memory_gib: int, quota_family: str, memory_gib: int) -> GpuSku:
    """4 GPUs on an Arm64 Grace host, 128 vCPUs, NVLink over a 72-GPU rack, InfiniBand, 4 NVMe disks (16 TiB)."""
    return GpuSku(
        family,
        gpu_model,
        4,
        gpu_memory_gib,
        True,
        0,
        128,
        quota_family,
        arch="arm64",
        nvlink_domain_gpus=72,
        nvme_disk_gib=16384,
        memory_gib=memory_gib,
    )


GPU_SKUS: dict[str, GpuSku] = {
    # NC T4 v3: inference and dev, one T4 per VM up to 16 cores.
    "Standard_NC4as_T4_v3": _t4(1, 4, 28, 176),
    "Standard_NC8as_T4_v3": _t4(1, 8, 56, 352),
    "Standard_NC16as_T4_v3": _t4(1, 16, 110, 352),
    "Standard_NC64as_T4_v3": _t4(4, 64, 440, 2816),
    # NV A10 v5: whole-GPU sizes only (the fractional ones are for graphics, not CUDA pods).
    # Temp disk: the current size page says 1440/2880/2880 GiB, the older series page 720/720/1400;
    # the smaller figure is kept, so an Ephemeral OS disk accepted here fits under either.
    "Standard_NV36ads_A10_v5": _a10(1, 36, 440, 720),
    "Standard_NV36adms_A10_v5": _a10(1, 36, 880, 720),
    "Standard_NV72ads_A10_v5": _a10(2, 72, 880, 1400),
    # NC A100 v4: PCIe A100 80 GB, MIG-capable, no InfiniBand.
    "Standard_NC24ads_A100_v4": _a100_pcie(1, 24, 220, 64),
    "Standard_NC48ads_A100_v4": _a100_pcie(2, 48, 440, 128),
    "Standard_NC96ads_A100_v4": _a100_pcie(4, 96, 880, 256),
    # NCads H100 v5: H100 NVL 94 GB, MIG-capable, no InfiniBand.
    "Standard_NC40ads_H100_v5": _h100_nvl(1, 40, 320, 3576),
    "Standard_NC80adis_H100_v5": _h100_nvl(2, 80, 640, 7152),
    # ND A100 v4: 8x SXM A100 with HDR InfiniBand, for multi-node training.
    "Standard_ND96asr_v4": GpuSku(
        family="NDasrA100_v4",
        gpu_model="A100-40GB",
        gpus_per_vm=8,
        gpu_memory_gib=40,
        infiniband=True,
        temp_disk_gib=6000,
        vcpus=96,
        quota_family="standardNDASv4_A100Family",
        memory_gib=900,
        mig=A100_40GB_MIG,
    ),
    "Standard_ND96amsr_A100_v4": GpuSku(
        family="NDamsrA100_v4",
        gpu_model="A100-80GB",
        gpus_per_vm=8,
        gpu_memory_gib=80,
        infiniband=True,
        temp_disk_gib=6400,
        vcpus=96,
        quota_family="standardNDAMSv4_A100Family",
        memory_gib=1800,
        mig=GPU_80GB_MIG,
    ),
    # ND H100 v5 / ND H200 v5: 8x SXM with NDR InfiniBand, MIG-capable on AKS like the A100 sizes.
    "Standard_ND96isr_H100_v5": GpuSku(
        family="NDisrH100_v5",
        gpu_model="H100-80GB",
        gpus_per_vm=8,
        gpu_memory_gib=80,
        infiniband=True,
        temp_disk_gib=1024,
        vcpus=96,
        quota_family="standardNDSH100v5Family",
        memory_gib=1900,
        mig=GPU_80GB_MIG,
    ),
    "Standard_ND96isr_H200_v5": GpuSku(
        family="NDisrH200_v5",
        gpu_model="H200-141GB",
        gpus_per_vm=8,
        gpu_memory_gib=141,
        infiniband=True,
        temp_disk_gib=1024,
        vcpus=96,
        quota_family="standardNDISRH200V5Family",
        memory_gib=1850,
        mig=H200_MIG,
    ),
    # ND GB200 v6 / ND GB300 v6 (Grace-Blackwell): 4 GPUs per VM on an Arm64 Grace host, NVLink across the rack
    # (a domain of up to 72 GPUs), InfiniBand between racks. Size pages nd-gb200-v6-series.md (Basics: 128 vCPUs,
    # 900 GiB; Accelerators: 4 x 192 GB; Network: "up to 72 GPUs per domain through NVLINK", scale-out InfiniBand)
    # and nd-gb300-v6-series.md (128 vCPUs, 864 GiB, 4 x 288 GB), MicrosoftDocs/azure-compute-docs
    # articles/virtual-machines/sizes/gpu-accelerated (read 2026-12-02). Local storage is 4 NVMe disks, 16 TiB
    # (includes/nd-gb*-v6-series-specs.md: "16 TiB (NVMe)"), no SCSI temp disk: the ephemeral OS disk limit is 0
    # and the OS disk stays managed. No MIG: NVIDIA's MIG guide lists Blackwell profiles, but AKS partitions only
    # A100, H100 and H200 (gpu-multi-instance page above). AKS runs these sizes on its Ubuntu 24.04 Arm64 image
    # with the open R580 driver and the IMEX channel the ComputeDomain daemon uses (Azure/AgentBaker
    # e2e Test_Ubuntu2404Arm64_GB200_IMEX / _GB300_IMEX). Quota families as the resource SKUs API spells them in
    # public quota tables (standardNDISRGB200V6NDRFamily, standardNDISRGB300V6Family); Microsoft's pages do not
    # list them: check `az vm list-usage` before relying on the name.
    "Standard_ND128isr_NDR_GB200_v6": _grace_blackwell(
        "NDisrGB200_v6", "GB200", 192, "standardNDISRGB200V6NDRFamily", 900
    ),
    "Standard_ND128isr_GB300_v6": _grace_blackwell("NDisrGB300_v6", "GB300", 288, "standardNDISRGB300V6Family", 864),
    # ND MI300X v5: 8x AMD Instinct MI300X (192 GB HBM3) with NDR InfiniBand. AKS supports no other AMD size
    # and installs no AMD driver (`gpuProfile.driver: None`; MicrosoftDocs/azure-aks-docs
    # articles/aks/use-amd-gpus.md at 742aedaa). Size facts: articles/virtual-machines/sizes/gpu-accelerated/
    # ndmi300xv5-series.md at 28da8f72 (8 GPUs with 1535 GB between them, 96 vCPUs, 1850 GB, 1000 GiB temp disk);
    # RDMA-capable (`r`: AKS's page asks for its InfiniBand feature); quota family as kubernetes/autoscaler
    # cluster-autoscaler-1.36.1 azure_instance_types.go lists it (SkuFamily standardNDISv5MI300XFamily).
    "Standard_ND96isr_MI300X_v5": GpuSku(
        family="NDisrMI300X_v5",
        gpu_model="MI300X",
        gpus_per_vm=8,
        gpu_memory_gib=192,
        infiniband=True,
        temp_disk_gib=1000,
        vcpus=96,
        quota_family="standardNDISv5MI300XFamily",
        memory_gib=1850,
        vendor="amd",
    ),
}

# The GPU Operator's MIG manager partitions GPUs on `driver: None` pools (AKS's own MIG setup needs
# the AKS driver): it applies the mig-parted configuration named by the node label
# `nvidia.com/mig.config`. The names per GPU model and AKS profile are those of NVIDIA's
# default-mig-parted-config, NVIDIA/gpu-operator v26.7.0 assets/state-mig-manager/0400_configmap.yaml.
MIG_PARTED_CONFIGS: dict[str, dict[MigProfile, str]] = {
    "A100-40GB": {
        "MIG1g": "all-1g.5gb",
        "MIG2g": "all-2g.10gb",
        "MIG3g": "all-3g.20gb",
        "MIG4g": "all-4g.20gb",
        "MIG7g": "all-7g.40gb",
    },
    "A100-80GB": {
        "MIG1g": "all-1g.10gb",
        "MIG2g": "all-2g.20gb",
        "MIG3g": "all-3g.40gb",
        "MIG4g": "all-4g.40gb",
        "MIG7g": "all-7g.80gb",
    },
    "H100-80GB": {
        "MIG1g": "all-1g.10gb",
        "MIG2g": "all-2g.20gb",
        "MIG3g": "all-3g.40gb",
        "MIG4g": "all-4g.40gb",
        "MIG7g": "all-7g.80gb",
    },
    "H200-141GB": {
        "MIG1g": "all-1g.18gb",
        "MIG2g": "all-2g.35gb",
        "MIG3g": "all-3g.71gb",
        "MIG4g": "all-4g.71gb",
        "MIG7g": "all-7g.141gb",
    },
    "H100-NVL": {
        "MIG1g": "all-1g.12gb",
        "MIG2g": "all-2g.24gb",
        "MIG3g": "all-3g.47gb",
        "MIG4g": "all-4g.47gb",
        "MIG7g": "all-7g.94gb",
    },
}

_BY_LOWER = {size.lower(): sku for size, sku in GPU_SKUS.items()}
_NAME_BY_LOWER = {size.lower(): size for size in GPU_SKUS}


def gpu_sku(vm_size: str) -> GpuSku | None:
    """The catalog entry of a VM size (Azure compares sizes case-insensitively), or None."""
    return _BY_LOWER.get(vm_size.lower())


def closest_gpu_sizes(vm_size: str, n: int = 3) -> list[str]:
    """Catalogued GPU sizes whose names are closest to `vm_size` (for "did you mean")."""
    matches = difflib.get_close_matches(vm_size.lower(), list(_NAME_BY_LOWER), n=n, cutoff=0.6)
    return [_NAME_BY_LOWER[m] for m in matches]
