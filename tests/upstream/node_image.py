"""The AKS node image a pool boots, modelled from Azure/AgentBaker, and what the platform then has to bring.

Written from Azure/AgentBaker at 06836ee2 (2026-08-21), without reading config/gpu/node_image.py (the platform's own
rules; tests/gpu/test_node_image.py checks one against the other):
- parts/linux/cloud-init/artifacts/cse_main.sh: a GPU node (`GPU_NODE`, the API's NVIDIA size with driver Install)
  not tagged `SkipGpuDriverInstall` (driver None) runs `ensureGPUDrivers`, then `configureManagedGPUExperience`.
- parts/linux/cloud-init/artifacts/cse_config.sh: `ensureGPUDrivers` (and `validateGPUDrivers`) return at once on
  arm64; `configureManagedGPUExperience` installs and starts the host's nvidia-device-plugin, nvidia-dcgm and
  nvidia-dcgm-exporter services when managed GPU is on; `ensureContainerd` writes the GPU containerd config
  (default runtime nvidia-container-runtime) on a GPU node, the no-GPU one (runc) when the node skips the driver.
- pkg/agent/baker.go: every containerd config template, containerd 1 and 2 alike, starts `version = 2`; the
  containerd-2 templates serve the 24.04 and Azure Linux 3 distros (datamodel/types.go IsContainerdV2Distro).
- parts/common/components.json: containerd 1.7.34 on Ubuntu 22.04, 2.3.3 on 24.04, containerd2 2.2.4 on Azure
  Linux 3.0.
- pkg/agent/datamodel/gpu_components.go `ConvergedGPUDriverSizes`: the NVads A10 v5 (and NCads A10 v4) sizes take
  the converged GRID driver; "installing vanilla cuda drivers will fail to install with opaque errors".
- vhdbuilder/packer/install-dependencies.sh `configureGraceBlackwell`: NVIDIA GB only on arm64 Ubuntu 24.04.
  (That image, with a baked driver and host device plugin, serves subscriptions changed for it only.)
Which OS an OS SKU means per Kubernetes minor is the resource provider's, published in MicrosoftDocs/azure-aks-docs
articles/aks/upgrade-os-version.md at fb060abe. And what runs on top:
- containerd (containerd/containerd cmd/containerd/server/config/config.go at d346aeeb): a drop-in whose `version`
  is above the root config's stops containerd ("drop-in config version N higher than root config version M").
- NVIDIA/nvidia-container-toolkit v1.20.0 cmd/nvidia-ctk-installer/container/runtime/runtime.go: config sources
  default to `command` then `file`; `command` is `containerd config dump`, which containerd 2 reports at its
  migrated version (3 or later), so the drop-in is written at that version; `file` reads the root file's.
- NVIDIA/gpu-operator v26.7.0: the driver container's tag ends in the first GPU node's OS tag
  (object_controls.go resolveDriverTag, state_manager.go getGPUNodeOSInfo); NVIDIA/gpu-driver-container d10b41a
  builds Ubuntu 22.04/24.04 and RHEL-family containers, for arm64 too except the signed 22.04 ones, all with
  `DRIVER_TYPE=passthrough` (ubuntu22.04/Dockerfile): the datacenter driver, not a GRID (vGPU guest) one.
- NVIDIA/k8s-dra-driver-gpu v0.4.0 docs/install.md: `nvidiaDriverRoot` is `/` for a host driver and
  `/run/nvidia/driver` for the GPU Operator's driver container.
- NVIDIA/gpu-operator v26.7.0: CDI is on by default (deployments/gpu-operator/values.yaml `cdi.enabled: true`), and
  with CDI the toolkit leaves containerd's default runtime alone (controllers/object_controls.go
  `transformToolkitCtrForCDI` sets NVIDIA_RUNTIME_SET_AS_DEFAULT=false): only pods of RuntimeClass
  `operator.runtimeClass` (default `nvidia`, which the operator creates) reach the driver without asking a GPU.
  Without CDI the toolkit makes `nvidia` the default (nvidia-container-toolkit v1.20.0 runtime.go
  `defaultSetAsDefault = true`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTAINERD_BY_OS = {"ubuntu22.04": "1.7.34", "ubuntu24.04": "2.3.3", "azurelinux3.0": "2.2.4"}
ROOT_CONFIG_VERSION = 2
OPERATOR_DRIVER_OS = {"ubuntu22.04": {"amd64", "arm64"}, "ubuntu24.04": {"amd64", "arm64"}}
HOST_DRIVER_ROOT, OPERATOR_DRIVER_ROOT = "/", "/run/nvidia/driver"
OPERATOR_RUNTIME_CLASS_DEFAULT = "nvidia"
GRID_DRIVER_SIZES = frozenset(
    f"standard_{size}"
    for size in (
        "nv6ads_a10_v5",
        "nv12ads_a10_v5",
        "nv18ads_a10_v5",
        "nv36ads_a10_v5",
        "nv72ads_a10_v5",
        "nv36adms_a10_v5",
        "nc8ads_a10_v4",
        "nc16ads_a10_v4",
        "nc32ads_a10_v4",
    )
)


def operator_driver_installs(vm_size: str, os: str, arch: str) -> bool:
    """Whether NVIDIA's published driver container (passthrough) installs on a node of this size and image."""
    return arch in OPERATOR_DRIVER_OS.get(os, set()) and vm_size.lower() not in GRID_DRIVER_SIZES


def os_of(os_sku: str, minor: str) -> str | None:
    """upgrade-os-version.md at fb060abe: the OS behind an OS SKU at a Kubernetes minor (None: no such image)."""
    m = int(minor.split(".")[1])
    table = {
        "Ubuntu": "ubuntu22.04" if 25 <= m <= 34 else "ubuntu24.04" if 35 <= m <= 37 else None,
        "Ubuntu2204": "ubuntu22.04" if 25 <= m <= 36 else None,
        "AzureLinux": "azurelinux3.0" if m >= 32 else None,
    }
    return table.get(os_sku)


@dataclass(frozen=True)
class NodeImage:
    """What a booted node of the pool has before any pod runs."""

    os: str
    arch: str
    containerd: str
    root_config_version: int
    nvidia_driver: bool
    """AKS installed an NVIDIA driver on the host."""
    nvidia_runtime_default: bool
    """containerd's default runtime is nvidia-container-runtime (AKS's GPU containerd config)."""
    host_gpu_services: tuple[str, ...]
    """systemd services that advertise or export the GPUs (the managed GPU experience)."""
    grace_blackwell_ready: bool
    """AgentBaker supports NVIDIA GB on this OS and architecture."""

    @property
    def containerd_major(self) -> int:
        return int(self.containerd.split(".")[0])


def node_image(os_sku: str, minor: str, arch: str, nvidia: bool, driver: str, managed: bool) -> NodeImage | None:
    """The node a pool boots: `driver` is the AgentPool's gpuProfile.driver, `managed` its managed GPU mode."""
    os = os_of(os_sku, minor)
    if os is None:
        return None
    gpu_node = nvidia and driver == "Install"
    installs_driver = gpu_node and arch != "arm64"
    services = ("nvidia-device-plugin", "nvidia-dcgm", "nvidia-dcgm-exporter") if gpu_node and managed else ()
    return NodeImage(
        os=os,
        arch=arch,
        containerd=CONTAINERD_BY_OS[os],
        root_config_version=ROOT_CONFIG_VERSION,
        nvidia_driver=installs_driver,
        nvidia_runtime_default=gpu_node,
        host_gpu_services=services,
        grace_blackwell_ready=arch == "arm64" and os == "ubuntu24.04",
    )


def toolkit_drop_in_version(node: NodeImage, config_sources: list[str]) -> int:
    """The `version` of the drop-in the GPU Operator's toolkit writes on the node."""
    first = config_sources[0].split("=", 1)[0] if config_sources else "command"
    if first == "command":
        return 2 if node.containerd_major < 2 else 3
    return node.root_config_version


def containerd_starts(node: NodeImage, drop_in_version: int) -> bool:
    return drop_in_version <= node.root_config_version


def driver_reachable(node: NodeImage, runtime_class: str | None, operator: dict[str, Any] | None) -> bool:
    """Whether a pod that asks for no GPU but reads the driver (an exporter, a collector) gets it on the node:
    `operator` is the GPU Operator's chart values when it is installed."""
    if operator is not None and (operator.get("toolkit") or {}).get("enabled", True):
        cdi = (operator.get("cdi") or {}).get("enabled", True)
        operator_class = (operator.get("operator") or {}).get("runtimeClass", OPERATOR_RUNTIME_CLASS_DEFAULT)
        return runtime_class == operator_class or (not runtime_class and not cdi)
    return not runtime_class and node.nvidia_runtime_default
