"""Pulls the images a GPU pool's workloads run onto each new node of the pool as soon as it joins.

One DaemonSet per pool with `coldStart.prePullImages`: an init container per image that only exits
(`/bin/sh -c true`, so each image needs a shell), then a pause container that keeps the pod, and so the
images, on the node. The kubelet pulls an init container's image before running it, so by the time the
device plugin advertises the GPUs and the workload pod lands, its image is on the node or on its way.

It never holds other pods back: no startup taint, no readiness gate. An image that cannot be pulled or has
no shell leaves this pod in Init with back-off, and only this pod; the workload then pulls as it would have.
"""

from collections.abc import Sequence
from typing import TypedDict

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_POOL_NAME_LABEL_KEY,
    SCANNED_CONTAINER_SECURITY_CONTEXT,
    gpu_node_selector,
    gpu_tolerations,
    restricted_pod_security_context,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig

from ..monitoring.aks_exporter import PAUSE_IMAGE
from ..shared.context import ClusterHandle

NON_ROOT_UID = 10001  # above 10000, clear of host users
# checkov skips, each with its reason (the scan in tests/platform/test_checkov.py reads them from the object).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=teams name their images by tag or digest; streaming (coldStart) needs tags",
    "checkov.io/skip2": "CKV2_K8S_6=the pods only pull and pause; they open no port and call nothing",
    "checkov.io/skip3": "CKV_K8S_8=a pause container has nothing to probe for liveness",
    "checkov.io/skip4": "CKV_K8S_9=a pause container has nothing to probe for readiness; nothing waits on it",
    "checkov.io/skip5": "CKV_K8S_15=IfNotPresent: the point is to pull once; Always ties every restart to the registry",
}
SMALL = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}


class ImagePrepullArgs(TypedDict):
    namespace: pulumi.Input[str]
    """Namespace of the DaemonSets (the GPU stack's)."""
    gpu_pools: Sequence[GpuPoolConfig]
    """Every GPU pool: a DaemonSet for each that names images, tolerating the taints of all of them."""
    cluster: ClusterHandle
    """The cluster; the DaemonSets are deleted with it."""
    depends_on: Sequence[pulumi.Resource]
    """What creates the namespace (the GPU stack's releases)."""


def prepull_name(pool: GpuPoolConfig) -> str:
    return f"image-prepull-{pool.name}"


def prepull_pod_spec(pool: GpuPoolConfig, gpu_pools: Sequence[GpuPoolConfig]) -> dict[str, object]:
    """Runs on every node of `pool` only; tolerates every GPU pool's taints (the scheduling contract's list)."""
    return {
        "nodeSelector": {**gpu_node_selector(), GPU_POOL_NAME_LABEL_KEY: pool.name},
        "tolerations": gpu_tolerations(gpu_pools),
        "automountServiceAccountToken": False,
        "securityContext": restricted_pod_security_context(NON_ROOT_UID),
        "initContainers": [
            {
                "name": f"pull-{i}",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/sh", "-c", "true"],
                "resources": SMALL,
                "securityContext": dict(SCANNED_CONTAINER_SECURITY_CONTEXT),
            }
            for i, image in enumerate(pool.cold_start.pre_pull_images)
        ],
        "containers": [
            {
                "name": "pause",
                "image": mirrored(PAUSE_IMAGE),
                "imagePullPolicy": "IfNotPresent",
                "resources": SMALL,
                "securityContext": dict(SCANNED_CONTAINER_SECURITY_CONTEXT),
            }
        ],
    }


class ImagePrepull(pulumi.ComponentResource):
    daemon_sets: list[k8s.apps.v1.DaemonSet]
    """One per pool that names images to pre-pull."""

    def __init__(self, name: str, args: ImagePrepullArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:ImagePrepull", name, None, opts)
        cluster = args["cluster"]
        self.daemon_sets = []
        for pool in args["gpu_pools"]:
            if not pool.cold_start.pre_pull_images:
                continue
            labels = {"app.kubernetes.io/name": prepull_name(pool), "app.kubernetes.io/part-of": "gpu-cold-start"}
            self.daemon_sets.append(
                k8s.apps.v1.DaemonSet(
                    f"{name}-{pool.name}",
                    metadata={
                        "name": prepull_name(pool),
                        "namespace": args["namespace"],
                        "labels": labels,
                        "annotations": CHECKOV_SKIPS,
                    },
                    spec={
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels, "annotations": CHECKOV_SKIPS},
                            "spec": prepull_pod_spec(pool, args["gpu_pools"]),  # pyright: ignore[reportArgumentType]
                        },
                    },
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        provider=cluster.provider,
                        deleted_with=cluster.cluster,
                        depends_on=list(args["depends_on"]),
                    ),
                )
            )
        self.register_outputs({})
