"""Security section: baseline switches beyond the cluster's access settings."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from .base import ConfigModel
from .errors import field_error
from .types import ResourceId


class SecretsStoreConfig(ConfigModel):
    enabled: bool = Field(default=True, description="Secrets Store CSI driver with the Azure Key Vault provider")
    rotation: bool = Field(default=True, description="Re-read mounted Key Vault secrets so rotations reach pods")
    rotation_poll_interval: str = Field(
        default="2m", pattern=r"^[1-9][0-9]*[smh]$", description="How often mounted secrets are re-read, e.g. 2m"
    )


class DefenderConfig(ConfigModel):
    enabled: bool = Field(default=False, description="Microsoft Defender for Containers runtime protection")
    log_analytics_workspace_id: ResourceId | None = Field(
        default=None, description="Workspace Defender reports to (required when enabled)"
    )

    @model_validator(mode="after")
    def _check_workspace(self) -> DefenderConfig:
        if self.enabled and self.log_analytics_workspace_id is None:
            raise field_error(
                "logAnalyticsWorkspaceId", None, "Defender for Containers needs a Log Analytics workspace"
            )
        return self


class SecurityConfig(ConfigModel):
    azure_policy: bool = Field(default=True, description="Azure Policy add-on (Gatekeeper) audits and denies objects")
    secrets_store: SecretsStoreConfig = Field(default_factory=SecretsStoreConfig)
    defender: DefenderConfig = Field(default_factory=DefenderConfig)

    @property
    def defender_workspace_id(self) -> str | None:
        """The workspace to enable Defender with, or None when Defender is off."""
        return self.defender.log_analytics_workspace_id if self.defender.enabled else None

    def addon_profiles(self) -> dict[str, dict[str, Any]]:
        """AKS add-on profiles for these switches (keys as AKS names the add-ons)."""
        profiles: dict[str, dict[str, Any]] = {"azurepolicy": {"enabled": self.azure_policy}}
        store = self.secrets_store
        profiles["azureKeyvaultSecretsProvider"] = {
            "enabled": store.enabled,
            # AKS takes add-on settings as strings.
            "config": {
                "enableSecretRotation": str(store.rotation).lower(),
                "rotationPollInterval": store.rotation_poll_interval,
            }
            if store.enabled
            else None,
        }
        return profiles
