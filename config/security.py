"""Security section: baseline switches beyond the cluster's access settings."""

from __future__ import annotations

from .base import ConfigModel


class SecurityConfig(ConfigModel):
    azure_policy: bool = True
