"""The GPU scheduling rules, defined once: how GPU nodes are marked and how pods reach them.

Every object that must run on GPU nodes (device plugin, DCGM exporter, Lustre CSI node,
smoke test, samples) takes its node selector and tolerations from here.
"""

from __future__ import annotations

from typing import Any

GPU_POOL_LABEL_KEY = "pool"
GPU_POOL_LABEL_VALUE = "gpu"
GPU_POOL_NAME_LABEL_KEY = "gpu-pool"
GPU_MODEL_LABEL_KEY = "gpu-model"
GPU_TAINT_KEY = "sku"
GPU_TAINT_VALUE = "gpu"
GPU_TAINT_EFFECT = "NoSchedule"
GPU_TAINT = f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:{GPU_TAINT_EFFECT}"
GPU_RESOURCE = "nvidia.com/gpu"

CPU_POOL_LABEL_VALUE = "cpu"


def gpu_node_selector() -> dict[str, str]:
    """Selects every GPU node, in any GPU pool (the design notes' `pool: gpu`)."""
    return {GPU_POOL_LABEL_KEY: GPU_POOL_LABEL_VALUE}


def gpu_tolerations() -> list[dict[str, str]]:
    """Tolerates the taint every GPU pool carries."""
    return [{"key": GPU_TAINT_KEY, "operator": "Equal", "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT}]


def gpu_pod_scheduling() -> dict[str, Any]:
    """Pod-spec fragment (`nodeSelector` + `tolerations`) that puts a pod on GPU nodes."""
    return {"nodeSelector": gpu_node_selector(), "tolerations": gpu_tolerations()}


def gpu_pool_node_labels(pool_name: str, gpu_model: str | None = None) -> dict[str, str]:
    """Labels set through the pool, so scale-from-zero templates carry them too."""
    labels = {GPU_POOL_LABEL_KEY: GPU_POOL_LABEL_VALUE, GPU_POOL_NAME_LABEL_KEY: pool_name}
    if gpu_model:
        labels[GPU_MODEL_LABEL_KEY] = gpu_model
    return labels


def cpu_node_selector() -> dict[str, str]:
    """Selects the CPU user pool (monitoring, log collection, API servers, preprocessing)."""
    return {GPU_POOL_LABEL_KEY: CPU_POOL_LABEL_VALUE}


# AKS puts this taint on every Spot pool; pods must tolerate it explicitly to use Spot GPUs.
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"


def parse_taint(taint: str) -> dict[str, str]:
    """`key=value:Effect` (the AgentPool nodeTaints form) as a Kubernetes taint object."""
    key_value, effect = taint.rsplit(":", 1)
    key, _, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect}


def _tolerates(toleration: dict[str, str], taint: dict[str, str]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if not toleration.get("key"):
        return toleration.get("operator") == "Exists"
    if toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return toleration.get("value", "") == taint["value"]


def pod_fits_node(pod_spec: dict[str, Any], node_labels: dict[str, str], node_taints: list[str]) -> bool:
    """True when the pod's nodeSelector matches the labels and its tolerations cover every
    NoSchedule/NoExecute taint (the scheduler's NodeSelector and TaintToleration checks)."""
    selector: dict[str, str] = pod_spec.get("nodeSelector") or {}
    if any(node_labels.get(k) != v for k, v in selector.items()):
        return False
    tolerations: list[dict[str, str]] = pod_spec.get("tolerations") or []
    for taint in map(parse_taint, node_taints):
        if taint["effect"] == "PreferNoSchedule":
            continue
        if not any(_tolerates(t, taint) for t in tolerations):
            return False
    return True
