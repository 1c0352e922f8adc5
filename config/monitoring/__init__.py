"""Monitoring: registry, DCGM exporter, managed Prometheus, Grafana, alerts (`monitoring`).

`aks_gpu_platform.config.monitoring.<name>` reads on from `section.py`, where the 0.2 module of the same path lived;
with a DeprecationWarning, until 0.4.0 (aks_gpu_platform/moved_modules.py).
"""

from typing import TYPE_CHECKING

from aks_gpu_platform.moved_modules import section_names

if TYPE_CHECKING:
    from .section import *  # noqa: F403

__getattr__ = section_names(__name__, "section")
