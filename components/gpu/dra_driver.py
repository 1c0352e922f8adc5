"""NVIDIA's DRA driver for multi-node NVLink: ComputeDomains on Grace-Blackwell pools.

GPUs of several VMs in one NVLink rack talk through IMEX channels; NVIDIA's DRA driver hands a job's pods one
channel each through a ComputeDomain (resource.nvidia.com/v1beta1): the controller creates the domain's
ResourceClaimTemplate and an IMEX daemon on the nodes the pods land on. Installed only when a pool's size has
a multi-node NVLink domain (config/catalog/gpu_sizes.py).

Chart `dra-driver-nvidia-gpu` 0.4.0, NVIDIA/k8s-dra-driver-gpu tag v0.4.0 (2026-05-15, the newest release),
deployments/helm/dra-driver-nvidia-gpu, published as oci://registry.k8s.io/dra-driver-nvidia/charts
(docs/install.md at that tag). Read at that tag:
- templates/validation.yaml fails the install while `resources.gpus.enabled` is true without
  `gpuResourcesEnabledOverride`: GPUs stay with the device plugin (or the GPU Operator's), so Kueue quotas,
  the autoscaler template and every GPU pod keep counting `nvidia.com/gpu`; only ComputeDomains go through DRA.
- templates/deviceclass-compute-domain-*.yaml create the DeviceClasses `compute-domain-daemon.nvidia.com` and
  `compute-domain-default-channel.nvidia.com` with the release (no DeviceClass of ours is needed).
- templates/kubeletplugin.yaml: nodeSelector, affinity and tolerations from `kubeletPlugin.*`; the default
  affinity selects NFD or GPU Operator labels that an AKS-driver node does not carry, so it is replaced by the
  Grace-Blackwell pools' labels. No runtimeClassName anywhere in the chart. The compute-domains container's
  startupProbe allows 600 x 1 s.
- templates/controller.yaml: `controller.*` scheduling; the IMEX daemon DaemonSet the controller creates per
  domain (templates/compute-domain-daemon.tmpl.yaml in the image) tolerates every taint and selects nodes the
  controller labels at run time.
- `resourceApiVersion` pins resource.k8s.io/v1 (DRA GA since Kubernetes 1.34) instead of Helm's capability probe.

The GPU Operator v26.7.0 can run the driver too (`gpuCluster.deployCR`), but only instead of its ClusterPolicy,
as an experimental stack whose scheduling "is opinionated and not configurable" (deployments/gpu-operator
values.yaml): it could not tolerate our GPU taint, so the standalone chart is used in every stack mode.
"""

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored_repository_and_tag
from aks_gpu_platform.config.gpu.scheduling import GPU_POOL_NAME_LABEL_KEY, cpu_node_selector, gpu_tolerations
from aks_gpu_platform.config.gpu.section import GpuPoolConfig, GpuStackMode

from ..shared.workloads import platform_namespace

DRA_DRIVER_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
DRA_DRIVER_VERSION = "0.4.0"
# values.yaml image.repository; the tag is "v" + appVersion (templates/_helpers.tpl fullimage).
DRA_DRIVER_IMAGE = f"registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v{DRA_DRIVER_VERSION}"
DRA_DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"
RESOURCE_API_VERSION = "resource.k8s.io/v1"
# templates/deviceclass-compute-domain-default-channel.yaml: the class a ComputeDomain's claim template names.
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
COMPUTE_DOMAIN_API_VERSION = "resource.nvidia.com/v1beta1"
# Kubelet plugin startupProbe (600 x 1 s) after the pod starts, plus the image pull: Pulumi's 300 s default
# would fail the first `pulumi up` on a fresh node.
RELEASE_TIMEOUT_SECONDS = 900
# Where the driver lives: on the host with AKS's driver; under the driver container's root with the Operator's
# (values.yaml nvidiaDriverRoot).
DRIVER_ROOT = {"devicePlugin": "/", "aksManaged": "/", "gpuOperator": "/run/nvidia/driver"}


def multi_node_nvlink_pools(pools: Sequence[GpuPoolConfig]) -> list[GpuPoolConfig]:
    """Pools whose NVLink domain spans VMs: the ones that need the DRA driver."""
    return [p for p in pools if p.sku.multi_node_nvlink]


def _on_pools(pool_names: list[str]) -> dict[str, Any]:
    expression = {"key": GPU_POOL_NAME_LABEL_KEY, "operator": "In", "values": pool_names}
    return {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
    }


def dra_driver_values(
    mode: GpuStackMode, nvlink_pools: Sequence[GpuPoolConfig], all_pools: Sequence[GpuPoolConfig]
) -> dict[str, Any]:
    """Values of the chart (keys as deployments/helm/dra-driver-nvidia-gpu reads them at v0.4.0)."""
    return {
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "resourceApiVersion": RESOURCE_API_VERSION,
        "nvidiaDriverRoot": DRIVER_ROOT[mode],
        # One image for every pod (templates/_helpers.tpl fullimage: image.repository:image.tag).
        "image": mirrored_repository_and_tag(DRA_DRIVER_IMAGE),
        "controller": {"nodeSelector": cpu_node_selector()},
        "kubeletPlugin": {
            "affinity": {"nodeAffinity": _on_pools([p.name for p in nvlink_pools])},
            # Replaces the chart's nvidia.com/gpu toleration: every GPU pool taint (the same list as every agent).
            "tolerations": gpu_tolerations(all_pools),
        },
    }


def dra_driver_release(
    name: str, mode: GpuStackMode, pools: Sequence[GpuPoolConfig], opts: pulumi.ResourceOptions
) -> k8s.helm.v3.Release | None:
    """The DRA driver release when some pool has multi-node NVLink, else None."""
    nvlink_pools = multi_node_nvlink_pools(pools)
    if not nvlink_pools:
        return None
    # The kubelet plugin is privileged and mounts the node's plugin and CDI directories.
    namespace = platform_namespace(f"{name}-namespace", DRA_DRIVER_NAMESPACE, "privileged", opts)
    return k8s.helm.v3.Release(
        name,
        chart=DRA_DRIVER_CHART,
        version=DRA_DRIVER_VERSION,
        namespace=DRA_DRIVER_NAMESPACE,
        timeout=RELEASE_TIMEOUT_SECONDS,
        values=dra_driver_values(mode, nvlink_pools, pools),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespace])),
    )
