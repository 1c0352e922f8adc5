"""What the AKS node image gives a pool, and the pools it cannot serve.

A pool's node image follows from its OS SKU and the cluster's Kubernetes minor (which Ubuntu or Azure Linux),
its VM size's CPU architecture, and the GPU mode (AKS's driver, none, or AKS-managed GPU). The facts, from the
sources they were read in:

- OS SKU to OS release: MicrosoftDocs/azure-aks-docs articles/aks/upgrade-os-version.md at fb060abe (2026-08-21),
  "Supported OS versions": `Ubuntu` is Ubuntu 22.04 on 1.25-1.34 and 24.04 from 1.35 (26.04 from 1.38, Azure/AKS
  release 2026-10-25); `Ubuntu2204` exists on 1.25-1.36; `AzureLinux` is Azure Linux 3.0 from 1.32 (2.0 before,
  whose node images were deleted on 2026-03-31).
- The NVIDIA driver: Azure/AgentBaker at 06836ee2 (2026-08-21) parts/linux/cloud-init/artifacts/cse_config.sh,
  `ensureGPUDrivers` returns at once on arm64 (so does `validateGPUDrivers`): AKS installs no NVIDIA driver on an
  Arm64 node, whatever `gpuProfile.driver` says, and the resource provider refuses `Install` for GB300. The
  AgentBaker branch with Grace-Blackwell drivers (xuex/gb-aksgpu-imex-experiment, 2b124f67) is not merged.
- NVIDIA GB on AgentBaker (vhdbuilder/packer/install-dependencies.sh `configureGraceBlackwell`): only "arm64
  Ubuntu 24.04". That image (distro aks-ubuntu-arm64-gb200-containerd-24.04-gen2, frozen at 202602.19.0) bakes a
  driver, DCGM and a host device plugin, and only serves subscriptions changed for it (packer_source.sh); a pool
  created through the public API gets the plain Arm64 Ubuntu 24.04 image without a driver.
- The GPU Operator's driver container (NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go
  `resolveDriverTag`) is `<driver.version>-<os tag>`, the os tag read from the first GPU node's NFD labels
  (state_manager.go `getGPUNodeOSInfo`): one tag for every GPU node of the cluster. NVIDIA publishes driver
  containers for Ubuntu and RHEL families only (NVIDIA/gpu-driver-container d10b41a Makefile DISTRIBUTIONS), none
  for Azure Linux.
- The NVads A10 v5 sizes take NVIDIA's GRID driver, which AKS installs in its converged build (AgentBaker
  pkg/agent/datamodel/gpu_components.go ConvergedGPUDriverSizes); NVIDIA publishes its driver containers as the
  passthrough driver (gpu-driver-container d10b41a ubuntu22.04/Dockerfile `DRIVER_TYPE=passthrough`; a vGPU guest
  build needs the licensed GRID installer), which does not install on them: no GPU Operator driver for these sizes.
- NVIDIA's DRA driver needs Kubernetes 1.34.2 or later (NVIDIA/k8s-dra-driver-gpu v0.4.0 docs/prerequisites.md;
  `resource.k8s.io/v1`); the multi-node NVLink sizes run only where `Ubuntu` is 24.04, from 1.35, which is later.
- One NVLink domain of these racks is 72 GPUs, 18 VMs (config/catalog/gpu_sizes.py). A ComputeDomain's IMEX channels
  join GPUs of one clique (GPU Feature Discovery's `nvidia.com/gpu.clique`, v0.4.0 docs/prerequisites.md); the
  platform places nothing by clique, so a pool is capped at one domain's size (which alone does not keep its VMs in
  one rack: docs/gpu-pools.md says how to check).

tests/upstream/node_image.py models the same image from AgentBaker independently and checks every stack against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ..errors import field_error

if TYPE_CHECKING:
    from ..cluster.node_pools import AutoscaledPoolConfig
    from .section import GpuPoolConfig, GpuStackMode

OsRelease = Literal["ubuntu22.04", "ubuntu24.04", "azurelinux3.0"]
"""The OS of a node, spelt as NFD's `system-os_release` ID and VERSION_ID make the GPU Operator's os tag."""

GRACE_BLACKWELL_OS: OsRelease = "ubuntu24.04"
# The releases NVIDIA builds the GPU Operator's driver container for (NVIDIA/gpu-driver-container d10b41a).
OPERATOR_DRIVER_RELEASES: tuple[OsRelease, ...] = ("ubuntu22.04", "ubuntu24.04")
UPGRADE_OS_VERSION_SOURCE = "MicrosoftDocs/azure-aks-docs articles/aks/upgrade-os-version.md at fb060abe"


def _minor(version: str) -> tuple[int, int]:
    major, _, minor = version.partition(".")
    return int(major), int(minor)


def os_release(os_sku: str, kubernetes_minor: str) -> OsRelease | None:
    """The OS a pool of `os_sku` runs on `kubernetes_minor`, or None when AKS has no image for the pair."""
    minor = _minor(kubernetes_minor)
    if os_sku == "Ubuntu":
        if (1, 25) <= minor <= (1, 34):
            return "ubuntu22.04"
        return "ubuntu24.04" if (1, 35) <= minor <= (1, 37) else None
    if os_sku == "Ubuntu2204":
        return "ubuntu22.04" if (1, 25) <= minor <= (1, 36) else None
    if os_sku == "AzureLinux":
        return "azurelinux3.0" if minor >= (1, 32) else None
    return None


def _os_path(path: str) -> str:
    return f"{path}.osSku"


def _check_pool_os(kubernetes_version: str, path: str, pool: AutoscaledPoolConfig) -> OsRelease:
    release = os_release(pool.os_sku, kubernetes_version)
    if release is None:
        raise field_error(
            _os_path(path),
            pool.os_sku,
            f"AKS has no {pool.os_sku} node image for Kubernetes {kubernetes_version} "
            f"({UPGRADE_OS_VERSION_SOURCE}): Ubuntu2204 exists on 1.25-1.36, AzureLinux (3.0) from 1.32, Ubuntu on "
            "every catalogued minor",
        )
    return release


def check_node_images(
    kubernetes_version: str,
    gpu_stack_mode: GpuStackMode,
    all_pools: Sequence[tuple[str, AutoscaledPoolConfig]],
    gpu_pools: Sequence[GpuPoolConfig],
) -> None:
    """Refuse, naming the field, every pool the node image cannot serve with the configured GPU stack.

    `all_pools` is every autoscaled pool with its field path (system, CPU and GPU pools)."""
    for path, pool in all_pools:
        _check_pool_os(kubernetes_version, path, pool)
    operator_releases: dict[OsRelease, str] = {}
    for i, pool in enumerate(gpu_pools):
        path, sku, release = f"gpuPools[{i}]", pool.sku, gpu_pool_os(kubernetes_version, pool)
        if sku.vendor != "nvidia":
            continue
        if sku.arch == "arm64":
            _check_arm64_pool(kubernetes_version, gpu_stack_mode, path, pool.vm_size, pool.os_sku, release)
        if sku.multi_node_nvlink:
            _check_nvlink_pool(path, pool.vm_size, pool.max_count, sku.nvlink_domain_gpus // sku.gpus_per_vm)
        if gpu_stack_mode == "gpuOperator":
            if sku.grid_driver:
                raise field_error(
                    f"{path}.vmSize",
                    pool.vm_size,
                    f"{pool.vm_size} reaches its {sku.gpu_model} through NVIDIA's GRID driver, which AKS installs "
                    "(Azure/AgentBaker 06836ee2 gpu_components.go ConvergedGPUDriverSizes); gpuStack.mode gpuOperator "
                    "skips it and NVIDIA's public driver container is the passthrough driver, which does not install "
                    "on this size: use gpuStack.mode devicePlugin, or a size AKS serves with the datacenter driver",
                )
            if release not in OPERATOR_DRIVER_RELEASES:
                raise field_error(
                    _os_path(path),
                    pool.os_sku,
                    f"gpuStack.mode gpuOperator installs NVIDIA's driver container, which NVIDIA builds for "
                    f"{list(OPERATOR_DRIVER_RELEASES)} only, not {release}: use Ubuntu or Ubuntu2204",
                )
            operator_releases.setdefault(release, path)
            others = {r: where for r, where in operator_releases.items() if r != release}
            if others:
                ((other, other_path),) = others.items()
                raise field_error(
                    _os_path(path),
                    pool.os_sku,
                    f"its nodes run {release} but {other_path}'s run {other}; the GPU Operator picks one driver "
                    "container for the whole cluster from the first GPU node's OS (NVIDIA/gpu-operator v26.7.0 "
                    "state_manager.go getGPUNodeOSInfo), so nodes of the other OS would get a driver built for the "
                    "wrong one: give every NVIDIA GPU pool the same OS SKU",
                )


def _check_arm64_pool(
    kubernetes_version: str, gpu_stack_mode: GpuStackMode, path: str, vm_size: str, os_sku: str, release: OsRelease
) -> None:
    if gpu_stack_mode != "gpuOperator":
        raise field_error(
            "gpuStack.mode",
            gpu_stack_mode,
            f"{path} ({vm_size}) is an Arm64 size, and AKS installs no NVIDIA driver on Arm64 nodes (Azure/AgentBaker "
            "06836ee2 cse_config.sh ensureGPUDrivers returns on arm64; the API refuses driver Install for GB300), so "
            "neither devicePlugin nor aksManaged gets a driver there: use gpuOperator (the pool's driver None and the "
            "GPU Operator's driver container built for arm64 Ubuntu 24.04)",
        )
    if release == GRACE_BLACKWELL_OS:
        return
    if os_sku == "Ubuntu":
        raise field_error(
            "cluster.kubernetesVersion",
            kubernetes_version,
            f"{path} ({vm_size}) runs only on Arm64 Ubuntu 24.04 (AgentBaker configureGraceBlackwell), and the Ubuntu "
            f"OS SKU is 24.04 from Kubernetes 1.35 on ({UPGRADE_OS_VERSION_SOURCE}); its multi-node NVLink also needs "
            "NVIDIA's DRA driver, on 1.34.2 or later (resource.k8s.io/v1): use 1.35 or later",
        )
    raise field_error(
        _os_path(path),
        os_sku,
        f"{vm_size} runs only on Arm64 Ubuntu 24.04 (Azure/AgentBaker 06836ee2 install-dependencies.sh "
        f"configureGraceBlackwell), not {release}: use Ubuntu on Kubernetes 1.35 or later",
    )


def _check_nvlink_pool(path: str, vm_size: str, max_count: int, domain_vms: int) -> None:
    if max_count > domain_vms:
        raise field_error(
            f"{path}.maxCount",
            max_count,
            f"one NVLink domain of {vm_size} is {domain_vms} VMs; a larger pool spans racks, and a job placed across "
            "two cliques (nvidia.com/gpu.clique) gets no NVLink between them, which the platform does not place "
            f"around: at most {domain_vms}, and another pool for the next rack",
        )


def gpu_pool_os(kubernetes_version: str, pool: AutoscaledPoolConfig) -> OsRelease:
    """The OS of a pool's nodes on the cluster's Kubernetes version, in a validated config."""
    release = os_release(pool.os_sku, kubernetes_version)
    assert release is not None, "validated by check_node_images"
    return release
