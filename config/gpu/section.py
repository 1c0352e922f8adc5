"""GPU section: the GPU node pools and the cluster-wide GPU software stack."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..catalog.cold_start import ARTIFACT_STREAMING_SOURCE, LOCAL_NVME, local_nvme
from ..catalog.gpu_sizes import GPU_SKUS, GpuSku, closest_gpu_sizes, gpu_sku
from ..cluster.node_pools import VM_SIZE_PATTERN, AutoscaledPoolConfig
from ..errors import field_error
from ..types import HashedPoolName
from .validation import PoolValidationConfig

GpuStackMode = Literal["devicePlugin", "gpuOperator", "aksManaged"]
# The AKS API's gpuInstanceProfile values (GPUInstanceProfile enum of the AgentPool API); which a
# size supports and what each makes of its GPUs is in the catalog.
MigProfile = Literal["MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g"]
SpotEvictionPolicy = Literal["Delete", "Deallocate"]
SharingMode = Literal["timeSlicing", "mps"]

TAINT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./-]{0,252}=[A-Za-z0-9_.-]{0,63}:(NoSchedule|PreferNoSchedule|NoExecute)$")
# Keys the platform sets itself: the GPU taint and the spot taint AKS adds to Spot pools.
RESERVED_TAINT_KEYS = frozenset({"sku", "kubernetes.azure.com/scalesetpriority"})


class SpotConfig(ConfigModel):
    """Spot VMs: up to ~90% cheaper, evicted when Azure needs the capacity back."""

    eviction_policy: SpotEvictionPolicy = Field(
        default="Delete", description="Delete frees quota on eviction; Deallocate keeps disks but still holds quota"
    )
    max_price: float = Field(
        default=-1, description="USD per hour per VM; -1 caps at the on-demand price (evicted only for capacity)"
    )

    @model_validator(mode="after")
    def _check_price(self) -> SpotConfig:
        if self.max_price != -1 and self.max_price <= 0:
            raise field_error("maxPrice", self.max_price, "must be -1 (on-demand cap) or a positive USD price")
        return self


class GpuSharingConfig(ConfigModel):
    """Several pods on one GPU through NVIDIA's device plugin: each GPU is advertised `replicas` times.

    Follows NVIDIA/k8s-device-plugin v0.20.0 api/config/v1 (sharing.go, replicas.go): time-slicing and MPS are
    mutually exclusive and apply to every GPU of a node; a resource needs at least 2 replicas.
    """

    mode: SharingMode = Field(
        description="timeSlicing: CUDA time-slicing, no memory or fault isolation between pods; mps: CUDA MPS, "
        "each pod limited to 1/replicas of the GPU's memory and compute (not on MIG pools)"
    )
    replicas: int = Field(
        ge=2,
        le=48,
        description="nvidia.com/gpu advertised per physical GPU (or MIG slice); 2 to 48 (the plugin needs 2 or "
        "more; 48 client contexts per GPU is MPS's limit on Volta and later)",
    )

    @property
    def config_name(self) -> str:
        """Name of the device plugin configuration (and value of the node label that selects it)."""
        return f"{'time-slicing' if self.mode == 'timeSlicing' else 'mps'}-{self.replicas}"


# A registry host, a repository and a tag or digest: a moving tag would re-pull nothing the workload later runs.
PRE_PULL_IMAGE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9_.-]{1,128}|@sha256:[0-9a-f]{64})$")


class ColdStartConfig(ConfigModel):
    """What shortens the time from scale-up to a useful GPU node; the plan prints the budget with each switch."""

    artifact_streaming: bool = Field(
        default=False,
        description="Budget this pool's ACR images as streamed (AKS Artifact Streaming; Linux amd64 images only, so "
        "not on Arm64 sizes): the platform registry is Premium; enable it per repository and on the pool with the "
        "commands in docs/gpu-pools.md (the AgentPool API azure-native 3.29 sends has no field for it)",
    )
    pre_pull_images: list[str] = Field(
        default_factory=list,
        description="Images a DaemonSet pulls onto every new node of the pool as soon as it joins (each needs "
        "/bin/sh); it never holds back other pods",
    )
    nvme_cache: bool = Field(
        default=False,
        description="Budget weights read from a cache on the size's local NVMe disks after the first read "
        "(sizes with NVMe in config/catalog/cold_start.py)",
    )
    warm_standby: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="Nodes kept up to skip provisioning, an explicit costed choice; needs minCount >= warmStandby",
    )
    weights_gib: float | None = Field(
        default=None,
        alias="weightsGiB",
        gt=0,
        description="Weights or data a job on this pool reads before it starts (GiB), for the plan's budget",
    )

    @model_validator(mode="after")
    def _check_images(self) -> ColdStartConfig:
        for i, image in enumerate(self.pre_pull_images):
            if not PRE_PULL_IMAGE.match(image):
                raise field_error(
                    f"prePullImages[{i}]",
                    image,
                    "a pinned image reference: registry/repository:tag or @sha256:<digest>",
                )
        if len(set(self.pre_pull_images)) != len(self.pre_pull_images):
            raise field_error("prePullImages", self.pre_pull_images, "each image may appear once")
        return self


class GpuPoolConfig(AutoscaledPoolConfig):
    """One GPU node pool; minCount 0 lets the autoscaler scale it from zero."""

    name: HashedPoolName
    vm_size: str = Field(
        pattern=VM_SIZE_PATTERN,
        description="GPU VM size from the GPU catalog (config/catalog/gpu_sizes.py), e.g. Standard_NC24ads_A100_v4; "
        "fixed at pool creation",
    )
    min_count: int = Field(
        default=0, ge=0, le=1000, description="Fewest nodes kept; 0 scales the pool from zero (AKS: 0-1000 per pool)"
    )
    priority: Literal["Regular", "Spot"] = Field(
        default="Regular", description="Spot: evictable VMs at a discount (AKS taints the nodes); fixed at creation"
    )
    spot: SpotConfig | None = Field(default=None, description="Spot settings; only with priority Spot")
    mig_profile: MigProfile | None = Field(default=None, description="MIG instance profile applied to every GPU")
    infiniband: bool = Field(default=False, description="Use the SKU's InfiniBand fabric (RDMA); single zone only")
    taints: list[str] = Field(default_factory=list, description="Extra taints, key=value:Effect")
    sharing: GpuSharingConfig | None = Field(
        default=None,
        description="Share each GPU between pods (time-slicing or MPS); quotas, autoscaler templates and cost then "
        "count the shared nvidia.com/gpu a node advertises. devicePlugin and gpuOperator modes only",
    )
    validation: PoolValidationConfig = Field(
        default_factory=PoolValidationConfig, description="Post-provision checks `pulumi up` runs on this pool"
    )
    cold_start: ColdStartConfig = Field(
        default_factory=ColdStartConfig,
        description="Cold-start switches (artifact streaming, image pre-pull, NVMe cache, warm standby) and the "
        "weights size the plan's budget reads",
    )

    @property
    def sku(self) -> GpuSku:
        found = gpu_sku(self.vm_size)
        assert found is not None, "validated by _check_gpu"
        return found

    @model_validator(mode="after")
    def _check_gpu(self) -> GpuPoolConfig:
        sku = gpu_sku(self.vm_size)
        if sku is None:
            close = closest_gpu_sizes(self.vm_size)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise field_error(
                "vmSize",
                self.vm_size,
                f"not a GPU size of the catalog; {hint}The catalog (config/catalog/gpu_sizes.py) has: "
                f"{sorted(GPU_SKUS)}",
            )
        if sku.vendor == "amd":
            self._check_amd(sku)
        if self.mig_profile is not None and sku.mig_slice(self.mig_profile) is None:
            allowed = [f"{s.profile} ({s.per_gpu} x {s.nvidia_profile} per GPU)" for s in sku.mig]
            raise field_error(
                "migProfile",
                self.mig_profile,
                f"{self.vm_size} ({sku.gpu_model}) supports MIG profiles: "
                + (", ".join(allowed) or "none (AKS partitions only A100, H100 and H200 GPUs)"),
            )
        if self.infiniband and not sku.infiniband:
            ib = sorted(size for size, s in GPU_SKUS.items() if s.infiniband)
            raise field_error("infiniband", self.infiniband, f"{self.vm_size} has no InfiniBand; IB sizes: {ib}")
        if self.infiniband and len(self.zones) != 1:
            raise field_error("zones", self.zones, "an InfiniBand pool is one IB fabric: exactly one zone")
        if self.spot is not None and self.priority != "Spot":
            raise field_error("spot", self.spot.as_settings(), "only allowed with priority Spot")
        if "gpu-model" in self.labels:
            raise field_error("labels", ["gpu-model"], "gpu-model is set by the platform from the SKU catalog")
        for i, taint in enumerate(self.taints):
            if not TAINT.match(taint):
                raise field_error(f"taints[{i}]", taint, "must be key=value:NoSchedule|PreferNoSchedule|NoExecute")
            if taint.split("=", 1)[0] in RESERVED_TAINT_KEYS:
                raise field_error(f"taints[{i}]", taint, f"keys {sorted(RESERVED_TAINT_KEYS)} are set by the platform")
        if len(set(self.taints)) != len(self.taints):
            raise field_error("taints", self.taints, "each taint may appear once")
        self._check_sharing()
        return self

    @model_validator(mode="after")
    def _check_multi_node_nvlink(self) -> GpuPoolConfig:
        # kubernetes/autoscaler cluster-autoscaler-1.36.1, cloudprovider/azure: azure_instance_types.go has no
        # Grace-Blackwell size (the SKU API is its only source for them) and ScaleSet.TemplateNodeInfo builds the
        # template with no ResourceSlices, so a pod claiming a ComputeDomain channel never fits a pool at zero.
        # With a node up, the autoscaler copies that node (its slices included) for the next one.
        sku = gpu_sku(self.vm_size)
        if sku is not None and sku.multi_node_nvlink and self.min_count < 1:
            raise field_error(
                "minCount",
                self.min_count,
                f"{self.vm_size} shares NVLink across VMs through ComputeDomains (DRA); the cluster autoscaler "
                "cannot scale such a pool up from zero (no template node with DRA devices): minCount must be 1 or more",
            )
        return self

    def _check_amd(self, sku: GpuSku) -> None:
        """What an AMD pool cannot have: the features built on NVIDIA's driver, libraries and images."""
        why = f"{self.vm_size} has AMD {sku.gpu_model} GPUs"
        if self.mig_profile is not None:
            raise field_error(
                "migProfile",
                self.mig_profile,
                f"{why}: MIG is NVIDIA's partitioning (AMD partitions through its GPU Operator's compute and memory "
                "partition profiles, not managed here); leave migProfile unset",
            )
        if self.validation.dcgm_diag:
            raise field_error(
                "validation.dcgmDiag", True, f"{why}: DCGM diagnostics need NVIDIA's driver and DCGM; set it false"
            )
        if self.validation.nccl_all_reduce:
            raise field_error(
                "validation.ncclAllReduce",
                True,
                f"{why}: the probe runs NVIDIA's nccl-tests image (AMD's RCCL tests are not wired); set it false",
            )
        if self.sharing is not None:
            raise field_error(
                "sharing",
                self.sharing.as_settings(),
                f"{why}: time-slicing and MPS are NVIDIA device plugin features; leave sharing unset",
            )
        if self.os_sku == "AzureLinux":
            # use-amd-gpus.md (azure-aks-docs 7cbe8aca): AzureLinux is not supported with AMD GPU; AMD's GPU Operator
            # v1.5.1 builds its driver for Ubuntu 22.04 and 24.04 (internal/kmmmodule/kmmmodule.go driverLabels).
            raise field_error(
                "osSku",
                self.os_sku,
                f"{why}: AKS supports AMD GPUs on Ubuntu only and AMD's GPU Operator builds its driver for Ubuntu; "
                "use Ubuntu or Ubuntu2204",
            )

    @property
    def vendor(self) -> str:
        """`nvidia` or `amd`, from the catalog."""
        return self.sku.vendor

    def _check_sharing(self) -> None:
        if self.sharing is None:
            return
        if self.sharing.mode == "mps" and self.mig_profile is not None:
            # NVIDIA/k8s-device-plugin v0.20.0 README, "With CUDA MPS": not supported on devices with MIG enabled.
            raise field_error(
                "sharing.mode",
                "mps",
                f"MPS cannot share MIG slices ({self.mig_profile}): use timeSlicing, or drop migProfile",
            )
        # Both checks hold every GPU of a node. A shared node advertises each GPU `replicas` times, and the plugin
        # refuses more than one shared device per container (failRequestsGreaterThanOne, which MPS forces and the
        # platform sets for time-slicing); MPS also limits each client to 1/replicas of the GPU.
        for check, on in (("dcgmDiag", self.validation.dcgm_diag), ("ncclAllReduce", self.validation.nccl_all_reduce)):
            if on:
                raise field_error(
                    f"validation.{check}",
                    True,
                    f"needs whole, unshared GPUs; this pool shares each GPU ({self.sharing.mode}): run it on an "
                    "unshared pool of the same size",
                )

    @model_validator(mode="after")
    def _check_cold_start(self) -> GpuPoolConfig:
        cold = self.cold_start
        sku = gpu_sku(self.vm_size)
        if cold.artifact_streaming and sku is not None and sku.arch != "amd64":
            raise field_error(
                "coldStart.artifactStreaming",
                cold.artifact_streaming,
                f"{self.vm_size} is an {sku.arch} size, and Artifact Streaming serves Linux AMD64 images only "
                f'("ARM64 images aren\'t supported", {ARTIFACT_STREAMING_SOURCE}): leave it off on this pool',
            )
        if cold.nvme_cache and local_nvme(self.vm_size) is None:
            raise field_error(
                "coldStart.nvmeCache",
                cold.nvme_cache,
                f"{self.vm_size} has no local NVMe figure in config/catalog/cold_start.py; sizes with NVMe: "
                f"{sorted(LOCAL_NVME)}",
            )
        if cold.warm_standby > self.min_count:
            raise field_error(
                "coldStart.warmStandby",
                cold.warm_standby,
                f"a warm standby node is one the autoscaler keeps up: raise minCount ({self.min_count}) to at least "
                f"{cold.warm_standby}, or lower warmStandby",
            )
        return self

    @property
    def spot_settings(self) -> SpotConfig:
        return self.spot or SpotConfig()


class GpuStackConfig(ConfigModel):
    """The GPU software every GPU pool shares."""

    mode: GpuStackMode = Field(
        default="devicePlugin",
        description="devicePlugin: AKS installs the driver, NVIDIA device plugin exposes GPUs; "
        "gpuOperator: pools skip the AKS driver and NVIDIA's GPU Operator manages the stack; "
        "aksManaged: AKS installs driver, device plugin and DCGM exporter and runs GPU health checks "
        "(preview: fixed-size pools, no per-pod GPU metrics; docs/gpu-operations.md)",
    )
    operator_dcgm: bool = Field(
        default=False, description="gpuOperator mode only: let the operator run the DCGM exporter for monitoring"
    )
    smoke_test: bool = Field(default=True, description="Run a one-GPU nvidia-smi Job on every pool change")

    @model_validator(mode="after")
    def _check_dcgm(self) -> GpuStackConfig:
        if self.operator_dcgm and self.mode != "gpuOperator":
            raise field_error("operatorDcgm", self.operator_dcgm, "only with mode gpuOperator")
        return self
