"""The images the platform runs on each GPU pool, and the refusal of an Arm64 pool that would get an x86-only one.

Checked before the platform registers anything: an image without an arm64 build only fails on the node, as a
crash-looping agent (`exec format error`) on an expensive Grace-Blackwell VM. Platforms per image:
config/image_platforms.py.
"""

from aks_gpu_platform.config.gpu import GpuPoolConfig
from aks_gpu_platform.config.image_platforms import ARM64, require_arm64
from aks_gpu_platform.config.platform import PlatformConfig

from .dra_driver import DRA_DRIVER_IMAGE
from .gpu_health import NVSENTINEL_VERSION
from .gpu_smoke_test import CUDA_IMAGE
from .gpu_stack import DEVICE_PLUGIN_CHART, GPU_OPERATOR_CHART, NETWORK_OPERATOR_NFD_IMAGE, RDMA_SHARED_DEVICE_PLUGIN
from .gpu_validation import DCGM_IMAGE, PYTORCH_IMAGE
from .lustre_storage import CSI_DRIVER_VERSION
from .registry import DCGM_UPSTREAM

# NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml: the operands that run on every GPU node.
GPU_OPERATOR_OPERANDS = {
    "GPU Operator driver": "nvcr.io/nvidia/driver:595.91.07",
    "GPU Operator container toolkit": "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
    "GPU Operator device plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
    "GPU Operator validator": f"nvcr.io/nvidia/gpu-operator:{GPU_OPERATOR_CHART[2]}",
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
        images.update(GPU_OPERATOR_OPERANDS)
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
