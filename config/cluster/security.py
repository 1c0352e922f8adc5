"""Security section: baseline switches beyond the cluster's access settings."""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import Field, model_validator

from ..base import ConfigModel
from ..errors import field_error
from ..types import DnsLabel, ResourceId

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


PolicyEffect = Literal["Audit", "Deny"]


class PodSecurityConfig(ConfigModel):
    """The pod security baseline initiative of the Azure Policy add-on, assigned to the cluster."""

    enabled: bool = Field(
        default=True,
        description="Assign 'Kubernetes cluster pod security baseline standards for Linux-based workloads' "
        "(privileged containers, host network, ports, PID/IPC, capabilities beyond the baseline, hostPath) to the "
        "cluster; needs azurePolicy",
    )
    effect: PolicyEffect | None = Field(
        default=None,
        description="Deny refuses a non-compliant pod, Audit only reports it; default Deny in prod, Audit elsewhere",
    )
    excluded_namespaces: list[DnsLabel] = Field(
        default_factory=list,
        description="Namespaces of your own node agents to leave out, beside Azure's and the platform's; "
        "never a team's",
    )

    def effect_for(self, environment: str) -> PolicyEffect:
        """The effect this stack assigns: the one set, else Deny in prod and Audit elsewhere."""
        return self.effect or ("Deny" if environment == "prod" else "Audit")


class SecurityConfig(ConfigModel):
    """Security baseline switches beyond the cluster's access settings."""

    encryption_at_host: bool = Field(
        default=True,
        description="Every node pool encrypts temp disks, disk caches and ephemeral OS disks on the VM host; "
        "needs the subscription feature Microsoft.Compute/EncryptionAtHost; fixed at pool creation",
    )
    azure_policy: bool = Field(default=True, description="Azure Policy add-on (Gatekeeper) audits and denies objects")
    pod_security: PodSecurityConfig = Field(
        default_factory=PodSecurityConfig,
        description="The Azure Policy pod security baseline initiative on the cluster: audit in dev, deny in prod",
    )
    secrets_store: SecretsStoreConfig = Field(
        default_factory=SecretsStoreConfig, description="Key Vault secrets mounted into pods, with rotation"
    )
    defender: DefenderConfig = Field(default_factory=DefenderConfig, description="Defender for Containers")

    @model_validator(mode="after")
    def _check_pod_security_needs_the_addon(self) -> SecurityConfig:
        if self.pod_security.enabled and not self.azure_policy:
            raise field_error(
                "podSecurity.enabled",
                True,
                "the initiative is enforced by the Azure Policy add-on: set azurePolicy true, or podSecurity.enabled "
                "false (then nothing refuses privileged pods at admission)",
            )
        return self

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
