"""The upgrade stage of AksGpuPlatform: maintenance windows with freezes and the disruption budgets."""

from __future__ import annotations

from aks_gpu_platform.config.platform import PlatformConfig

from ..shared.context import ClusterHandle
from ..shared.placement import Placement
from .policy import UpgradePolicy


def build_upgrade(cfg: PlatformConfig, place: Placement, handle: ClusterHandle) -> UpgradePolicy:
    return UpgradePolicy(place.role("upgrade"), {"settings": cfg.upgrade, "cluster": handle}, place.child("upgrade"))
