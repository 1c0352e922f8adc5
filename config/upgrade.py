"""Upgrade section: tier, support plan and channels the cluster is created with."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from .base import ConfigModel
from .errors import field_error

Tier = Literal["Free", "Standard", "Premium"]
SupportPlan = Literal["KubernetesOfficial", "AKSLongTermSupport"]
UpgradeChannel = Literal["none", "patch", "stable", "rapid", "node-image"]
NodeOsChannel = Literal["None", "Unmanaged", "NodeImage", "SecurityPatch"]


class UpgradeConfig(ConfigModel):
    tier: Tier = "Standard"
    support_plan: SupportPlan = "KubernetesOfficial"
    auto_upgrade_channel: UpgradeChannel = "patch"
    node_os_upgrade_channel: NodeOsChannel = "NodeImage"

    @model_validator(mode="after")
    def _check_lts(self) -> UpgradeConfig:
        if self.support_plan == "AKSLongTermSupport" and self.tier != "Premium":
            raise field_error("tier", self.tier, "AKSLongTermSupport requires tier Premium")
        return self

    @property
    def tracks_versions(self) -> bool:
        """True when Azure moves the Kubernetes version, so the program must not re-send it."""
        return self.auto_upgrade_channel != "none"
