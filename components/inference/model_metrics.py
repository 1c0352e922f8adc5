"""The scrapes of a served model: PodMonitors through which managed Prometheus reads its servers' vLLM metrics (the
leader's in a group) and its endpoint picker's, which the model's SLO alert, dashboard and KEDA triggers query."""

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ..monitoring.dcgm_exporter import SCRAPE_LABEL_LIMITS
from .inference_pool import picker_labels
from .vllm_server import ModelPlacement, pool_selector


def scrape_spec(selector: Mapping[str, str], namespace: str, port: str) -> dict[str, Any]:
    """A PodMonitor spec: /metrics on the named port of the selected pods in `namespace`, every 15 s."""
    return {
        **SCRAPE_LABEL_LIMITS,
        "selector": {"matchLabels": selector},
        "namespaceSelector": {"matchNames": [namespace]},
        "podMetricsEndpoints": [{"port": port, "path": "/metrics", "interval": "15s"}],
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
    monitors: list[tuple[str, str, dict[str, str], str, list[pulumi.Resource]]] = [
        ("pod-monitor", f"vllm-{model}", pool_selector(placement.model), "http", []),
        # Every model's SLO reads its picker (model_dashboards.py caller_ttft_bound).
        ("picker-monitor", f"epp-{model}", picker_labels(model), "metrics", [picker]),
    ]
    for suffix, object_name, selector, port, after in monitors:
        k8s.apiextensions.CustomResource(
            f"{name}-{suffix}",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": object_name, "namespace": namespace, "labels": placement.labels},
            spec=scrape_spec(selector, namespace, port),
            opts=pulumi.ResourceOptions.merge(
                in_cluster, pulumi.ResourceOptions(depends_on=[cluster, *after, *scrape_dependencies])
            ),
        )
