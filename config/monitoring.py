"""Monitoring section: registry, DCGM exporter, managed Prometheus, Grafana, alerts."""

from __future__ import annotations

from .base import ConfigModel


class MonitoringConfig(ConfigModel):
    enabled: bool = True
