"""The scrapes of a served model: PodMonitors through which managed Prometheus reads its servers' vLLM metrics (the
leader's in a group) and its endpoint picker's, which the model's SLO alert, dashboard and KEDA triggers query."""

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..monitoring.dcgm_exporter import SCRAPE_LABEL_LIMITS
from .adapters import lora_series_drop
from .inference_pool import picker_labels
from .vllm_server import ModelPlacement, pool_selector


def scrape_spec(
    selector: Mapping[str, str], namespace: str, port: str, relabelings: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """A PodMonitor spec: /metrics on the named port of the selected pods in `namespace`, every 15 s, each sample
    through `relabelings` (metricRelabelings) when any."""
    endpoint: dict[str, Any] = {"port": port, "path": "/metrics", "interval": "15s"}
    if relabelings:
        endpoint["metricRelabelings"] = [dict(r) for r in relabelings]
    return {
        **SCRAPE_LABEL_LIMITS,
        "selector": {"matchLabels": selector},
        "namespaceSelector": {"matchNames": [namespace]},
        "podMetricsEndpoints": [endpoint],
    }


def model_pod_monitors(
    name: str,
    placement: ModelPlacement,
    picker: pulumi.Resource,
    cluster: pulumi.Resource,
    scrape_dependencies: Sequence[pulumi.Resource],
    in_cluster: pulumi.ResourceOptions,
) -> None:
    """The servers' PodMonitor `vllm-<model>` and the picker's `epp-<model>`; both wait for the cluster and
    `scrape_dependencies` (what installs the PodMonitor CRD), the picker's for its release too."""
    model, namespace = placement.model.name, placement.namespace
    monitors: list[tuple[str, str, dict[str, str], str, list[pulumi.Resource], list[dict[str, Any]]]] = [
        ("pod-monitor", f"vllm-{model}", pool_selector(placement.model), "http", [], lora_series_drop(placement.model)),
        # Every model's SLO reads its picker (model_dashboards.py caller_ttft_bound).
        ("picker-monitor", f"epp-{model}", picker_labels(model), "metrics", [picker], []),
    ]
    for suffix, object_name, selector, port, after, relabelings in monitors:
        k8s.apiextensions.CustomResource(
            f"{name}-{suffix}",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": object_name, "namespace": namespace, "labels": placement.labels},
            spec=scrape_spec(selector, namespace, port, relabelings),
            opts=pulumi.ResourceOptions.merge(
                in_cluster, pulumi.ResourceOptions(depends_on=[cluster, *after, *scrape_dependencies])
            ),
        )
