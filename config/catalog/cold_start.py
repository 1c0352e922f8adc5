"""Published figures for how long a new GPU node takes to become useful, each with its source and date.

A figure is a range of seconds (low..high); either end may be unknown (None) when nothing published
bounds it. The plan's cold-start budget (aks_gpu_platform/plan/cold_start.py) adds these up per GPU pool and never
fills an unknown with a guess.

What was found, honestly: Azure publishes no service-level figure for GPU node provisioning. The
provisioning rows are measurements Microsoft's own teams published (the AKS performance pipeline,
the AKS engineering blog) and an NVIDIA maintainer's statement; sizes nobody measured say unknown.
Compressed sizes of the platform's images could not be read here (registry manifests are out of
reach offline), so image pulls are bounded by measured container starts, not computed from sizes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A published duration range in seconds; None at either end means nothing published bounds it."""

    low_s: float | None
    high_s: float | None
    source: str
    """Where the figure was published (URL, or repository, path and commit)."""
    published: datetime.date
    """The date of the publication (issue comment, page or blog date)."""
    note: str = ""

    @property
    def known(self) -> bool:
        return self.low_s is not None or self.high_s is not None


@dataclass(frozen=True)
class Rate:
    """A published throughput in MB/s (10^6 bytes per second) with its source and date."""

    mbps: float
    source: str
    published: datetime.date
    note: str = ""


# ---------------------------------------------------------------- node provisioning

# The cluster autoscaler acts on pending GPU pods after about 30 s (CPU pods: about 2 s), as reported for AKS,
# where the autoscaler's image and flags are managed and cannot be changed.
AUTOSCALER_GPU_DELAY = Figure(
    30,
    30,
    "https://github.com/Azure/AKS/issues/5573",
    datetime.date(2026, 1, 26),
    "reported by a user; AKS does not expose the delay",
)

_TELESCOPE = Figure(
    600,
    1750,
    "https://github.com/Azure/telescope/pull/1322",
    datetime.date(2026, 9, 12),
    "Microsoft's AKS GPU performance pipeline: ND96asr_v4, NC40ads_H100_v5 and NV36ads_A10_v5 nodes "
    "'routinely take longer than 10 minutes' to Ready; the ARM scale operation took about 1750 s",
)
# AKS engineering blog 2026-09-02 (Azure/AKS website/blog/2026-09-02-reducing-aks-cold-starts-with-prepared-image-
# specification/index.md at 14585d5a): a T4 pool scaled from one to two nodes reached model ready at p95 in 510 s,
# of which 97 s (mean) was container start after the node's preparation checks; 510 - 97 = 413 s bounds VM,
# registration and AKS's managed driver from above at p95.
_T4_BLOG = Figure(
    None,
    413,
    "https://github.com/Azure/AKS/blob/14585d5a/website/blog/2026-09-02-reducing-aks-cold-starts-with-prepared-"
    "image-specification/index.md",
    datetime.date(2026, 9, 2),
    "T4 scale-out, p95 to model ready 510 s minus 97 s container start: VM, node registration and the "
    "AKS-installed driver; no lower bound published",
)
UNKNOWN_PROVISIONING = Figure(
    None,
    None,
    "no published measurement for this size family",
    datetime.date(2026, 12, 2),
    "AKS documents no GPU provisioning time; measure one scale-up and record it here",
)

# VM allocation plus AKS node bootstrap to Ready, by Azure series (config/catalog/gpu_sizes.py `family`). With the AKS
# driver (devicePlugin, aksManaged) the driver install is part of this bootstrap.
NODE_PROVISIONING: dict[str, Figure] = {
    "NCasT4_v3": _T4_BLOG,
    "NVadsA10_v5": _TELESCOPE,
    "NCads_H100_v5": _TELESCOPE,
    "NDasrA100_v4": Figure(
        600,
        None,
        "https://github.com/Azure/telescope/pull/1323",
        datetime.date(2026, 9, 12),
        "the same pipeline: ND96asr_v4 routinely over 10 minutes to Ready, one 1-to-2 node scale-up over 30 minutes",
    ),
}


def node_provisioning(family: str) -> Figure:
    return NODE_PROVISIONING.get(family, UNKNOWN_PROVISIONING)


# ---------------------------------------------------------------- driver

# AKS installs the driver during node bootstrap, before the node is Ready: already inside NODE_PROVISIONING.
AKS_DRIVER_IN_BOOTSTRAP = Figure(
    0,
    0,
    "https://github.com/Azure/AKS/issues/4110",
    datetime.date(2024, 7, 3),
    "inside node provisioning (AKS installs it during bootstrap; about 1 min of it per a user's syslog)",
)
# The GPU Operator's driver container runs after the node is Ready (kernel headers, compile, load), then the
# toolkit and the device plugin start.
GPU_OPERATOR_DRIVER = Figure(
    180,
    300,
    "https://github.com/NVIDIA/gpu-operator/issues/707",
    datetime.date(2024, 5, 17),
    "NVIDIA maintainer: 'around 3-5 minutes for the GPU stack to be ready (driver installation, container-toolkit "
    "setup etc)'; precompiled driver containers shorten it, by an unpublished amount",
)
# AMD pools: AMD's GPU Operator loads amdgpu after the node is Ready. KMM builds the driver image when none exists for
# the node's kernel (first node after a node-image change), else pulls it (ROCm/gpu-operator v1.5.1
# docs/drivers/precompiled-driver.md, "How KMM Selects Driver Images"); AMD publishes no duration for either.
AMD_OPERATOR_DRIVER = Figure(
    None,
    None,
    "ROCm/gpu-operator v1.5.1 docs/drivers/precompiled-driver.md",
    datetime.date(2026, 7, 21),
    "after the node is Ready: an amdgpu-dkms build for a kernel not built before (minutes), else the built image's "
    "pull and modprobe; no published duration",
)

# ---------------------------------------------------------------- images

# Same blog: mean container start after the node's preparation checks on a T4 node, without and with the image
# already on the node (prepared node image): 97 s and 11 s.
IMAGE_START_COLD = Figure(
    97,
    97,
    _T4_BLOG.source,
    datetime.date(2026, 9, 2),
    "mean container start of a model-serving image pulled on a new T4 node (image size not published)",
)
IMAGE_START_PRESENT = Figure(
    11,
    11,
    _T4_BLOG.source,
    datetime.date(2026, 9, 2),
    "mean container start of the same image already on the node",
)
# The vLLM server image (vllm/vllm-openai:v0.34.0): its size at that tag is not published where it could be read here.
# Figures for the moving `latest` tag: "the image is around 12 GB" (vllm-project/vllm issue 27154, 2025-10-18) and
# "Size of official out-of-the-box vllm-openai:latest docker image: 28.6 GB" (pull request 22377, updated
# 2025-12-10; unpacked). No pull rate from ACR to an AKS GPU node is published, so the pull is not bounded.
VLLM_IMAGE = Figure(
    None,
    None,
    "https://github.com/vllm-project/vllm/issues/27154",
    datetime.date(2025, 10, 18),
    "vllm/vllm-openai: about 12 GB (latest, 2025-10-18) to 28.6 GB unpacked (latest, vllm-project/vllm pull request "
    "22377, 2025-12-10); v0.34.0's size and an ACR-to-node pull rate are unpublished: measure one pull",
)
# vLLM compiles the model (torch.compile) and captures CUDA graphs before /health answers; its own cache under
# VLLM_CACHE_ROOT skips the compile on a later start with the same model and flags. No published duration.
VLLM_ENGINE_START = Figure(
    None,
    None,
    "vLLM 0.34.0 vllm/compilation/backends.py (compile cache at VLLM_CACHE_ROOT/torch_compile_cache)",
    datetime.date(2026, 12, 4),
    "torch.compile and CUDA graph capture before /health answers; the compile cache is each pod's own, so every "
    "new replica compiles; no published figure",
)

# Artifact Streaming, GA since MicrosoftDocs/azure-aks-docs 879fbdd7b (2026-07-13), whose articles/aks/artifact-
# streaming.md states the limits (Linux AMD64 images only, ARM64 images not supported; Premium registry; pulls by tag;
# no imagePullSecrets or scope-mapped tokens). The GA page drops the measured figures; the last revision with them,
# ccbb339ba (2026-07-02), says "can reduce time to pod readiness by over 15%" and "for images <10GB from minutes to
# seconds". The budget credits the 15% and nothing more.
ARTIFACT_STREAMING_SOURCE = "https://learn.microsoft.com/azure/aks/artifact-streaming"
ARTIFACT_STREAMING_FIGURES = (
    "https://github.com/MicrosoftDocs/azure-aks-docs/blob/ccbb339ba/articles/aks/artifact-streaming.md"
)
ARTIFACT_STREAMING_READ = datetime.date(2026, 7, 2)
ARTIFACT_STREAMING_MIN_REDUCTION = 0.15

# ---------------------------------------------------------------- weights and data

# Standard general-purpose v2 account egress in Korea Central and the other listed regions: 200 Gbps
# (MicrosoftDocs/azure-docs, scalability targets for standard storage accounts, read 2026-12-02); a single block
# blob reads "up to the storage account's ingress/egress limits". One node reads at most its NIC's bandwidth.
BLOB_ACCOUNT_EGRESS = Rate(
    25_000,
    "https://learn.microsoft.com/azure/storage/common/scalability-targets-standard-account",
    datetime.date(2026, 12, 2),
    "200 Gbps per account; a node's network bandwidth and blobfuse2 cap one node below it (unpublished here)",
)
LUSTRE_SOURCE = "config/catalog/lustre_skus.py (MB/s per TiB x capacity, Microsoft's tier table)"


@dataclass(frozen=True)
class LocalNvme:
    """Local NVMe disks of a size, where Microsoft's size page lists them."""

    disks: int
    total_tib: float
    source: str
    published: datetime.date


# Local NVMe per size (the size pages' "Local storage" tab: Max NVMe Disks, NVMe Disk Size). Sizes not listed have
# no NVMe figure read here; a cache on them is refused until a row with its source is added.
LOCAL_NVME: dict[str, LocalNvme] = {
    "Standard_ND96isr_H100_v5": LocalNvme(
        8,
        28,
        "MicrosoftDocs/azure-compute-docs articles/virtual-machines/sizes/gpu-accelerated/ndh100v5-series.md "
        "at 02773904 (8 NVMe disks, 28 TiB)",
        datetime.date(2025, 9, 2),
    ),
}


def local_nvme(vm_size: str) -> LocalNvme | None:
    """The NVMe row of a size (Azure compares sizes case-insensitively), or None."""
    return next((nvme for size, nvme in LOCAL_NVME.items() if size.lower() == vm_size.lower()), None)
