"""Small in-cluster objects several components create the same way: training namespaces and the
one-shot pods that prove a storage claim mounts."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_platform.config.gpu.scheduling import (
    RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    cpu_node_selector,
    restricted_pod_security_context,
)

PodSecurityLevel = Literal["privileged", "baseline", "restricted"]


def pod_security_labels(enforce: PodSecurityLevel) -> dict[str, str]:
    """The three Pod Security labels of a namespace the platform creates: `enforce` at the level its pods need,
    `audit` and `warn` at `restricted`, so every pod short of restricted is recorded and named at apply."""
    return {
        "pod-security.kubernetes.io/enforce": enforce,
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }


def platform_namespace(
    name: str, namespace: str, enforce: PodSecurityLevel, opts: pulumi.ResourceOptions
) -> k8s.core.v1.Namespace:
    """A namespace a chart installs into, created here with its Pod Security labels before the release (Helm's
    `create_namespace` would create it bare, enforcing nothing). Node agents' namespaces enforce `privileged`
    (host paths, host network, privileged containers), controllers' `baseline`."""
    return k8s.core.v1.Namespace(name, metadata={"name": namespace, "labels": pod_security_labels(enforce)}, opts=opts)


# Training images often run as root: enforce baseline, warn where a pod is not restricted.
TRAINING_POD_SECURITY = pod_security_labels("baseline")
# NCCL over RDMA adds IPC_LOCK, which `baseline` refuses (kubernetes/kubernetes v1.36 staging/src/k8s.io/
# pod-security-admission/policy/check_capabilities_baseline.go) and no level between baseline and privileged allows.
# Such a namespace is left to Azure Policy's baseline with IPC_LOCK added, always Deny
# (components/cluster/azure_policy.py).
MEMORY_LOCKING_POD_SECURITY = pod_security_labels("privileged")
NOBODY = 65534  # the verification pods need no identity of their own


def training_namespace(
    name: str,
    namespace: str,
    opts: pulumi.ResourceOptions,
    labels: Mapping[str, str] | None = None,
    locks_memory: bool = False,
) -> k8s.core.v1.Namespace:
    """A namespace training pods run in, under the baseline Pod Security Standard; `locks_memory`: its pods add
    IPC_LOCK, and Azure Policy enforces the baseline there instead."""
    level = MEMORY_LOCKING_POD_SECURITY if locks_memory else TRAINING_POD_SECURITY
    return k8s.core.v1.Namespace(name, metadata={"name": namespace, "labels": {**(labels or {}), **level}}, opts=opts)


@dataclass(frozen=True)
class ClaimMount:
    """One claim a verification pod mounts, and where."""

    volume: str
    claim_name: pulumi.Input[str]
    mount_path: str


def verification_pod(
    name: str,
    *,
    pod_name: str,
    namespace: pulumi.Input[str],
    image: str,
    script: str,
    mounts: Sequence[ClaimMount],
    opts: pulumi.ResourceOptions,
    annotations: Mapping[str, str] | None = None,
    pull_always: bool = False,
) -> k8s.core.v1.Pod:
    """A restricted pod on the CPU pool that mounts the claims, runs `script`, then idles for `kubectl exec`."""
    container: dict[str, Any] = {
        "name": pod_name,
        "image": image,
        "command": ["sh", "-c", script],
        "volume_mounts": [{"name": m.volume, "mount_path": m.mount_path} for m in mounts],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
        "security_context": RESTRICTED_CONTAINER_SECURITY_CONTEXT,
    }
    if pull_always:
        container["image_pull_policy"] = "Always"
    metadata: k8s.meta.v1.ObjectMetaArgsDict = {"name": pod_name, "namespace": namespace, "labels": {"app": pod_name}}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return k8s.core.v1.Pod(
        name,
        metadata=metadata,
        spec={
            "node_selector": cpu_node_selector(),
            "restart_policy": "Never",
            "automount_service_account_token": False,
            "security_context": cast(k8s.core.v1.PodSecurityContextArgsDict, restricted_pod_security_context(NOBODY)),
            "containers": [cast(k8s.core.v1.ContainerArgsDict, container)],
            "volumes": [{"name": m.volume, "persistent_volume_claim": {"claim_name": m.claim_name}} for m in mounts],
        },
        opts=opts,
    )
