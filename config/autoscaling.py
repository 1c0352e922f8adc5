"""Autoscaling section: KEDA add-on and GPU-utilisation scaling targets."""

from __future__ import annotations

from .base import ConfigModel


class AutoscalingConfig(ConfigModel):
    keda_enabled: bool = True
