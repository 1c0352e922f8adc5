"""Every add-on the platform installs (components/shared/addon.py), and what the platform derives from them.

A new add-on is described next to its component (`components/<concern>/addons.py`) and listed in `ADDONS`
(docs/architecture.md, "Adding an add-on"). The order of `ADDONS` is the order of the namespace lists handed to the
pod security policy and to NVSentinel, so a new add-on goes at the end.
"""

from __future__ import annotations

from collections.abc import Sequence

from aks_gpu_platform.config.platform import PlatformConfig

from .gpu.addons import (
    AMD_GPU_OPERATOR,
    CERT_MANAGER,
    DEVICE_PLUGIN,
    DRA_DRIVER,
    GPU_OPERATOR,
    GPU_VALIDATION,
    NETWORK_OPERATOR,
    NVSENTINEL,
)
from .inference.addons import ISTIO, LWS, SERVED_MODELS
from .monitoring.addons import DCGM_EXPORTER
from .shared.addon import AddOn, Board, Chart
from .storage.addons import LUSTRE_CSI
from .training.addons import JOBSET, KUEUE

ADDONS: tuple[AddOn, ...] = (
    DEVICE_PLUGIN,
    GPU_OPERATOR,
    NETWORK_OPERATOR,
    DCGM_EXPORTER,
    GPU_VALIDATION,
    KUEUE,
    JOBSET,
    LUSTRE_CSI,
    NVSENTINEL,
    CERT_MANAGER,
    AMD_GPU_OPERATOR,
    DRA_DRIVER,
    ISTIO,
    LWS,
    SERVED_MODELS,
)


def _namespaces(addons: Sequence[AddOn], cfg: PlatformConfig, undrained_only: bool) -> tuple[str, ...]:
    chosen = (a.namespace_in(cfg) for a in addons if a.in_stack(cfg) and (a.undrained or not undrained_only))
    return tuple(dict.fromkeys(chosen))


def undrained_namespaces(cfg: PlatformConfig) -> tuple[str, ...]:
    """Namespaces whose pods GPU remediation never drains: the add-ons' that replace and check nodes."""
    return _namespaces(ADDONS, cfg, undrained_only=True)


def own_namespaces(cfg: PlatformConfig) -> tuple[str, ...]:
    """Every namespace the platform installs its own pods in: the pod security policy leaves each to the Pod Security
    level the stack gave it."""
    return _namespaces(ADDONS, cfg, undrained_only=False)


def platform_dashboards(cfg: PlatformConfig) -> list[Board]:
    """The dashboards of the platform's Grafana folder: every add-on's, as the stack configures it."""
    return [board for a in ADDONS if a.in_stack(cfg) for d in a.dashboards for board in d.boards(cfg)]


def charts() -> list[Chart]:
    """Every chart an add-on installs, at its pin."""
    return [chart for addon in ADDONS for chart in addon.charts]


def docker_hub_pulls() -> dict[str, tuple[str, ...]]:
    """Chart reference -> the images it pulls anonymously from Docker Hub at our values."""
    return {c.reference: c.readiness.docker_hub_images for c in charts() if c.readiness.docker_hub_images}
