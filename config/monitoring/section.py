"""Monitoring section: registry, DCGM exporter, managed Prometheus, Grafana, alerts."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from ..base import ConfigModel
from ..errors import field_error
from ..types import Guid

EMAIL = re.compile(r"^[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")
Quantity = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi)?$"),
    Field(description="Kubernetes quantity: cores or millicores (500m) for CPU, Ki/Mi/Gi for memory"),
]


def _email(value: str) -> str:
    if not EMAIL.match(value):
        raise ValueError("must be an email address, e.g. gpu-oncall@example.com")
    return value


Email = Annotated[str, AfterValidator(_email)]


class RegistryConfig(ConfigModel):
    """Azure Container Registry (Premium) that serves the DCGM exporter image to the nodes."""

    name: str | None = Field(
        default=None,
        pattern=r"^[a-zA-Z0-9]{5,50}$",
        description="Globally unique, 5-50 letters or digits; defaults to 'acr' + the cluster name",
    )
    public_network_access: bool = Field(
        default=True, description="false: reachable only through a private endpoint in the private-endpoint subnet"
    )
    zone_redundancy: bool = Field(
        default=False, description="Replicate the registry across the region's zones (Premium); fixed at creation"
    )
    dcgm_cache_repository: str = Field(
        default="nvidia/k8s/dcgm-exporter",
        pattern=r"^[a-z0-9]+([._/-][a-z0-9]+)*$",
        description="Repository in the registry that caches nvcr.io/nvidia/k8s/dcgm-exporter",
    )


class ResourcesConfig(ConfigModel):
    """Requests and limits of the DCGM exporter container on every GPU node."""

    cpu_request: Quantity = Field(default="100m", description="CPU the scheduler reserves for the exporter")
    memory_request: Quantity = Field(default="256Mi", description="Memory the scheduler reserves for the exporter")
    cpu_limit: Quantity = Field(default="500m", description="CPU the exporter may use at most (throttled above)")
    memory_limit: Quantity = Field(default="512Mi", description="Memory the exporter may use (OOM-killed above)")


class DcgmExporterConfig(ConfigModel):
    """NVIDIA's DCGM exporter, one pod per GPU node, scraped by managed Prometheus."""

    # github.com/NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (2026-05-06): deployment/Chart.yaml version 4.8.2,
    # values.yaml image.tag 4.5.3-4.8.2-distroless.
    chart_version: str = Field(
        default="4.8.2",
        pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$",
        description="Pinned dcgm-exporter Helm chart version (quote it in YAML); imageTag must match it",
    )
    image_tag: str = Field(
        default="4.5.3-4.8.2-distroless",
        pattern=r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+\.[0-9]+\.[0-9]+-[a-z0-9.]+$",
        description="Pinned image tag <DCGM>-<exporter>-<base image>; <exporter> equals chartVersion",
    )
    scrape_interval_seconds: int = Field(
        default=30,
        ge=15,
        le=300,
        description="How often managed Prometheus scrapes DCGM: 15 s to 5 min; shorter costs more ingestion, longer "
        "blurs short GPU spikes",
    )
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig, description="The exporter's resources")

    @model_validator(mode="after")
    def _check_image_matches_chart(self) -> DcgmExporterConfig:
        # NVIDIA releases chart and image together: chart X ships image <DCGM>-X-<base>.
        exporter = self.image_tag.split("-")[1]
        if exporter != self.chart_version:
            raise field_error(
                "imageTag",
                self.image_tag,
                f"the exporter release of chart {self.chart_version}: <DCGM>-{self.chart_version}-<base image>",
            )
        return self


class GrafanaConfig(ConfigModel):
    """Azure Managed Grafana reading the Azure Monitor workspace."""

    name: str | None = Field(
        default=None,
        pattern=r"^[a-zA-Z][a-zA-Z0-9-]{0,21}[a-zA-Z0-9]$",
        description="2-23 letters, digits or dashes; defaults to 'grafana-' + the cluster name (truncated)",
    )
    admin_group_object_ids: list[Guid] = Field(
        default_factory=list, description="Entra ID groups made Grafana Admin; empty reuses cluster.entraId's groups"
    )
    zone_redundancy: bool = Field(
        default=False, description="Spread the Grafana instance across zones (costs more); fixed at creation"
    )
    public_network_access: bool = Field(
        default=True,
        description="false: Grafana turns off its public endpoint (reach it through a private endpoint you add)",
    )
    container_logs: bool = Field(
        default=False,
        description="Let Grafana read the Log Analytics workspace: every Grafana user, each team's members included, "
        "can then query every namespace's container logs (Grafana OSS has no data-source permissions)",
    )


class AlertThresholdsConfig(ConfigModel):
    """When the GPU alert rules fire; each fires after its condition holds for its minutes."""

    gpu_temperature_celsius: int = Field(
        default=85, ge=60, le=100, description="GPU temperature that alerts (data-center GPUs throttle in the 80s C)"
    )
    temperature_minutes: int = Field(default=5, ge=1, le=60, description="How long the temperature must hold")
    memory_used_percent: int = Field(
        default=95, ge=50, le=100, description="Share of GPU memory in use that warns of out-of-memory"
    )
    memory_minutes: int = Field(default=15, ge=1, le=240, description="How long memory use must hold")
    idle_utilization_percent: int = Field(
        default=5, ge=0, le=50, description="A GPU held by a pod below this utilisation counts as idle"
    )
    idle_minutes: int = Field(
        default=60,
        ge=10,
        le=1440,
        description="Averaging window of the idle-GPU alert: 10 min to a day (shorter flags jobs that are loading)",
    )
    not_reporting_minutes: int = Field(
        default=10,
        ge=5,
        le=60,
        description="A GPU node or exporter silent this long alerts; at least 5 min (scrapes run every 15-300 s)",
    )


class EmailReceiverConfig(ConfigModel):
    """One email address the action group notifies."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,127}$",
        description="Receiver name in the action group: 1-128 letters, digits, spaces, '_' or '-'",
    )
    email: Email = Field(description="Address the alerts go to")
    use_common_alert_schema: bool = Field(
        default=True, description="Send Azure Monitor's common alert schema (one format for every alert type)"
    )


class AlertsConfig(ConfigModel):
    """Prometheus alert rules on DCGM metrics and the action group they notify."""

    enabled: bool = Field(default=True, description="false keeps the rules but stops them from firing")
    action_group_short_name: str = Field(
        default="gpu-alerts",
        min_length=1,
        max_length=12,
        description="Short name shown in alert emails and SMS; Azure action groups allow 1-12 characters",
    )
    email_receivers: list[EmailReceiverConfig] = Field(
        default_factory=lambda: list[EmailReceiverConfig](), description="Who is emailed when a GPU alert fires"
    )
    thresholds: AlertThresholdsConfig = Field(
        default_factory=AlertThresholdsConfig, description="Alert thresholds and durations"
    )

    @model_validator(mode="after")
    def _check_unique_receivers(self) -> AlertsConfig:
        seen: set[str] = set()
        for i, receiver in enumerate(self.email_receivers):
            if receiver.name in seen:
                raise field_error(f"emailReceivers[{i}].name", receiver.name, "receiver names must be unique")
            seen.add(receiver.name)
        return self


class LogsConfig(ConfigModel):
    """Log Analytics workspace for Container Insights and Defender."""

    workspace_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{2,61}[A-Za-z0-9]$",
        description="Log Analytics workspace; defaults to 'log-' + the cluster name",
    )
    retention_in_days: int = Field(
        default=30, ge=30, le=730, description="Days logs are kept; Log Analytics takes 30-730 (interactive retention)"
    )
    container_log_interval: Literal["1m", "5m", "10m", "15m"] = Field(
        default="1m", description="Container Insights collection interval"
    )


class MonitoringConfig(ConfigModel):
    """Everything that observes the GPUs: registry, logs, metrics, dashboards, alerts."""

    registry: RegistryConfig = Field(
        default_factory=RegistryConfig, description="Container registry caching the DCGM exporter image"
    )
    logs: LogsConfig = Field(default_factory=LogsConfig, description="Log Analytics workspace")
    workspace_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,42}[A-Za-z0-9]$",
        description="Azure Monitor workspace (managed Prometheus); defaults to 'amw-' + the cluster name",
    )
    dcgm_exporter: DcgmExporterConfig = Field(
        default_factory=DcgmExporterConfig, description="NVIDIA DCGM exporter: chart, image, scrape interval"
    )
    grafana: GrafanaConfig = Field(default_factory=GrafanaConfig, description="Azure Managed Grafana")
    alerts: AlertsConfig = Field(default_factory=AlertsConfig, description="GPU alert rules and who they notify")


def derived_name(given: str | None, prefix: str, base: str, limit: int, alphanumeric: bool = False) -> str:
    """A configured name, or `prefix` + `base` cut to Azure's length limit when none is given."""
    if given:
        return given
    name = prefix + base
    if alphanumeric:
        name = re.sub(r"[^A-Za-z0-9]", "", name).lower()
    return name[:limit].rstrip("-")
