"""Security section: baseline switches beyond the cluster's access settings."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import Field

from .base import ConfigModel
from .types import ResourceId

T = TypeVar("T")


class SecretsStoreConfig(ConfigModel):
    """The AKS Key Vault secrets provider add-on (Secrets Store CSI driver)."""

    enabled: bool = Field(default=True, description="Secrets Store CSI driver with the Azure Key Vault provider")
    rotation: bool = Field(default=True, description="Re-read mounted Key Vault secrets so rotations reach pods")
    rotation_poll_interval: str = Field(
        default="2m", pattern=r"^[1-9][0-9]*[smh]$", description="How often mounted secrets are re-read, e.g. 2m"
    )


class DefenderConfig(ConfigModel):
    """Microsoft Defender for Containers on the cluster."""

    enabled: bool = Field(default=False, description="Microsoft Defender for Containers runtime protection")
    log_analytics_workspace_id: ResourceId | None = Field(
        default=None, description="Workspace Defender reports to (required when enabled)"
    )


class SecurityConfig(ConfigModel):
    """Security baseline switches beyond the cluster's access settings."""

    encryption_at_host: bool = Field(
        default=True,
        description="Every node pool encrypts temp disks, disk caches and ephemeral OS disks on the VM host; "
        "needs the subscription feature Microsoft.Compute/EncryptionAtHost; fixed at pool creation",
    )
    azure_policy: bool = Field(default=True, description="Azure Policy add-on (Gatekeeper) audits and denies objects")
    secrets_store: SecretsStoreConfig = Field(
        default_factory=SecretsStoreConfig, description="Key Vault secrets mounted into pods, with rotation"
    )
    defender: DefenderConfig = Field(default_factory=DefenderConfig, description="Defender for Containers")

    def defender_workspace_id(self, platform_workspace_id: T) -> str | T | None:
        """The workspace to enable Defender with (the platform's unless set), or None when Defender is off."""
        if not self.defender.enabled:
            return None
        return self.defender.log_analytics_workspace_id or platform_workspace_id

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
