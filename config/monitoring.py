"""Monitoring section: registry, DCGM exporter, managed Prometheus, Grafana, alerts."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from .base import ConfigModel
from .errors import field_error
from .types import Guid

EMAIL = re.compile(r"^[A-Za-z0-9._%+'-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$")
Quantity = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi)?$")]


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
    zone_redundancy: bool = False
    dcgm_cache_repository: str = Field(
        default="nvidia/k8s/dcgm-exporter",
        pattern=r"^[a-z0-9]+([._/-][a-z0-9]+)*$",
        description="Repository in the registry that caches nvcr.io/nvidia/k8s/dcgm-exporter",
    )


class ResourcesConfig(ConfigModel):
    cpu_request: Quantity = "100m"
    memory_request: Quantity = "256Mi"
    cpu_limit: Quantity = "500m"
    memory_limit: Quantity = "512Mi"


class DcgmExporterConfig(ConfigModel):
    """NVIDIA's DCGM exporter, one pod per GPU node, scraped by managed Prometheus."""

    # github.com/NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (2026-05-06): deployment/Chart.yaml version 4.8.2,
    # values.yaml image.tag 4.5.3-4.8.2-distroless.
    chart_version: str = Field(default="4.8.2", pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")
    image_tag: str = Field(
        default="4.5.3-4.8.2-distroless",
        pattern=r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9]+\.[0-9]+\.[0-9]+-[a-z0-9.]+$",
        description="Pinned image tag <DCGM>-<exporter>-<base image>; <exporter> equals chartVersion",
    )
    scrape_interval_seconds: int = Field(
        default=30, ge=15, le=300, description="15 s to 5 min; shorter costs more ingestion"
    )
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)

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
    name: str | None = Field(
        default=None,
        pattern=r"^[a-zA-Z][a-zA-Z0-9-]{0,21}[a-zA-Z0-9]$",
        description="2-23 letters, digits or dashes; defaults to 'grafana-' + the cluster name (truncated)",
    )
    admin_group_object_ids: list[Guid] = Field(
        default_factory=list, description="Entra ID groups made Grafana Admin; empty reuses cluster.entraId's groups"
    )
    zone_redundancy: bool = False
    public_network_access: bool = True


class AlertThresholdsConfig(ConfigModel):
    gpu_temperature_celsius: int = Field(default=85, ge=60, le=100)
    temperature_minutes: int = Field(default=5, ge=1, le=60)
    memory_used_percent: int = Field(default=95, ge=50, le=100)
    memory_minutes: int = Field(default=15, ge=1, le=240)
    idle_utilization_percent: int = Field(
        default=5, ge=0, le=50, description="A GPU held by a pod below this utilisation counts as idle"
    )
    idle_minutes: int = Field(default=60, ge=10, le=1440)
    not_reporting_minutes: int = Field(default=10, ge=5, le=60)


class EmailReceiverConfig(ConfigModel):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,127}$")
    email: Email
    use_common_alert_schema: bool = True


class AlertsConfig(ConfigModel):
    enabled: bool = Field(default=True, description="false keeps the rules but stops them from firing")
    action_group_short_name: str = Field(default="gpu-alerts", min_length=1, max_length=12)
    email_receivers: list[EmailReceiverConfig] = Field(default_factory=lambda: list[EmailReceiverConfig]())
    thresholds: AlertThresholdsConfig = Field(default_factory=AlertThresholdsConfig)

    @model_validator(mode="after")
    def _check_unique_receivers(self) -> AlertsConfig:
        seen: set[str] = set()
        for i, receiver in enumerate(self.email_receivers):
            if receiver.name in seen:
                raise field_error(f"emailReceivers[{i}].name", receiver.name, "receiver names must be unique")
            seen.add(receiver.name)
        return self


class LogsConfig(ConfigModel):
    workspace_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{2,61}[A-Za-z0-9]$",
        description="Log Analytics workspace; defaults to 'log-' + the cluster name",
    )
    retention_in_days: int = Field(default=30, ge=30, le=730)
    container_log_interval: Literal["1m", "5m", "10m", "15m"] = Field(
        default="1m", description="Container Insights collection interval"
    )


class MonitoringConfig(ConfigModel):
    registry: RegistryConfig = Field(default_factory=RegistryConfig)
    logs: LogsConfig = Field(default_factory=LogsConfig)
    workspace_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,42}[A-Za-z0-9]$",
        description="Azure Monitor workspace (managed Prometheus); defaults to 'amw-' + the cluster name",
    )
    dcgm_exporter: DcgmExporterConfig = Field(default_factory=DcgmExporterConfig)
    grafana: GrafanaConfig = Field(default_factory=GrafanaConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)


def derived_name(given: str | None, prefix: str, base: str, limit: int, alphanumeric: bool = False) -> str:
    """A configured name, or `prefix` + `base` cut to Azure's length limit when none is given."""
    if given:
        return given
    name = prefix + base
    if alphanumeric:
        name = re.sub(r"[^A-Za-z0-9]", "", name).lower()
    return name[:limit].rstrip("-")
