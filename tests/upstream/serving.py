"""What the serving path's upstream pieces make of our objects: the InferencePool the `inferencepool` chart renders
from a release's values, the flags its picker runs with, and the replica count the HPA behind a KEDA ScaledObject
asks for.

- The chart: kubernetes-sigs/gateway-api-inference-extension v1.5.0 (df9f8909), config/charts/inferencepool
  (templates/inferencepool.yaml, values.yaml) and config/charts/epplib (templates/_helpers.tpl: the picker is
  `<release name, lower-cased, truncated to 40>-epp`; templates/_deployment.yaml: the args it renders).
- The HPA: kubernetes/kubernetes v1.36 pkg/controller/podautoscaler/replica_calculator.go
  (GetExternalPerPodMetricReplicas for `AverageValue`, GetExternalMetricReplicas for `Value`, tolerance 0.1 from
  the controller's default `--horizontal-pod-autoscaler-tolerance`) and horizontal.go (the largest proposal of all
  metrics wins, then the min/max bounds). KEDA (kedacore/keda v2.20.2 pkg/scaling/resolver, pkg/scalers/
  prometheus_scaler.go) hands each trigger to the HPA as one External metric of the trigger's `metricType`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tests.upstream.scheduling import helm_merge

CHART_DEFAULTS: dict[str, Any] = {
    "inferenceExtension": {"extProcPort": 9002, "failureMode": "FailOpen", "flags": {"v": 1}, "replicas": 1},
    "inferencePool": {"targetPorts": [{"number": 8000}], "modelServerProtocol": "http"},
}
HPA_TOLERANCE = 0.1
CHART_PICKER_DEFAULTS: dict[str, Any] = {
    "inferenceExtension": {
        "image": {"registry": "registry.k8s.io", "repository": "gateway-api-inference-extension/epp", "tag": "v1.5.0"},
        "env": [],
    }
}
"""config/charts/inferencepool/values.yaml at v1.5.0: the picker image and its extra environment."""


def picker_name(release: str) -> str:
    return f"{release.lower().strip()[:40]}-epp"


def rendered_inference_pool(release: str, namespace: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """templates/inferencepool.yaml at v1.5.0 with our values merged over the chart's."""
    merged = helm_merge(CHART_DEFAULTS, values)
    pool, epp = merged["inferencePool"], merged["inferenceExtension"]
    protocol = {"grpc": "kubernetes.io/h2c", "http": "http"}.get(pool.get("modelServerProtocol", ""))
    spec: dict[str, Any] = {
        "targetPorts": [{"number": p["number"]} for p in pool["targetPorts"]],
        "selector": {
            "matchLabels": {k: str(v) for k, v in ((pool.get("modelServers") or {}).get("matchLabels") or {}).items()}
        },
        "endpointPickerRef": {
            "name": picker_name(release),
            "port": {"number": epp.get("extProcPort") or 9002},
            "failureMode": epp.get("failureMode") or "FailOpen",
        },
    }
    if protocol:
        spec["appProtocol"] = protocol
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": release, "namespace": namespace},
        "spec": spec,
    }


def picker_flags(values: Mapping[str, Any]) -> list[str]:
    """Flag names the picker container runs with (epplib templates/_deployment.yaml, the InferencePool mode)."""
    merged = helm_merge(CHART_DEFAULTS, values)
    epp = merged["inferenceExtension"]
    flags = ["pool-name", "pool-namespace", "pool-group", "zap-encoder", "config-file", "tracing"]
    if int(epp.get("replicas") or 1) > 1:
        flags.append("ha-enable-leader-election")
    flags += list((epp.get("flags") or {}).keys())
    if not (((epp.get("monitoring") or {}).get("prometheus") or {}).get("auth") or {}).get("enabled", True):
        flags.append("metrics-endpoint-auth")
    return flags


def picker_container(values: Mapping[str, Any]) -> dict[str, Any]:
    """The picker container's image and environment as epplib templates/_deployment.yaml renders them at v1.5.0:
    `registry/repository:tag`; NAMESPACE and POD_NAME from the downward API, then `inferenceExtension.env` as given
    (tracing off, no latency predictor)."""
    epp = helm_merge(CHART_PICKER_DEFAULTS, values)["inferenceExtension"]
    image = epp["image"]
    env = [
        {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        *(epp.get("env") or []),
    ]
    return {"name": "epp", "image": f"{image['registry']}/{image['repository']}:{image['tag']}", "env": env}


def hpa_proposal(metric_type: str, value: float, target: float, current: int) -> int:
    """Replicas the HPA proposes for one External metric at `current` replicas."""
    if metric_type == "AverageValue":
        ratio = value / (target * current)
        return current if abs(1.0 - ratio) <= HPA_TOLERANCE else math.ceil(value / target)
    if metric_type == "Value":
        ratio = value / target
        return current if abs(1.0 - ratio) <= HPA_TOLERANCE else math.ceil(ratio * current)
    raise ValueError(f"metricType {metric_type!r} is not an External metric type KEDA sends")


def desired_replicas(
    triggers: Sequence[tuple[str, float, float]], current: int, min_replicas: int, max_replicas: int
) -> int:
    """(metricType, value, threshold) per trigger -> the replica count the HPA sets."""
    proposal = max(hpa_proposal(kind, value, target, current) for kind, value, target in triggers)
    return max(min_replicas, min(max_replicas, proposal))
