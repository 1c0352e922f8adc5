"""Post-provision GPU validation per pool, and the bus bandwidth each InfiniBand size must reach.

Both checks are opt-in per pool (`gpuPools[].validation`): they hold every GPU of one or two nodes for
minutes, and on a pool scaled to zero they wait for the autoscaler to bring the nodes up.

NCCL all-reduce baselines across two nodes (bus bandwidth, GB/s, NCCL's `busbw` = algbw x 2(n-1)/n):
- Standard_ND96asr_v4 (8x A100 40GB, 8x HDR 200 Gb/s): 187 GB/s measured at 8 GiB on two nodes, "less than
  180 indicates a problem" (Azure/aks-rdma-infiniband tests/expected-output.md, snapshot 2026-07-16).
- Standard_ND96amsr_A100_v4: the same HDR fabric and NCCL ring as ND96asr_v4; no published figure, so the
  ND96asr_v4 floor is used (derived, not measured).
- Standard_ND96isr_H100_v5 (8x NDR 400 Gb/s): ~450 GB/s expected at 16 GiB, warn below 400, raise an Azure
  Guest Health Report below 300 (Azure/ai-infrastructure-on-azure skills/slurm/sku_performance_baseline/SKILL.md,
  2026-03-27). The floor is the health-report line, 300. Those figures come from runs tuned by
  infrastructure_validations/slurm/NCCL/configs/hopper.conf (same repo, commit a01b0731): NDv5 topology file,
  PXN off, 32 channels at least, 4 QPs per connection, SHARP (CollNet). The probe runs with the same settings
  (`HOPPER_NCCL_ENV`, `NDV5_TOPOLOGY`): a bare NCCL falls short of a floor measured tuned.
- Standard_ND96isr_H200_v5: no published multi-node figure. Provisional floor: the H100 one scaled by the
  single-node IB bandwidth thresholds of Azure's health checks (360 vs 380 GB/s, Azure/azurehpc-health-checks
  conf/nd96isr_h200_v5.conf and nd96isr_h100_v5.conf): 300 x 360/380 = 284, run with the same tuning
  (hopper.conf covers "Hopper (H100 / H200) — Azure NDv5").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import Field

from ..base import ConfigModel


@dataclass(frozen=True)
class TopologyFile:
    """An NCCL topology file the probe fetches at a pinned commit and checks by its SHA-256 before NCCL starts."""

    url: str
    sha256: str

    @property
    def file_name(self) -> str:
        return self.url.rsplit("/", 1)[-1]


# Azure's NDv5 topology file (PCI paths of GPUs and HCAs per NUMA node); NCCL_TOPO_FILE points at it in both
# Azure tests. Node images of AKS do not carry it; Azure's AKS test image clones this directory unpinned.
NDV5_TOPOLOGY = TopologyFile(
    url="https://raw.githubusercontent.com/Azure/azhpc-images/8e9d055fb9e1f7385da734969793861c447958a1/"
    "topology/ndv5-topo.xml",
    sha256="c26ff47f1decf03d44ee6e90c4a8afd3bddeec334c5545008f33af2a297e2834",
)

# NCCL, UCX and SHARP settings of the runs behind the NDv5 floors (Azure/ai-infrastructure-on-azure
# infrastructure_validations/slurm/NCCL/configs/hopper.conf at a01b0731). Device names follow Azure's AKS NCCL test
# (infrastructure_validations/aks/NCCL/helm/nccl-test/values.yaml): AKS nodes name the first HCA mlx5_0, not
# the HPC image's mlx5_ib0.
HOPPER_NCCL_ENV: dict[str, str] = {
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_PXN_DISABLE": "1",
    "NCCL_MIN_NCHANNELS": "32",
    "NCCL_P2P_NET_CHUNKSIZE": str(2 * 1024 * 1024),
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_COLLNET_ENABLE": "1",
    "UCX_TLS": "rc",
    "UCX_NET_DEVICES": "mlx5_0:1",
    "SHARP_SMX_UCX_INTERFACE": "mlx5_0:1",
    "SHARP_COLL_ENABLE_SAT": "1",
    "SHARP_COLL_LOG_LEVEL": "3",
    "SHARP_COLL_ENABLE_PCI_RELAXED_ORDERING": "1",
}


@dataclass(frozen=True)
class NcclBaseline:
    """What a healthy two-node all-reduce reaches on one VM size."""

    min_bus_bandwidth_gbps: float
    """Below this the fabric, a cable or a GPU is at fault: the validation fails."""
    message_bytes: int
    """All-reduce message size the figure was measured at."""
    source: str
    nccl_env: Mapping[str, str] = field(default_factory=dict[str, str])
    """The NCCL settings the figure was measured with: the probe runs with them."""
    topology: TopologyFile | None = None
    """The topology file NCCL_TOPO_FILE named in those runs."""


GIB = 1 << 30

NCCL_BASELINES: dict[str, NcclBaseline] = {
    "Standard_ND96asr_v4": NcclBaseline(180.0, 8 * GIB, "Azure/aks-rdma-infiniband tests/expected-output.md"),
    "Standard_ND96amsr_A100_v4": NcclBaseline(180.0, 8 * GIB, "same fabric as ND96asr_v4 (derived)"),
    "Standard_ND96isr_H100_v5": NcclBaseline(
        300.0,
        16 * GIB,
        "Azure/ai-infrastructure-on-azure sku_performance_baseline (health-report line)",
        HOPPER_NCCL_ENV,
        NDV5_TOPOLOGY,
    ),
    "Standard_ND96isr_H200_v5": NcclBaseline(
        284.0,
        16 * GIB,
        "provisional: H100 floor x 360/380 (azurehpc-health-checks)",
        HOPPER_NCCL_ENV,
        NDV5_TOPOLOGY,
    ),
}

_BY_LOWER = {size.lower(): baseline for size, baseline in NCCL_BASELINES.items()}


def nccl_baseline(vm_size: str) -> NcclBaseline | None:
    """The baseline of a VM size (compared case-insensitively, as Azure does), or None."""
    return _BY_LOWER.get(vm_size.lower())


class PoolValidationConfig(ConfigModel):
    """Checks run by `pulumi up` once the pool exists; a failing check fails the update with its verdict."""

    dcgm_diag: bool = Field(
        default=False,
        description="Run DCGM diagnostics level 1 (deployment checks, seconds) on one node of the pool, holding "
        "all its GPUs; not on MIG pools (DCGM diagnostics need whole GPUs)",
    )
    nccl_all_reduce: bool = Field(
        default=False,
        description="InfiniBand pools only: an NCCL all-reduce across two nodes whose bus bandwidth must reach the "
        "size's floor (config/gpu/validation.py); needs maxCount of 2 or more and whole GPUs",
    )
    min_bus_bandwidth_gbps: float | None = Field(
        default=None,
        alias="minBusBandwidthGBps",
        gt=0,
        le=2000,
        description="Override the size's floor in GB/s (e.g. a lower one while the fabric is shared); at most 2000, "
        "above any two-node figure Azure's sizes reach",
    )
    timeout_minutes: int = Field(
        default=45,
        ge=5,
        le=240,
        description="How long `pulumi up` waits for a check, node scale-up from zero included; 5 to 240 minutes",
    )

    @property
    def any(self) -> bool:
        return self.dcgm_diag or self.nccl_all_reduce
