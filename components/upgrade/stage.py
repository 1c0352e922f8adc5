"""The upgrade stage of AksGpuPlatform: maintenance windows with freezes and the disruption budgets."""

from __future__ import annotations

from aks_gpu_platform.config.upgrade.section import UpgradeConfig

from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .policy import UpgradePolicy


def build_upgrade(place: Placement, handle: ClusterHandle, upgrade: UpgradeConfig) -> UpgradePolicy:
    return UpgradePolicy(place.role("upgrade"), {"settings": upgrade, "cluster": handle}, place.child("upgrade"))
