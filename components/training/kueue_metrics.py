"""Kueue's controller metrics into managed Prometheus: an azmonitoring.coreos.com ServiceMonitor.

The Kueue chart (kubernetes-sigs/kueue v0.19.2, charts/kueue) always creates the Service
`<release>-controller-manager-metrics-service` (templates/manager/auth_proxy_service.yaml: port `https` 8443,
labels `kueue.metricsService.labels` in templates/_helpers.tpl); its own ServiceMonitor (`enablePrometheus`,
templates/prometheus/monitor.yaml) is monitoring.coreos.com, which managed Prometheus ignores, so it stays off.
The endpoint is served over TLS with a self-signed certificate and answers only callers allowed `get` on the
non-resource URL /metrics (cmd/kueue/main.go: SecureServing, filters.WithAuthenticationAndAuthorization). The
add-on's scraper may (Azure/prometheus-collector v7.1.1-main-07-21-2026-39583fd5, addon-chart
templates/ama-metrics-clusterRole.yaml: nonResourceURLs /metrics get), so it presents its service account token,
as the chart's monitor does, and skips certificate verification like the chart's default tlsConfig.
"""

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .queues import KUEUE_NAMESPACE, KUEUE_RELEASE

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
METRICS_PORT = "https"
SCRAPE_JOB = "kueue"
"""The `job` of every Kueue target (the operator would name it after the Service)."""


def metrics_service_labels(release: str) -> dict[str, str]:
    """The labels the chart puts on the metrics Service and nowhere else (component metrics-service)."""
    return {
        "app.kubernetes.io/name": "kueue",
        "app.kubernetes.io/instance": release,
        "app.kubernetes.io/component": "metrics-service",
    }


def kueue_service_monitor_spec(interval_seconds: int) -> dict[str, Any]:
    return {
        "selector": {"matchLabels": metrics_service_labels(KUEUE_RELEASE)},
        "namespaceSelector": {"matchNames": [KUEUE_NAMESPACE]},
        "endpoints": [
            {
                "port": METRICS_PORT,
                "path": "/metrics",
                "scheme": "https",
                "interval": f"{interval_seconds}s",
                "bearerTokenFile": SERVICE_ACCOUNT_TOKEN,
                "tlsConfig": {"insecureSkipVerify": True},
                "relabelings": [{"action": "replace", "targetLabel": "job", "replacement": SCRAPE_JOB}],
            }
        ],
    }


def kueue_service_monitor(
    name: str,
    release: k8s.helm.v3.Release,
    interval_seconds: int,
    after: Sequence[pulumi.Resource],
    opts: pulumi.ResourceOptions,
) -> k8s.apiextensions.CustomResource:
    """The ServiceMonitor, in Kueue's namespace once the release made it, after the add-on's CRD (`after`)."""
    return k8s.apiextensions.CustomResource(
        f"{name}-kueue-service-monitor",
        api_version="azmonitoring.coreos.com/v1",
        kind="ServiceMonitor",
        metadata={"name": "kueue", "namespace": KUEUE_NAMESPACE},
        spec=kueue_service_monitor_spec(interval_seconds),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[release, *after])),
    )
