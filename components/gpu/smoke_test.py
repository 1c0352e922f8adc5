"""A one-GPU `nvidia-smi` Job that `pulumi up` waits for, so broken GPU scheduling fails the deployment.

pulumi-kubernetes awaits a Job until it completes (the `pulumi.com/skipAwait` annotation is
deliberately not set), so a Job that cannot be scheduled or whose `nvidia-smi` fails makes
`pulumi up` fail loudly. The Job's name carries a hash of the GPU pool and stack settings: when
they change, the name changes, Pulumi replaces the Job and the test runs again. No TTL is set,
so a finished Job stays and is not recreated on every run.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.catalog.images import mirrored
from aks_gpu_platform.config.gpu.scheduling import (
    GPU_RESOURCE,
    SCANNED_CONTAINER_SECURITY_CONTEXT,
    gpu_pod_scheduling,
    restricted_pod_security_context,
)
from aks_gpu_platform.config.gpu.section import GpuPoolConfig

from ..shared.context import ClusterHandle

CUDA_IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
# Scale from zero, node boot and driver install take minutes; fail after 30.
DEADLINE_SECONDS = 1800
# checkov skips, each with its reason (the scan in tests/platform/test_checkov.py reads them from the object).
CHECKOV_SKIPS = {
    "checkov.io/skip1": "CKV_K8S_43=the CUDA base tag is multi-arch and pinned by version; a digest would pin one arch",
    "checkov.io/skip2": "CKV2_K8S_6=the one-shot smoke test opens no port and calls nothing; no NetworkPolicy to scope",
}
NON_ROOT_UID = 10001  # above 10000, clear of host users


class GpuSmokeTestArgs(TypedDict):
    namespace: pulumi.Input[str]
    """Namespace to run in (the GPU stack's `gpu-resources`)."""
    fingerprint: Mapping[str, Any]
    """Settings whose change must rerun the test (the GPU pools and stack sections)."""
    gpu_pools: Sequence[GpuPoolConfig]
    """The GPU pools: the test tolerates all their taints, so it runs on any GPU pool."""
    cluster: ClusterHandle
    """The cluster; the Job is deleted with it."""
    depends_on: Sequence[pulumi.Resource]
    """GPU pools and the GPU stack releases the test needs."""


def smoke_test_name(fingerprint: Mapping[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True, default=str).encode()).hexdigest()
    return f"gpu-smoke-test-{digest[:8]}"


def smoke_test_pod_spec(gpu_pools: Sequence[GpuPoolConfig]) -> dict[str, Any]:
    """The design notes' `gpu-test` Pod as a Job template, restricted and non-root, fit for any GPU pool."""
    return {
        **gpu_pod_scheduling(gpu_pools),
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": restricted_pod_security_context(NON_ROOT_UID),
        "containers": [
            {
                "name": "nvidia-smi",
                "image": mirrored(CUDA_IMAGE),
                "imagePullPolicy": "Always",
                "command": ["nvidia-smi"],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "128Mi"},
                    "limits": {"cpu": "500m", "memory": "256Mi", GPU_RESOURCE: "1"},
                },
                "securityContext": SCANNED_CONTAINER_SECURITY_CONTEXT,
            }
        ],
    }


class GpuSmokeTest(pulumi.ComponentResource):
    """Runs `nvidia-smi` on one GPU of any GPU pool and fails the deployment if it cannot."""

    job_name: str
    """Name of the Job (changes with the GPU settings)."""

    def __init__(self, name: str, args: GpuSmokeTestArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("aks-gpu-platform:index:GpuSmokeTest", name, None, opts)
        gpu_pools = list(args["gpu_pools"])
        self.job_name = smoke_test_name(args["fingerprint"])
        spec: k8s.batch.v1.JobSpecArgsDict = {
            "backoff_limit": 2,
            "active_deadline_seconds": DEADLINE_SECONDS,
            "template": {
                "metadata": {"labels": {"app": "gpu-smoke-test"}, "annotations": CHECKOV_SKIPS},
                "spec": cast(k8s.core.v1.PodSpecArgsDict, smoke_test_pod_spec(gpu_pools)),
            },
        }
        k8s.batch.v1.Job(
            f"{name}-job",
            metadata={
                "name": self.job_name,
                "namespace": args["namespace"],
                "labels": {"app": "gpu-smoke-test"},
                "annotations": CHECKOV_SKIPS,
            },
            spec=spec,
            opts=pulumi.ResourceOptions.merge(
                args["cluster"].k8s_options(self), pulumi.ResourceOptions(depends_on=list(args["depends_on"]))
            ),
        )
        self.register_outputs({"job_name": self.job_name})
