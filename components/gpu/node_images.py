"""The images the platform runs on each GPU pool, and the refusal of an Arm64 pool that would get an x86-only one.

Checked before the platform registers anything: an image without an arm64 build only fails on the node, as a
crash-looping agent (`exec format error`) on an expensive Grace-Blackwell VM. Platforms per image:
config/catalog/image_platforms.py.
"""

from aks_gpu_platform.config.catalog.image_platforms import ARM64, require_arm64
from aks_gpu_platform.config.gpu.node_image import gpu_pool_os
from aks_gpu_platform.config.gpu.section import GpuPoolConfig
from aks_gpu_platform.config.platform import PlatformConfig

from ..monitoring.registry import DCGM_UPSTREAM
from ..storage.lustre import CSI_DRIVER_VERSION
from .dra_driver import DRA_DRIVER_IMAGE
from .health import NVSENTINEL_VERSION
from .nvidia_stack import DEVICE_PLUGIN_CHART, GPU_OPERATOR_CHART, NETWORK_OPERATOR_NFD_IMAGE, RDMA_SHARED_DEVICE_PLUGIN
from .smoke_test import CUDA_IMAGE
from .validation import DCGM_IMAGE, PYTORCH_IMAGE

# NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml: the operands that run on every GPU node. The
# driver's tag gets the node's OS appended (controllers/object_controls.go resolveDriverTag); the driver manager is
# the driver pod's init container; GPU Feature Discovery runs the device plugin's image; the MIG manager lands on
# MIG-capable GPUs (A100, H100, H200, Blackwell); the worker of the chart's node-feature-discovery subchart (0.19.0,
# image tag its appVersion) on every node.
GPU_OPERATOR_DRIVER = "nvcr.io/nvidia/driver:595.91.07"
GPU_OPERATOR_OPERANDS = {
    "GPU Operator driver manager": "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0",
    "GPU Operator container toolkit": "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
    "GPU Operator device plugin and GPU Feature Discovery": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
    "GPU Operator validator": f"nvcr.io/nvidia/gpu-operator:{GPU_OPERATOR_CHART[2]}",
    "GPU Operator MIG manager": "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0",
    "GPU Operator node-feature-discovery worker": "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
}
# The same values.yaml: the DCGM host engine and exporter the operator runs with `operatorDcgm`.
GPU_OPERATOR_DCGM = {
    "GPU Operator DCGM (gpuStack.operatorDcgm)": "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04",
    "GPU Operator DCGM exporter (gpuStack.operatorDcgm)": "nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless",
}
# distros/kubernetes/nvsentinel at v1.19.0: the agents that run on GPU nodes.
NVSENTINEL_AGENTS = ("platform-connectors", "syslog-health-monitor", "metadata-collector", "gpu-health-monitor")


def gpu_pool_images(cfg: PlatformConfig, pool: GpuPoolConfig) -> dict[str, str]:
    """Role -> image of every pod the platform itself runs (or may place) on the nodes of `pool`; a role that a
    setting switches on names that setting, so a refusal says what to change."""
    images: dict[str, str] = {}
    stack = cfg.gpu_stack
    if stack.mode == "devicePlugin":
        images["NVIDIA device plugin"] = f"nvcr.io/nvidia/k8s-device-plugin:v{DEVICE_PLUGIN_CHART[2]}"
    elif stack.mode == "gpuOperator":
        images["GPU Operator driver"] = f"{GPU_OPERATOR_DRIVER}-{gpu_pool_os(cfg.cluster.kubernetes_version, pool)}"
        images.update(GPU_OPERATOR_OPERANDS)
        if stack.operator_dcgm:
            images.update(GPU_OPERATOR_DCGM)
    if stack.mode != "aksManaged" and not stack.operator_dcgm:
        images["DCGM exporter"] = f"{DCGM_UPSTREAM}:{cfg.monitoring.dcgm_exporter.image_tag}"
    if stack.smoke_test:
        images["GPU smoke test (gpuStack.smokeTest)"] = CUDA_IMAGE
    if pool.validation.dcgm_diag:
        images["DCGM diagnostics (the pool's validation.dcgmDiag)"] = DCGM_IMAGE
    if pool.validation.nccl_all_reduce:
        images["NCCL all-reduce check (the pool's validation.ncclAllReduce)"] = PYTORCH_IMAGE
    if pool.infiniband:
        plugin = RDMA_SHARED_DEVICE_PLUGIN
        images["RDMA shared device plugin"] = f"{plugin['repository']}/{plugin['image']}:{plugin['version']}"
        if stack.mode != "gpuOperator":
            images["Network Operator node-feature-discovery worker (the pool's infiniband)"] = (
                NETWORK_OPERATOR_NFD_IMAGE
            )
    if pool.sku.multi_node_nvlink:
        images["NVIDIA DRA driver"] = DRA_DRIVER_IMAGE
    if cfg.gpu_health.remediation.enabled:
        for agent in NVSENTINEL_AGENTS:
            images[f"NVSentinel {agent} (gpuHealth.remediation.enabled)"] = (
                f"ghcr.io/nvidia/nvsentinel/{agent}:{NVSENTINEL_VERSION}"
            )
    lustre = cfg.storage.lustre
    if lustre is not None and lustre.enabled:
        images["Lustre CSI node (storage.lustre.enabled)"] = (
            f"mcr.microsoft.com/oss/v2/kubernetes-csi/azurelustre-csi:v{CSI_DRIVER_VERSION}"
        )
    sample = cfg.autoscaling.sample_inference
    if sample.enabled:
        images["inference sample (autoscaling.sampleInference.image)"] = sample.image
    return images


def check_arm64_images(cfg: PlatformConfig) -> None:
    """ConfigError naming the pool and image when an Arm64 pool would run an image without an arm64 build."""
    for i, pool in enumerate(cfg.gpu_pools):
        if pool.sku.arch == ARM64:
            require_arm64(f"gpuPools[{i}]", pool.name, gpu_pool_images(cfg, pool))
